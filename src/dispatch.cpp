#include "dispatch.hpp"

#include <algorithm>
#include "broadcast.hpp"
#include "cpu_isa.hpp"
#include "kernels/jit_select.hpp"

namespace selgraph {
namespace impl {

namespace {

// "+c:<name>" ... "+d:<name>" for the plan's transposing kernels, with
// `dst_tr` as dst's.
std::string transposes_str(const select_plan &plan,
                           const transpose_kernel *dst_tr) {
    const char *names[n_operands] = { "c", "a", "b", "d" };
    std::string s;
    for (int i = 0; i < n_operands; ++i) {
        const transpose_kernel *t = i == op_dst ? dst_tr : plan.transpose[i];
        if (t)
            s += std::string("+") + names[i] + ":" + t->name();
    }
    return s;
}

} // namespace

std::string select_plan::kernel_str() const {
    if (!kernel)
        return "ref_nd";
    std::string s = kernel_nt ? kernel->name() + "|" + kernel_nt->name()
                              : kernel->name();
    s += transposes_str(*this, transpose[op_dst]);
    if (transpose_dst_nt)
        s += "|" + transpose_dst_nt->name();
    return s;
}

std::string select_plan::kernel_str(const executed &e) const {
    if (!e.kernel)
        return "ref_nd";
    return e.kernel->name()
           + transposes_str(*this, e.nt && transpose_dst_nt
                                           ? transpose_dst_nt
                                           : transpose[op_dst]);
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
                   * static_cast<size_t>(operand_bytes(i, p.elem_size));
    }
    int inner = p.ndims - 1; // innermost dim where dst moves
    while (inner >= 0 && p.dims[inner] == 1)
        --inner;
    const bool cond_per_row = inner >= 0 && p.strides[op_cond][inner] == 0;
    const size_t srcs = cond_per_row ? std::max(bytes[op_src0], bytes[op_src1])
                                     : bytes[op_src0] + bytes[op_src1];
    return bytes[op_cond] + srcs + bytes[op_dst];
}

kernel_isa transpose_kernel_isa(kernel_isa isa, int operand, int elem_bytes,
                                bool may_stream, bool zen4) {
    if (zen4 && isa == kernel_isa::avx512_core && operand != op_dst
        && !may_stream && (elem_bytes == 2 || elem_bytes == 4))
        return kernel_isa::avx2;
    return isa;
}

int transpose_packed_lines(kernel_isa isa, int elem_bytes, bool nt, bool zen4) {
    if (isa != kernel_isa::avx512_core)
        return 8;
    if (zen4)
        return elem_bytes == 1 ? 5 : 6;
    if (elem_bytes <= 2)
        return 7;
    if (nt)
        return elem_bytes == 4 ? 5 : 2;
    return 8;
}

select_plan plan_select(const select_nd &p, size_t working_set) {
    select_plan plan;
    plan.folded = fold_select(p);
    const select_folded &f = plan.folded;
    const kernel_isa isa = max_kernel_isa();
    // Transposed operands reach the row kernel as vectors of a tile.
    const bool jit_able = isa != kernel_isa::ref
                          && f.mode[op_cond] != inner_mode::strided
                          && f.mode[op_src0] != inner_mode::strided
                          && f.mode[op_src1] != inner_mode::strided
                          && f.mode[op_dst] != inner_mode::strided;
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
    const nt_policy policy = nt_stores_policy();
    const bool may_stream = tiles_may_stream(f);
    const bool zen4 = cpu_is_amd_zen4();
    auto tr_key = [zen4](kernel_isa tisa, int w, bool nt) {
        return transpose_key {
            tisa, static_cast<uint8_t>(w), static_cast<uint8_t>(nt ? 1 : 0),
            static_cast<uint8_t>(transpose_packed_lines(tisa, w, nt, zen4))
        };
    };
    for (int i = 0; i < n_operands; ++i)
        if (f.mode[i] == inner_mode::transposed) {
            const int w = operand_bytes(i, f.elem_size);
            plan.transpose[i] = get_transpose_kernel(
                    tr_key(transpose_kernel_isa(isa, i, w, may_stream, zen4), w,
                           false));
        }
    if (policy == nt_policy::always
        || (policy == nt_policy::auto_
            && working_set >= nt_candidate_bytes())) {
        // A transposed dst is stored by its transpose from the tile's
        // scratch, where the row kernel's stores stay in cache: the
        // transpose has the nt variant.
        if (f.mode[op_dst] == inner_mode::transposed) {
            plan.transpose_dst_nt =
                    get_transpose_kernel(tr_key(isa, f.elem_size, true));
        } else {
            kernel_key knt = key;
            knt.nt_stores = 1;
            plan.kernel_nt = get(knt);
        }
        // auto: measured per partition; always: no tuner, nt stores.
        if (policy == nt_policy::auto_)
            plan.tuner = std::make_shared<store_tuner>();
    }
    plan.isa = isa;
    plan.cache_hit = hit;
    return plan;
}

} // namespace impl
} // namespace selgraph
