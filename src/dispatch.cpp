#include "dispatch.hpp"

#include <cstdio>

#include <unistd.h>

#include "broadcast.hpp"
#include "cpu_isa.hpp"
#include "kernels/jit_select.hpp"

namespace selgraph {
namespace impl {

std::string select_plan::kernel_str() const {
    if (!kernel)
        return "ref_nd";
    return kernel_nt ? kernel->name() + "|" + kernel_nt->name()
                     : kernel->name();
}

namespace {

// The last-level cache this CPU sees. sysfs first: in a VM, sysconf may
// report the host's L3 summed over every die (320 MiB seen where the guest
// shares one 32 MiB L3).
size_t llc_bytes() {
    if (FILE *f = std::fopen("/sys/devices/system/cpu/cpu0/cache/index3/size",
                             "r")) {
        unsigned long v = 0;
        char unit = 0;
        const int got = std::fscanf(f, "%lu%c", &v, &unit);
        std::fclose(f);
        if (got >= 1 && v > 0)
            return unit == 'M' ? v << 20 : unit == 'K' ? v << 10 : v;
    }
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return l3 > 0 ? static_cast<size_t>(l3) : size_t(32) << 20;
}

} // namespace

size_t nt_threshold_bytes() {
    // Measured on a 32 MiB-L3 AMD EPYC (f32 and bf16, no broadcast): regular
    // stores win up to ~7 MB of working set, non-temporal stores from ~14 MB
    // (1.1-1.9x at 14-220 MB, as stores then skip the read-for-ownership).
    static const size_t bytes = llc_bytes() / 3;
    return bytes;
}

select_plan plan_select(const select_nd &p, size_t working_set) {
    select_plan plan;
    plan.folded = fold_select(p);
    const select_folded &f = plan.folded;
    const kernel_isa isa = max_kernel_isa();
    const bool jit_able = isa != kernel_isa::ref
                          && f.mode[op_cond] != inner_mode::strided
                          && f.mode[op_src0] != inner_mode::strided
                          && f.mode[op_src1] != inner_mode::strided
                          && f.mode[op_dst] == inner_mode::vector;
    if (!jit_able) {
        plan.cache_hit = true;
        return plan;
    }

    kernel_key key {};
    key.isa = isa;
    key.elem_size = static_cast<uint8_t>(f.elem_size);
    key.cond_scalar = f.mode[op_cond] == inner_mode::scalar;
    key.src0_scalar = f.mode[op_src0] == inner_mode::scalar;
    key.src1_scalar = f.mode[op_src1] == inner_mode::scalar;
    // select(c, a, b) == select(!c, b, a): with a vector cond, keep a
    // scalar source in the src_1 slot, halving the variants.
    if (!key.cond_scalar && key.src0_scalar && !key.src1_scalar) {
        plan.swap = true;
        key.invert_cond = 1;
        key.src0_scalar = 0;
        key.src1_scalar = 1;
    }
    key.unroll = 4;

    auto &cache = kernel_cache::global();
    bool hit = true;
    auto get = [&](const kernel_key &k) {
        bool h = false;
        kernel_ptr kp = cache.get_or_create(
                k, [&] { return create_jit_select_kernel(k); }, &h);
        hit = hit && h;
        return kp;
    };
    plan.kernel = get(key);
    if (working_set >= nt_threshold_bytes()) {
        kernel_key knt = key;
        knt.nt_stores = 1;
        plan.kernel_nt = get(knt);
    }
    plan.isa = isa;
    plan.cache_hit = hit;
    return plan;
}

} // namespace impl
} // namespace selgraph
