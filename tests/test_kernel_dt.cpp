// The kernels that write a transposed dst themselves
// (kernel_key::dst_transposed, kernels/jit_select_dt.cpp): their keys and
// refusals, direct calls through the kernel ABI inside guard pages (row and
// column counts around the 16 x 16 blocks of AVX-512's 4-byte elements, the
// 32 x 32 of 2-byte ones and the 16 x 8 of AVX2's 4-byte ones, every tail
// length of them, odd row tails, padded and broadcast rows, inverted cond, a
// per-row src_1, both store kinds, with and without the rows' prefetch, rows
// long enough for its full distance), bit for bit against impl::ref_select, the
// callee-saved registers, and which plans use them.
#include <xbyak/xbyak.h>

#include "kernel_test_utils.hpp"

namespace selgraph_test {
namespace {

using kernel_dt = isa_test;

si::kernel_key dt_key(si::kernel_isa isa, int w, int inv, int bs, int nt,
                      int pf = 0) {
    si::kernel_key k = make_key(isa, w, 0, inv, 0, bs, nt, 1);
    k.unroll = 0;
    k.dst_transposed = 1;
    k.dt_prefetch = static_cast<uint8_t>(pf);
    return k;
}

/// The element sizes with a kernel on either ISA: 4 and 2.
std::vector<int> dt_widths(si::kernel_isa) {
    return { 4, 2 };
}

/// Every key of the ISA's block kernels: each element size, inverted cond
/// or not, src_1 a vector or one element per row, both store kinds, with
/// and without the rows' prefetch.
std::vector<si::kernel_key> all_dt_keys(si::kernel_isa isa) {
    std::vector<si::kernel_key> keys;
    for (int w : dt_widths(isa))
        for (int inv = 0; inv < 2; ++inv)
            for (int bs = 0; bs < 2; ++bs)
                for (int nt = 0; nt < 2; ++nt)
                    for (int pf = 0; pf < 2; ++pf)
                        keys.push_back(dt_key(isa, w, inv, bs, nt, pf));
    return keys;
}

/// One direct call: `rows` x `cols`, input row strides in bytes (0: one
/// row for all), dst element (r, c) at c * dst_ld + r * w bytes, w the
/// key's element bytes.
struct dt_case {
    si::kernel_key key;
    int64_t rows = 1, cols = 1;
    int64_t stride[3] = {}; // cond, src_0, src_1 (bytes between rows)
    int64_t dst_ld = 4;     // bytes between dst's columns

    int w() const { return key.elem_size; }
    bool b_scalar() const { return key.src1_scalar != 0; }
    size_t bytes(int op) const {
        if (op == si::op_dst)
            return static_cast<size_t>((cols - 1) * dst_ld + rows * w());
        const int64_t row = op == si::op_cond                 ? cols
                            : op == si::op_src1 && b_scalar() ? w()
                                                              : cols * w();
        return static_cast<size_t>((rows - 1) * stride[op] + row);
    }
    /// The problem as ref_select sees it, element strides: [rows, cols];
    /// with invert_cond the kernel's src_0 is the nd's src_1.
    si::select_nd nd() const {
        si::select_nd p;
        p.ndims = 2;
        p.dims[0] = rows;
        p.dims[1] = cols;
        p.elem_size = w();
        const int a = key.invert_cond ? si::op_src1 : si::op_src0;
        const int b = key.invert_cond ? si::op_src0 : si::op_src1;
        p.strides[si::op_cond][0] = stride[0];
        p.strides[si::op_cond][1] = 1;
        p.strides[a][0] = stride[1] / w();
        p.strides[a][1] = 1;
        p.strides[b][0] = stride[2] / w();
        p.strides[b][1] = b_scalar() ? 0 : 1;
        p.strides[si::op_dst][0] = 1;
        p.strides[si::op_dst][1] = dst_ld / w();
        return p;
    }
    std::string str() const {
        std::ostringstream os;
        os << si::kernel_name(key) << " rows=" << rows << " cols=" << cols
           << " strides(bytes)=" << stride[0] << "," << stride[1] << ","
           << stride[2] << " dst_ld=" << dst_ld;
        return os.str();
    }
};

si::select_call_args dt_args(const dt_case &c, const void *const *ptr) {
    return call_args(ptr, c.cols, c.rows, c.stride[0], c.stride[1], c.stride[2],
                     c.dst_ld);
}

TEST_P(kernel_dt, KeysAndRefusals) {
    ASSERT_TRUE(jit()) << "instantiated for the JIT ISAs only";
    for (const si::kernel_key &k : all_dt_keys(kisa())) {
        EXPECT_TRUE(si::dst_transposed_supported(k)) << si::kernel_name(k);
        const auto kern = si::create_jit_select_kernel(k);
        ASSERT_TRUE(kern);
        EXPECT_TRUE(kern->key() == k);
        EXPECT_EQ(kern->name(), si::kernel_name(k));
    }
    si::kernel_key ex = dt_key(si::kernel_isa::avx512_core, 4, 0, 0, 1);
    EXPECT_EQ(si::kernel_name(ex), "avx512_core_e4_cv_av_bv_dt_nt");
    EXPECT_EQ(
            si::kernel_name(dt_key(si::kernel_isa::avx512_core, 2, 0, 1, 0, 1)),
            "avx512_core_e2_cv_av_bs_dt_pf");
    // A dt key differs from the row kernel's of the same roles, and from
    // its prefetching variant (which the hash tells apart too).
    si::kernel_key row = ex;
    row.dst_transposed = 0;
    EXPECT_FALSE(row == ex);
    si::kernel_key pf = ex;
    pf.dt_prefetch = 1;
    EXPECT_FALSE(pf == ex);
    EXPECT_NE(si::kernel_key_hash()(pf), si::kernel_key_hash()(ex));
    // No kernel: other element sizes, a scalar cond or src_0.
    std::vector<si::kernel_key> bad;
    for (int w : { 1, 8 })
        bad.push_back(dt_key(kisa(), w, 0, 0, 0));
    si::kernel_key cs = dt_key(kisa(), 4, 0, 0, 0);
    cs.cond_scalar = 1;
    bad.push_back(cs);
    si::kernel_key as = dt_key(kisa(), 4, 0, 1, 0);
    as.src0_scalar = 1;
    bad.push_back(as);
    // The prefetch is the blocks', AVX-512's packed kernels' and AVX2's
    // interleave's only: not on AVX2's packed dst of a few lines (nor on a
    // row kernel's, below).
    si::kernel_key packed_pf = dt_key(kisa(), 4, 0, 0, 0, 1);
    packed_pf.dt_cols = 3;
    si::kernel_key rows_pf = dt_key(kisa(), 4, 0, 0, 0, 1);
    rows_pf.dt_rows = 3;
    EXPECT_TRUE(si::dst_transposed_supported(rows_pf))
            << si::kernel_name(rows_pf);
    EXPECT_EQ(si::dst_transposed_supported(packed_pf),
              kisa() == si::kernel_isa::avx512_core)
            << si::kernel_name(packed_pf);
    if (kisa() == si::kernel_isa::avx2)
        bad.push_back(packed_pf);
    si::kernel_key row_pf = make_key(kisa(), 4, 0, 0, 0, 0, 0, 1);
    row_pf.dt_prefetch = 1;
    try {
        (void)si::create_jit_select_kernel(row_pf);
        ADD_FAILURE() << "a row kernel was made with dt_prefetch";
    } catch (const sg::error &e) {
        EXPECT_EQ(e.status, sg::status::unimplemented) << e.what();
    }
    for (const auto &k : bad) {
        EXPECT_FALSE(si::dst_transposed_supported(k)) << si::kernel_name(k);
        try {
            (void)si::create_jit_select_kernel(k);
            ADD_FAILURE() << "a kernel was made for " << si::kernel_name(k);
        } catch (const sg::error &e) {
            EXPECT_EQ(e.status, sg::status::unimplemented) << e.what();
        }
    }
}

TEST_P(kernel_dt, BitExactAgainstGuards) {
    auto &g = rng();
    int fails = 0;
    // Around the blocks (16 rows of 4-byte elements, 32 of 2-byte ones; 16
    // or 8 columns of 4-byte elements, 32 of 2-byte ones): tail lengths of
    // rows and columns below 10 and around each block size, and for 2-byte
    // elements every one.
    const std::vector<int64_t> counts = { 1,  2,  3,  4,  5,  6,  7,
                                          8,  9,  12, 13, 14, 15, 16,
                                          17, 23, 24, 31, 32, 33, 64 };
    std::vector<int64_t> counts2;
    for (int64_t r = 1; r <= 35; ++r)
        counts2.push_back(r);
    for (int64_t r : { 47, 63, 64, 65 })
        counts2.push_back(r);
    std::vector<int64_t> col_counts2;
    for (int64_t c = 1; c <= 33; ++c)
        col_counts2.push_back(c);
    for (int64_t c : { 47, 63, 64 })
        col_counts2.push_back(c);
    // Rows longer than the prefetch distance (128 columns) past a block,
    // which is cut short only near the rows' end.
    const std::vector<int64_t> long_rows = { 1, 17, 33, 64 };
    const std::vector<int64_t> long_cols = { 200, 301 };
    const int64_t max_pad = 7;
    guard_set gs(static_cast<size_t>((65 + max_pad) * (301 + 32) * 4));
    ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
    for (const si::kernel_key &k : all_dt_keys(kisa())) {
        const int w = k.elem_size;
        const bool bs = k.src1_scalar != 0;
        const bool nt = k.nt_stores != 0;
        const auto kern = si::create_jit_select_kernel(k);
        std::vector<std::pair<int64_t, int64_t>> shapes;
        if (w == 2) {
            // Every row tail by a few column counts, every
            // column tail by a few row counts.
            for (int64_t rows : counts2)
                for (int64_t cols : { 1, 16, 17, 31, 33, 64 })
                    shapes.emplace_back(rows, cols);
            for (int64_t rows : { 1, 16, 17, 31, 33, 65 })
                for (int64_t cols : col_counts2)
                    shapes.emplace_back(rows, cols);
        } else {
            for (int64_t rows : counts)
                for (int64_t cols : counts)
                    shapes.emplace_back(rows, cols);
        }
        for (int64_t rows : long_rows)
            for (int64_t cols : long_cols)
                shapes.emplace_back(rows, cols);
        for (const auto &[rows, cols] : shapes) {
            dt_case c;
            c.key = k;
            c.rows = rows;
            c.cols = cols;
            // Padded rows, or one row for all (a row
            // vector).
            const uint64_t r = g();
            c.stride[0] = r % 5 == 0 ? 0 : cols + int64_t(r % 8);
            c.stride[1] =
                    (r >> 3) % 5 == 0 ? 0 : (cols + int64_t(r >> 6) % 8) * w;
            c.stride[2] = bs ? ((r >> 9) % 2 ? w : 0)
                          : (r >> 9) % 5 == 0
                                  ? 0
                                  : (cols + int64_t(r >> 12) % 8) * w;
            // The nt variant's dst columns are whole lines
            // apart and dst starts one (its contract).
            c.dst_ld =
                    nt ? (rows * w + 63) / 64 * 64 + int64_t(r >> 15) % 2 * 64
                       : (rows + int64_t(r >> 15) % 8) * w;
            for (bool at_end : { true, false })
                KT_EXPECT(fails,
                          transposed_call_against_guards(
                                  gs, g, c, *kern, at_end,
                                  [&](const void *const *ptr) {
                                      return dt_args(c, ptr);
                                  }),
                          c.str() + (at_end ? " at end" : " at begin"));
        }
    }
}

TEST_P(kernel_dt, CalleeSavedRegistersPreserved) {
    using harness =
            callee_saved_harness<si::select_kernel_fn, si::select_call_args>;
    const harness h;
    auto &g = rng();
    for (int w : dt_widths(kisa()))
        for (int nt = 0; nt < 2; ++nt) {
            dt_case c;
            // The prefetching variant with nt stores (its frame reloads
            // the argument pointer for the fence).
            c.key = dt_key(kisa(), w, 0, 0, nt, nt);
            // Full row blocks and a tail (4-byte: two and 3 rows, 2-byte: two
            // and 1 row); full column blocks (AVX-512: one, AVX2: two) and a
            // tail.
            c.rows = w == 2 ? 65 : 35;
            c.cols = 21;
            c.stride[0] = c.cols;
            c.stride[1] = c.stride[2] = c.cols * w;
            c.dst_ld = 192;
            const aligned_operands o([&](int op) { return c.bytes(op); }, g);
            const void *const *ptr = o.ptr;
            const auto want = transposed_want(c, ptr);
            const auto a = dt_args(c, ptr);
            const auto kern = si::create_jit_select_kernel(c.key);
            uint64_t out[8] = {};
            h.get()(kern->fn(), &a, out);
            EXPECT_TRUE(harness::preserved(out, kern->name()));
            EXPECT_TRUE(bytes_equal(ptr[3], want.data(), want.size(), w))
                    << c.str();
        }
}

TEST_P(kernel_dt, PlansWriteChannelsLastDstThemselves) {
    // dst NHWC over NCHW inputs, [2, C, 41, W]: the fold's tile dim is C
    // (dst's contiguous dim), its row H x W. The kernel writing dst runs
    // for 4-byte elements where C is at least 16 and, on Zen 4 (AVX-512),
    // for 2-byte ones where C is at least 32 (a 64-byte line of each
    // dst column; below 16 on AVX-512 and below 8 on AVX2, the packed one that
    // interleaves the channels, and 2-byte ones of a multiple of 4 up to 28
    // under either ISA). Its nt variant exists only where dst's
    // columns lie whole lines apart (C times the element bytes a multiple
    // of 64); elsewhere nt stores run dst's transpose from the scratch.
    // The results are the reference's wherever it runs or not, at 1 and 2
    // threads (from C = 48 on, the problem is large enough for two), with
    // dst aligned and (the nt variant's calls then fall back to regular
    // stores, and the exec line names the regular variant) not.
    auto &g = rng();
    int fails = 0;
    for (int w : { 4, 2 })
        for (int64_t c : { 3, 12, 16, 24, 32, 48, 64 })
            for (int64_t wd : { 7, 8 })
                for (bool nt : { false, true }) {
                    const dims_t d = { 2, c, 41, wd };
                    nd_spec s = full_spec(d, w);
                    s.strides[si::op_dst] = { d[1] * d[2] * d[3], 1,
                                              d[3] * d[1], d[1] };
                    const si::select_nd p = make_nd(s);
                    const si::select_plan plan = si::plan_select(
                            p, nt ? si::nt_candidate_bytes() : 0);
                    // A few channels: the packed kernel that interleaves
                    // them (test_kernel_dt_packed.cpp), whose nt variant
                    // needs only dst's start; 2-byte elements up to 28
                    // channels, a multiple of 4, AVX2's under either ISA.
                    const bool interleaved =
                            c <= (kisa() == si::kernel_isa::avx2
                                          ? si::max_packed_lanes_avx2
                                          : si::max_packed_dt_cols)
                            || (w == 2 && c % 4 == 0
                                && c <= si::max_packed_word_quads_avx2);
                    const bool lines = c * w % 64 == 0 || interleaved;
                    // 2-byte elements in blocks where this CPU's tuning
                    // takes them, and the prefetching blocks where it
                    // prefetches, under either ISA.
                    const si::cpu_tuning &t = si::this_cpu_tuning();
                    const bool blocks = c * w >= 64 && (w == 4 || t.dt_words);
                    const bool pf =
                            w == 2 ? t.dt_prefetch_words : t.dt_prefetch_dwords;
                    const bool want_dt = blocks || interleaved;
                    const std::string desc = nd_str(p) + (nt ? " (nt)" : "");
                    KT_EXPECT(fails,
                              ::testing::AssertionResult(
                                      (plan.kernel_dt != nullptr) == want_dt)
                                      << plan.kernel_str(),
                              desc);
                    if (want_dt && !interleaved) {
                        KT_EXPECT(fails,
                                  ::testing::AssertionResult(
                                          plan.kernel_dt->key().dt_prefetch
                                          == (pf ? 1 : 0))
                                          << plan.kernel_str(),
                                  desc);
                    }
                    if (want_dt) {
                        KT_EXPECT(fails,
                                  ::testing::AssertionResult(
                                          (plan.kernel_dt_nt != nullptr)
                                          == (lines && plan.has_nt()))
                                          << plan.kernel_str(),
                                  desc);
                    }
                    // Which kernel ran, as the exec line names it: the nt
                    // variant only where dst starts a cache line.
                    const auto ran_ok = [&](const si::executed &ran,
                                            size_t misd) {
                        if (!jit())
                            return ::testing::AssertionSuccess();
                        const bool dt_ran =
                                ran.kernel && ran.kernel->key().dst_transposed;
                        const bool nt_ran =
                                dt_ran && ran.kernel->key().nt_stores;
                        const bool want_ran = want_dt && (lines || !nt);
                        return ::testing::AssertionResult(
                                       dt_ran == want_ran
                                       && (!dt_ran
                                           || nt_ran == (nt && misd == 0)))
                               << plan.kernel_str(ran);
                    };
                    KT_EXPECT(
                            fails,
                            run_plan_aligned_or_not(plan, p, nt, 4, g, ran_ok),
                            desc);
                }
}

SELGRAPH_INSTANTIATE_PER_JIT_ISA(kernel_dt);

} // namespace
} // namespace selgraph_test
