#include "dispatch.hpp"

#include <algorithm>
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

size_t nt_threshold_bytes(int nthreads) {
    // Measured with the benchmark suite on a 32 MiB-L3 AMD EPYC (2 cores),
    // calls back to back on the same buffers, forcing one store kind or the
    // other. While the bytes an execute touches stay in the L3, regular
    // stores keep dst there; non-temporal stores send it to memory but skip
    // the read-for-ownership. One core draws less from the L3 than two, so
    // the crossover depends on the team: at 1 thread non-temporal stores win
    // from about 20-25 MB (S7 bf16, 25 MB: 78 vs 50 GB/s; S8 bf16, 13 MB:
    // 38 vs 72), at 2 threads only from about 40-50 MB (S5 f32, 34 MB: 80 vs
    // 124 GB/s; S7 f32, 50 MB: 68 vs 44; S2, 100-200 MB: 1.3-1.4x).
    static const size_t llc = llc_bytes();
    return nthreads <= 1 ? llc / 5 * 3 : llc / 5 * 6;
}

size_t select_touched_bytes(const select_nd &p) {
    if (p.nelems() == 0)
        return 0;
    size_t bytes[n_operands];
    for (int i = 0; i < n_operands; ++i) {
        int64_t elems = 1;
        for (int d = 0; d < p.ndims; ++d)
            if (p.strides[i][d] != 0)
                elems *= p.dims[d];
        bytes[i] = static_cast<size_t>(elems)
                   * static_cast<size_t>(i == op_cond ? 1 : p.elem_size);
    }
    int inner = p.ndims - 1; // innermost dim where dst moves
    while (inner >= 0 && p.dims[inner] == 1)
        --inner;
    const bool cond_per_row = inner >= 0 && p.strides[op_cond][inner] == 0;
    const size_t srcs = cond_per_row ? std::max(bytes[op_src0], bytes[op_src1])
                                     : bytes[op_src0] + bytes[op_src1];
    return bytes[op_cond] + srcs + bytes[op_dst];
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
    plan.working_set = working_set;
    if (working_set >= nt_threshold_bytes(1)) {
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
