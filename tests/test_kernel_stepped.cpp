// The kernels that read src_0, or write dst, with a step along the row
// (kernel_key::src0_step and dst_step, kernels/jit_select_stepped.cpp), bit
// for bit against ref_select, dst's gaps unchanged: through the kernel ABI
// inside guard pages, every
// element size, steps on both sides of the vector path's bounds, every row
// length up to two vector steps and some longer, a per-row and a 0-D cond,
// both cond senses; then through plan_select, inputs with a step staged by
// such a copy (docs/broadcast-folding.md), and the layouts that still run
// the reference kernel.
#include "kernel_test_utils.hpp"

namespace selgraph_test {
namespace {

using kernel_stepped = isa_test;

/// One call: rows of n elements, src_0's `key.src0_step` elements apart
/// (or dst's `key.dst_step`), cond and src_1 one element per row (row
/// strides in bytes; 0: the same element for every row).
struct stepped_case : abi_case {
    /// The step of operand `op` along the row (1: dense).
    int64_t step(int op) const {
        return op == si::op_src0 && key.src0_step ? key.src0_step
               : op == si::op_dst && key.dst_step ? key.dst_step
                                                  : 1;
    }
    /// Bytes from an operand's first element to just past its last.
    size_t bytes(int op) const {
        const size_t last = op == si::op_cond ? 1
                            : op == si::op_src1
                                    ? w()
                                    : ((n - 1) * step(op) + 1) * w();
        return (rows - 1) * static_cast<size_t>(stride[op]) + last;
    }
    /// abi_case's [rows, n] with the steps along the row.
    si::select_nd nd() const {
        si::select_nd p = abi_case::nd();
        p.strides[key.invert_cond ? si::op_src1 : si::op_src0][1] =
                step(si::op_src0);
        p.strides[si::op_dst][1] = step(si::op_dst);
        return p;
    }
};

si::kernel_key stepped_key(si::kernel_isa isa, int w, int step, int inv,
                           bool scatter = false) {
    si::kernel_key k = make_key(isa, w, 1, inv, 0, 1, 0, 1);
    (scatter ? k.dst_step : k.src0_step) = static_cast<uint8_t>(step);
    return k;
}

TEST_P(kernel_stepped, KernelAbiEveryStepEveryTail) {
    if (!jit())
        GTEST_SKIP() << "no JIT kernels for the reference ISA";
    auto &g = rng();
    int fails = 0;
    // The vector path runs steps up to its lanes per vector (32, 16 or 8
    // with AVX-512, 8 or 4 with AVX2) and 64 bytes; 1-element moves
    // beyond. Both directions: src_0 with the step, and dst (AVX2 moves
    // its elements one at a time).
    const int steps[] = {
        2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 255
    };
    for (bool scatter : { false, true })
        for (int w : { 1, 2, 4, 8 })
            for (int step : steps)
                for (int inv : { 0, 1 }) {
                    const si::kernel_key key =
                            stepped_key(kisa(), w, step, inv, scatter);
                    ASSERT_TRUE(si::stepped_supported(key))
                            << si::kernel_name(key);
                    const auto kern = si::create_jit_select_kernel(key);
                    ASSERT_EQ(kern->name(), si::kernel_name(key));
                    // Every length up to two steps of 16 units and one more,
                    // then longer rows, for the vector path's steps; a few
                    // lengths for the steps moved an element at a time.
                    std::vector<uint64_t> ns;
                    if (step <= 17) {
                        for (uint64_t n = 1; n <= 34; ++n)
                            ns.push_back(n);
                        for (uint64_t n : { 47, 63, 64, 65, 66, 255 })
                            ns.push_back(n);
                        if (step <= 4)
                            ns.push_back(1000);
                    } else {
                        ns = { 1, 2, 3, 16, 17, 33, 34 };
                    }
                    const size_t cap =
                            3
                            * ((ns.back() + 4) * static_cast<size_t>(step) + 64)
                            * static_cast<size_t>(w);
                    guard_set gs(cap);
                    ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
                    for (uint64_t n : ns)
                        for (bool at_end : { true, false })
                            for (bool per_row : { true, false }) {
                                stepped_case c;
                                c.key = key;
                                c.n = n;
                                c.rows = 3;
                                // Rows apart by a few elements more than they
                                // span; cond per row (or one for all), src_1
                                // one element per row.
                                c.stride[0] = per_row ? 1 : 0;
                                c.stride[2] = per_row ? w : 0;
                                for (int op : { 1, 3 })
                                    c.stride[op] = static_cast<int64_t>(
                                            ((n - 1) * c.step(op) + 1 + 3) * w);
                                const void *ptr[4];
                                for (int op = 0; op < 4; ++op)
                                    ptr[op] = gs.place(op, c.bytes(op), at_end);
                                // Random bytes in each operand's span
                                // (dst's gaps too).
                                fill_cond(const_cast<void *>(ptr[0]),
                                          c.bytes(0), g);
                                for (int op = 1; op < 4; ++op)
                                    fill_bytes(const_cast<void *>(ptr[op]),
                                               c.bytes(op), g);
                                const auto want = transposed_want(c, ptr);
                                const si::select_call_args a =
                                        c.args(ptr[0], ptr[1], ptr[2],
                                               const_cast<void *>(ptr[3]));
                                kern->fn()(&a);
                                KT_EXPECT(fails,
                                          bytes_equal(ptr[3], want.data(),
                                                      want.size(), w),
                                          c.str()
                                                  + (at_end ? " (at the end "
                                                              "guard)"
                                                            : " (at the start "
                                                              "guard)"));
                            }
                }
}

TEST_P(kernel_stepped, KeysOutsideTheKernelAreRejected) {
    if (!jit())
        GTEST_SKIP() << "no JIT kernels for the reference ISA";
    // A vector cond, a vector src_1, nt stores, another unroll: no kernel.
    si::kernel_key k = stepped_key(kisa(), 4, 2, 0);
    EXPECT_TRUE(si::stepped_supported(k));
    for (int field = 0; field < 4; ++field) {
        si::kernel_key b = k;
        if (field == 0)
            b.cond_scalar = 0;
        else if (field == 1)
            b.src1_scalar = 0;
        else if (field == 2)
            b.nt_stores = 1;
        else
            b.unroll = 4;
        EXPECT_FALSE(si::stepped_supported(b)) << field;
        try {
            (void)si::create_jit_select_kernel(b);
            ADD_FAILURE() << "no error for " << si::kernel_name(b);
        } catch (const sg::error &e) {
            EXPECT_EQ(e.status, sg::status::unimplemented);
        }
    }
    si::kernel_key one = k;
    one.src0_step = 1;
    EXPECT_FALSE(si::stepped_supported(one));
}

} // namespace

SELGRAPH_INSTANTIATE_PER_JIT_ISA(kernel_stepped);

} // namespace selgraph_test
