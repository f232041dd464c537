// The packed kernels that write a transposed dst of a few rows
// (kernel_key::dt_cols, kernels/jit_select_dt_packed.cpp): their keys and
// refusals, direct calls through the kernel ABI inside guard pages (every
// element size and column count the ISA takes, row counts around its
// blocks and every tail, inputs back to back or one row for all, inverted
// cond, a scalar src_1, both store kinds), bit for bit against
// impl::ref_select, the callee-saved registers, and which plans use them
// (channels-last inputs of a few channels into a channels-first dst), and
// the same for the mirror kernels that interleave a few rows into dst
// (kernel_key::dt_rows: channels-first inputs into a channels-last dst).
#include <xbyak/xbyak.h>

#include "kernel_test_utils.hpp"

namespace selgraph_test {
namespace {

using kernel_dt_packed = isa_test;

si::kernel_key packed_key(si::kernel_isa isa, int w, int cols, int inv, int bs,
                          int nt) {
    si::kernel_key k = make_key(isa, w, 0, inv, 0, bs, nt, 1);
    k.unroll = 0;
    k.dst_transposed = 1;
    k.dt_cols = static_cast<uint8_t>(cols);
    return k;
}

/// The column counts a packed kernel takes for `w`-byte elements: AVX-512
/// 2-, 4- and 8-byte elements, up to 15 columns and one vector's elements;
/// AVX2 all of them up to 13 (4- and 8-byte ones up to 8 by vpermd, the
/// rest by 16-byte lanes), 2-byte ones up to 15 (from 8 by quadwords),
/// 1-byte ones up to 63 (past 10 by dwords through the stack; 0: none).
int max_cols(si::kernel_isa isa, int w) {
    if (isa == si::kernel_isa::avx2)
        return w == 1   ? si::max_packed_byte_quads_avx2
               : w == 2 ? si::max_packed_dt_cols
                        : si::max_packed_lanes_avx2;
    return w == 1 ? 0 : std::min(15, 64 / w);
}

/// The column counts the tests run for `w`-byte elements: every count up
/// to 16, then a few up to max_cols.
std::vector<int> packed_cols(si::kernel_isa isa, int w) {
    std::vector<int> r;
    for (int c = 2; c <= max_cols(isa, w); ++c)
        if (c <= 16 || c == 20 || c == 31 || c == 32 || c == 45 || c == 63)
            r.push_back(c);
    return r;
}

/// The row counts an interleaving kernel takes for `w`-byte elements:
/// AVX-512 2-, 4- and 8-byte ones up to 15, AVX2 all of them up to 13.
int max_rows(si::kernel_isa isa, int w) {
    if (isa == si::kernel_isa::avx2)
        return si::max_packed_lanes_avx2;
    return w == 1 ? 0 : 15;
}

/// Whether an interleaving kernel takes `rows` rows of `w`-byte elements:
/// up to max_rows, and on AVX2 2-byte ones up to 15 and of every multiple
/// of 4 up to max_packed_word_quads_avx2 (quads through transposes of 8
/// rows).
bool takes_rows(si::kernel_isa isa, int w, int rows) {
    if (rows < 2)
        return false;
    if (isa == si::kernel_isa::avx2 && w == 2
        && (rows <= si::max_packed_dt_cols
            || (rows % 4 == 0 && rows <= si::max_packed_word_quads_avx2)))
        return true;
    return rows <= max_rows(isa, w);
}

/// The row counts takes_rows accepts, in order.
std::vector<int> inter_rows(si::kernel_isa isa, int w) {
    std::vector<int> r;
    for (int rows = 2; rows <= 32; ++rows)
        if (takes_rows(isa, w, rows))
            r.push_back(rows);
    return r;
}

/// What a plan gets on `isa`: 1-byte elements on AVX-512 run AVX2's
/// kernel (no byte permute across lanes without AVX512_VBMI).
si::kernel_isa plan_isa(si::kernel_isa isa, int w) {
    return w == 1 ? si::kernel_isa::avx2 : isa;
}

/// One direct call: `rows` pixels of key.dt_cols channels, each input's
/// rows back to back or one row for all (`repeat`), dst element (r, c) at
/// c * dst_ld + r * w bytes.
struct packed_case {
    si::kernel_key key;
    int64_t rows = 1;
    bool repeat[3] = {}; // cond, src_0, src_1: one row for all
    int64_t dst_ld = 0;  // bytes between dst's lines

    int w() const { return key.elem_size; }
    int64_t cols() const { return key.dt_cols; }
    bool b_scalar() const { return key.src1_scalar != 0; }
    int64_t stride(int op) const {
        if (repeat[op] || (op == si::op_src1 && b_scalar()))
            return 0;
        return op == si::op_cond ? cols() : cols() * w();
    }
    size_t bytes(int op) const {
        if (op == si::op_dst)
            return static_cast<size_t>((cols() - 1) * dst_ld + rows * w());
        const int64_t row = op == si::op_cond                 ? cols()
                            : op == si::op_src1 && b_scalar() ? w()
                                                              : cols() * w();
        return static_cast<size_t>((rows - 1) * stride(op) + row);
    }
    /// The problem as ref_select sees it, element strides: [rows, cols];
    /// with invert_cond the kernel's src_0 is the nd's src_1.
    si::select_nd nd() const {
        si::select_nd p;
        p.ndims = 2;
        p.dims[0] = rows;
        p.dims[1] = cols();
        p.elem_size = w();
        const int a = key.invert_cond ? si::op_src1 : si::op_src0;
        const int b = key.invert_cond ? si::op_src0 : si::op_src1;
        p.strides[si::op_cond][0] = stride(0);
        p.strides[si::op_cond][1] = 1;
        p.strides[a][0] = stride(1) / w();
        p.strides[a][1] = 1;
        p.strides[b][0] = stride(2) / w();
        p.strides[b][1] = b_scalar() ? 0 : 1;
        p.strides[si::op_dst][0] = 1;
        p.strides[si::op_dst][1] = dst_ld / w();
        return p;
    }
    std::string str() const {
        std::ostringstream os;
        os << si::kernel_name(key) << " rows=" << rows
           << " strides(bytes)=" << stride(0) << "," << stride(1) << ","
           << stride(2) << " dst_ld=" << dst_ld;
        return os.str();
    }
};

si::select_call_args packed_args(const packed_case &c, const void *const *ptr) {
    return call_args(ptr, c.cols(), c.rows, c.stride(0), c.stride(1),
                     c.stride(2), c.dst_ld);
}

TEST_P(kernel_dt_packed, KeysAndRefusals) {
    ASSERT_TRUE(jit()) << "instantiated for the JIT ISAs only";
    for (int w : { 4, 8, 2, 1 })
        for (int cols = 2; cols <= max_cols(kisa(), w); ++cols)
            for (int inv = 0; inv < 2; ++inv)
                for (int bs = 0; bs < 2; ++bs)
                    for (int nt = 0; nt < 2; ++nt) {
                        const si::kernel_key k =
                                packed_key(kisa(), w, cols, inv, bs, nt);
                        EXPECT_TRUE(si::dst_transposed_supported(k))
                                << si::kernel_name(k);
                        const auto kern = si::create_jit_select_kernel(k);
                        ASSERT_TRUE(kern);
                        EXPECT_TRUE(kern->key() == k);
                        EXPECT_EQ(kern->name(), si::kernel_name(k));
                    }
    si::kernel_key ex = packed_key(si::kernel_isa::avx512_core, 4, 3, 0, 0, 1);
    EXPECT_EQ(si::kernel_name(ex), "avx512_core_e4_cv_av_bv_dt3_nt");
    // A packed key differs from the block kernel's and from another
    // column count's.
    si::kernel_key block = ex, other = ex;
    block.dt_cols = 0;
    other.dt_cols = 4;
    EXPECT_FALSE(block == ex);
    EXPECT_FALSE(other == ex);
    EXPECT_NE(si::kernel_key_hash()(block), si::kernel_key_hash()(ex));
    // No kernel: 1-byte elements on AVX-512, elements of 0 or 16 bytes, 1
    // column, more columns than the ISA takes, a scalar cond or src_0.
    std::vector<si::kernel_key> bad = {
        packed_key(kisa(), 1, std::max(3, max_cols(kisa(), 1) + 1), 0, 0, 0),
        packed_key(kisa(), 0, 3, 0, 0, 0),
        packed_key(kisa(), 16, 3, 0, 0, 0),
        packed_key(kisa(), 4, 1, 0, 0, 0),
        packed_key(kisa(), 4, max_cols(kisa(), 4) + 1, 0, 0, 0),
        packed_key(kisa(), 2, max_cols(kisa(), 2) + 1, 0, 0, 0),
        packed_key(kisa(), 8, max_cols(kisa(), 8) + 1, 0, 0, 0),
    };
    si::kernel_key cs = packed_key(kisa(), 4, 3, 0, 0, 0);
    cs.cond_scalar = 1;
    bad.push_back(cs);
    si::kernel_key as = packed_key(kisa(), 4, 3, 0, 1, 0);
    as.src0_scalar = 1;
    bad.push_back(as);
    // AVX2 prefetches in the interleaving direction only.
    if (kisa() == si::kernel_isa::avx2) {
        si::kernel_key pf = packed_key(kisa(), 4, 3, 0, 0, 1);
        pf.dt_prefetch = 1;
        bad.push_back(pf);
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

TEST_P(kernel_dt_packed, BitExactAgainstGuards) {
    auto &g = rng();
    int fails = 0;
    guard_set gs(static_cast<size_t>(64 * 1024));
    ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
    for (int w : { 1, 2, 4, 8 }) {
        // Rows per iteration: one vector's lanes on AVX-512, two on AVX2.
        const int64_t step =
                lanes(w) * (kisa() == si::kernel_isa::avx2 ? 2 : 1);
        // Every tail length, and iterations with tails.
        std::vector<int64_t> row_counts;
        for (int64_t r = 1; r <= step + 1; ++r)
            row_counts.push_back(r);
        for (int64_t r : { 2 * step - 1, 2 * step, 3 * step + 5 })
            row_counts.push_back(r);
        // AVX-512's prefetching variant: its prefetching blocks run while
        // 8 more blocks follow (none, one, several, with tails).
        const bool has_pf = kisa() == si::kernel_isa::avx512_core && w > 1;
        if (has_pf)
            for (int64_t r : { 9 * step - 1, 9 * step, 10 * step + 3 })
                row_counts.push_back(r);
        for (int cols : packed_cols(kisa(), w))
            for (int inv = 0; inv < 2; ++inv)
                for (int bs = 0; bs < 2; ++bs)
                    for (int v = 0; v < (has_pf ? 4 : 2); ++v) {
                        const int nt = v % 2;
                        si::kernel_key k =
                                packed_key(kisa(), w, cols, inv, bs, nt);
                        k.dt_prefetch = static_cast<uint8_t>(v / 2);
                        const auto kern = si::create_jit_select_kernel(k);
                        for (int64_t rows : row_counts) {
                            packed_case c;
                            c.key = k;
                            c.rows = rows;
                            const uint64_t r = g();
                            for (int op = 0; op < 3; ++op)
                                c.repeat[op] = (r >> (2 * op)) % 4 == 0;
                            // The nt variant's dst lines are whole cache
                            // lines apart and dst starts one (its
                            // contract).
                            c.dst_ld =
                                    nt ? (rows * w + 63) / 64 * 64
                                                    + int64_t(r >> 8) % 2 * 64
                                       : (rows + int64_t(r >> 8) % 8) * w;
                            for (bool at_end : { true, false })
                                KT_EXPECT(fails,
                                          transposed_call_against_guards(
                                                  gs, g, c, *kern, at_end,
                                                  [&](const void *const *ptr) {
                                                      return packed_args(c,
                                                                         ptr);
                                                  }),
                                          c.str()
                                                  + (at_end ? " at end"
                                                            : " at begin"));
                        }
                    }
    }
}

TEST_P(kernel_dt_packed, CalleeSavedRegistersPreserved) {
    using harness =
            callee_saved_harness<si::select_kernel_fn, si::select_call_args>;
    const harness h;
    auto &g = rng();
    // Full blocks and a tail; inputs one row for all (expanded on the
    // stack): cond alone, all three, src_1 alone; the most channels.
    struct config {
        int w, cols;
        bool repeat[3];
    };
    const config configs[] = { { 4, 3, { true, false, false } },
                               { 8, 8, { true, true, true } },
                               { 4, 8, { false, false, true } },
                               { 2, 7, { false, true, false } },
                               { 1, 10, { true, false, true } } };
    for (const config &cf : configs)
        for (int nt = 0; nt < 2; ++nt) {
            packed_case c;
            // 1-byte elements: AVX2's kernel, as plans on AVX-512 get it.
            c.key = packed_key(plan_isa(kisa(), cf.w), cf.w, cf.cols, 0, 0, nt);
            c.rows = 37;
            for (int op = 0; op < 3; ++op)
                c.repeat[op] = cf.repeat[op];
            c.dst_ld = 320;
            const aligned_operands o([&](int op) { return c.bytes(op); }, g);
            const void *const *ptr = o.ptr;
            const auto want = transposed_want(c, ptr);
            const auto a = packed_args(c, ptr);
            const auto kern = si::create_jit_select_kernel(c.key);
            uint64_t out[8] = {};
            h.get()(kern->fn(), &a, out);
            EXPECT_TRUE(harness::preserved(out, kern->name()));
            EXPECT_TRUE(bytes_equal(ptr[3], want.data(), want.size(), cf.w))
                    << c.str();
        }
}

TEST_P(kernel_dt_packed, PlansWriteChannelsFirstDstThemselves) {
    // Inputs NHWC, dst NCHW, [2, C, 9, W]: the fold follows the inputs'
    // order, rows of C channels, dst transposed. The packed kernel runs
    // where the ISA has one for the element size and C (max_cols), with cond
    // per channel ([1, C, 1, 1]) or full, src_1 full or 0-D. With a 0-D
    // src_1 and a per-channel cond, src_0 is the one input of the inputs' order
    // and the fold ties, so it keeps dst's (rows of pixels, cond one value per
    // row, src_0 transposed) and no dst kernel runs. Its nt variant where dst's
    // lines lie whole cache lines apart (9 * W * w a multiple of 64; elsewhere
    // nt stores are the scratch path's). The results are the reference's
    // wherever it runs or not, at 1 and 2 threads, dst aligned or not (the nt
    // variant's calls then store regularly).
    auto &g = rng();
    int fails = 0;
    for (int w : { 1, 2, 4, 8 })
        for (int64_t c : { 2, 3, 4, 7, 8, 12, 13, 14, 15, 16, 24, 63 })
            for (int shape = 0; shape < 3; ++shape)
                for (int variant = 0; variant < 6; ++variant)
                    for (bool nt : { false, true }) {
                        // Two images, lines of 45 or 576 pixels; one image
                        // of 8192 (f32, 3 and 8 channels), which two
                        // threads split into tiles.
                        if (shape == 2 && (w != 4 || (c != 3 && c != 8)))
                            continue;
                        const dims_t d =
                                shape == 2 ? dims_t { 1, c, 128, 64 }
                                           : dims_t { 2, c, 9, shape ? 64 : 5 };
                        nd_spec s = full_spec(d, w);
                        const dims_t nhwc = { d[1] * d[2] * d[3], 1,
                                              d[3] * d[1], d[1] };
                        // variant 0: all inputs NHWC; 1: cond per channel;
                        // 2: cond per channel and a 0-D src_1; 3: a 0-D
                        // src_1 (the kernel's scalar src_1); 4: a 0-D
                        // src_0 (swapped into src_1, cond inverted); 5:
                        // src_1 one value per pixel, a view of an NHWC
                        // tensor's first channel (scalar along the row
                        // but not one for all: the scratch path).
                        s.strides[si::op_cond] = nhwc;
                        s.strides[si::op_src0] = nhwc;
                        s.strides[si::op_src1] = nhwc;
                        if (variant == 1 || variant == 2) {
                            s.in[si::op_cond] = { 1, c, 1, 1 };
                            s.strides[si::op_cond] = {};
                        }
                        if (variant == 2 || variant == 3) {
                            s.in[si::op_src1] = {};
                            s.strides[si::op_src1] = {};
                        }
                        if (variant == 4) {
                            s.in[si::op_src0] = {};
                            s.strides[si::op_src0] = {};
                        }
                        if (variant == 5)
                            s.in[si::op_src1] = { d[0], 1, d[2], d[3] };
                        const si::select_nd p = make_nd(s);
                        const si::select_plan plan = si::plan_select(
                                p, nt ? si::nt_candidate_bytes() : 0);
                        const bool want_dt =
                                c <= max_cols(plan_isa(kisa(), w), w)
                                && variant != 2 && variant != 5;
                        const bool lines = (d[2] * d[3] * w) % 64 == 0;
                        const std::string desc =
                                nd_str(p) + (nt ? " (nt)" : "");
                        const bool packed_planned =
                                plan.kernel_dt
                                && plan.kernel_dt->key().dt_cols == c;
                        KT_EXPECT(fails,
                                  ::testing::AssertionResult(packed_planned
                                                             == want_dt)
                                          << plan.kernel_str(),
                                  desc);
                        if (want_dt) {
                            KT_EXPECT(fails,
                                      ::testing::AssertionResult(
                                              (plan.kernel_dt_nt != nullptr)
                                              == (lines && plan.has_nt()))
                                              << plan.kernel_str(),
                                      desc);
                        }
                        const auto ran_ok = [&](const si::executed &ran,
                                                size_t misd) {
                            if (!want_dt)
                                return ::testing::AssertionSuccess();
                            const bool packed_ran =
                                    ran.kernel
                                    && ran.kernel->key().dt_cols == c;
                            const bool nt_ran =
                                    packed_ran && ran.kernel->key().nt_stores;
                            // With nt stores and no nt variant, dst's
                            // transpose from the scratch streams.
                            const bool want_ran = lines || !nt;
                            return ::testing::AssertionResult(
                                           packed_ran == want_ran
                                           && nt_ran
                                                      == (want_ran && nt
                                                          && misd == 0))
                                   << plan.kernel_str(ran);
                        };
                        KT_EXPECT(fails,
                                  run_plan_aligned_or_not(plan, p, nt,
                                                          size_t(w), g, ran_ok),
                                  desc);
                    }
}

// --- The mirror: tiles of a few rows interleaved into dst (dt_rows) -------

si::kernel_key inter_key(si::kernel_isa isa, int w, int rows, int cs, int inv,
                         int as, int bs, int nt) {
    si::kernel_key k = make_key(isa, w, cs, inv, as, bs, nt, 1);
    k.unroll = 0;
    k.dst_transposed = 1;
    k.dt_rows = static_cast<uint8_t>(rows);
    return k;
}

/// One direct call: key.dt_rows rows (channels) of `cols` elements
/// (pixels), each input's rows `stride` bytes apart (0: one row for all;
/// a scalar operand: one element per row), dst element (r, c) at
/// (c * rows + r) * w bytes.
struct inter_case {
    si::kernel_key key;
    int64_t cols = 1;
    int64_t stride[3] = {};

    int w() const { return key.elem_size; }
    int64_t rows() const { return key.dt_rows; }
    bool scalar(int op) const {
        return op == 0   ? key.cond_scalar != 0
               : op == 1 ? key.src0_scalar != 0
                         : key.src1_scalar != 0;
    }
    size_t bytes(int op) const {
        if (op == si::op_dst)
            return static_cast<size_t>(cols * rows() * w());
        const int64_t e = op == si::op_cond ? 1 : w();
        const int64_t row = scalar(op) ? e : cols * e;
        return static_cast<size_t>((rows() - 1) * stride[op] + row);
    }
    si::select_nd nd() const {
        si::select_nd p;
        p.ndims = 2;
        p.dims[0] = rows();
        p.dims[1] = cols;
        p.elem_size = w();
        const int map[3] = { si::op_cond,
                             key.invert_cond ? si::op_src1 : si::op_src0,
                             key.invert_cond ? si::op_src0 : si::op_src1 };
        for (int op = 0; op < 3; ++op) {
            const int64_t e = op == 0 ? 1 : w();
            p.strides[map[op]][0] = stride[op] / e;
            p.strides[map[op]][1] = scalar(op) ? 0 : 1;
        }
        p.strides[si::op_dst][0] = 1;
        p.strides[si::op_dst][1] = rows();
        return p;
    }
    std::string str() const {
        std::ostringstream os;
        os << si::kernel_name(key) << " cols=" << cols
           << " strides(bytes)=" << stride[0] << "," << stride[1] << ","
           << stride[2];
        return os.str();
    }
};

si::select_call_args inter_args(const inter_case &c, const void *const *ptr) {
    return call_args(ptr, c.cols, c.rows(), c.stride[0], c.stride[1],
                     c.stride[2], c.rows() * c.w());
}

TEST_P(kernel_dt_packed, InterleavedKeysAndRefusals) {
    ASSERT_TRUE(jit()) << "instantiated for the JIT ISAs only";
    for (int w : { 1, 2, 4, 8 })
        for (int rows = 2; rows <= 32; ++rows)
            for (int roles = 0; roles < 16; ++roles) {
                const si::kernel_key k =
                        inter_key(kisa(), w, rows, roles & 1, (roles >> 1) & 1,
                                  (roles >> 2) & 1, (roles >> 3) & 1, rows & 1);
                const bool takes = takes_rows(kisa(), w, rows);
                EXPECT_EQ(si::dst_transposed_supported(k), takes)
                        << si::kernel_name(k);
                if (!takes)
                    continue;
                const auto kern = si::create_jit_select_kernel(k);
                ASSERT_TRUE(kern);
                EXPECT_TRUE(kern->key() == k);
                EXPECT_EQ(kern->name(), si::kernel_name(k));
            }
    si::kernel_key ex =
            inter_key(si::kernel_isa::avx512_core, 4, 3, 1, 0, 0, 0, 1);
    EXPECT_EQ(si::kernel_name(ex), "avx512_core_e4_cs_av_bv_dti3_nt");
    si::kernel_key cols = ex;
    cols.dt_rows = 0;
    cols.dt_cols = 3;
    EXPECT_FALSE(cols == ex);
    EXPECT_NE(si::kernel_key_hash()(cols), si::kernel_key_hash()(ex));
    // No kernel: 1-byte elements on AVX-512, 1 or 16 rows, both kinds at
    // once.
    si::kernel_key both = inter_key(kisa(), 4, 3, 0, 0, 0, 0, 0);
    both.dt_cols = 3;
    for (const auto &k :
         { inter_key(kisa(), 1, std::max(3, max_rows(kisa(), 1) + 1), 0, 0, 0,
                     0, 0),
           inter_key(kisa(), 4, 1, 0, 0, 0, 0, 0),
           inter_key(kisa(), 4, 16, 0, 0, 0, 0, 0), both }) {
        EXPECT_FALSE(si::dst_transposed_supported(k)) << si::kernel_name(k);
        try {
            (void)si::create_jit_select_kernel(k);
            ADD_FAILURE() << "a kernel was made for " << si::kernel_name(k);
        } catch (const sg::error &e) {
            EXPECT_EQ(e.status, sg::status::unimplemented) << e.what();
        }
    }
}

TEST_P(kernel_dt_packed, InterleavedBitExactAgainstGuards) {
    auto &g = rng();
    int fails = 0;
    guard_set gs(static_cast<size_t>(64 * 1024));
    ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
    for (int w : { 1, 2, 4, 8 }) {
        // Columns per iteration: one vector's lanes on AVX-512, two on
        // AVX2.
        const int64_t l = lanes(w) * (kisa() == si::kernel_isa::avx2 ? 2 : 1);
        std::vector<int64_t> col_counts;
        for (int64_t c = 1; c <= l + 1; ++c)
            col_counts.push_back(c);
        for (int64_t c : { 2 * l - 1, 2 * l, 3 * l + 5 })
            col_counts.push_back(c);
        // The prefetching variants: AVX-512's prefetching blocks run while
        // 8 more blocks follow, AVX2's iterations while 8 more iterations
        // do (none, one, several, with tails).
        const bool has_pf = kisa() == si::kernel_isa::avx2
                            || (kisa() == si::kernel_isa::avx512_core && w > 1);
        if (has_pf)
            for (int64_t c : { 9 * l - 1, 9 * l, 10 * l + 3 })
                col_counts.push_back(c);
        for (int rows : inter_rows(kisa(), w))
            for (int roles = 0; roles < 16; ++roles)
                for (int v = 0; v < (has_pf ? 4 : 2); ++v) {
                    const int nt = v % 2;
                    si::kernel_key k = inter_key(
                            kisa(), w, rows, roles & 1, (roles >> 1) & 1,
                            (roles >> 2) & 1, (roles >> 3) & 1, nt);
                    k.dt_prefetch = static_cast<uint8_t>(v / 2);
                    const auto kern = si::create_jit_select_kernel(k);
                    // Every column count for a quarter of the roles, a
                    // few tails for the rest (and, prefetching, runs of
                    // none, one and several prefetching blocks).
                    std::vector<int64_t> few = { 1, l / 2 + 1, l - 1, l + 1,
                                                 3 * l + 5 };
                    if (v / 2)
                        few.insert(few.end(), { 9 * l - 1, 9 * l, 10 * l + 3 });
                    for (int64_t cols : roles % 5 == 0 ? col_counts : few) {
                        inter_case c;
                        c.key = k;
                        c.cols = cols;
                        const uint64_t r = g();
                        // Padded rows, or one row (element) for all.
                        for (int op = 0; op < 3; ++op) {
                            const int64_t e = op == 0 ? 1 : w;
                            const int64_t row = c.scalar(op) ? 1 : cols;
                            const uint64_t x = r >> (8 * op);
                            c.stride[op] =
                                    x % 5 == 0
                                            ? 0
                                            : (row + int64_t(x >> 3) % 9) * e;
                        }
                        for (bool at_end : { true, false })
                            KT_EXPECT(fails,
                                      transposed_call_against_guards(
                                              gs, g, c, *kern, at_end,
                                              [&](const void *const *ptr) {
                                                  return inter_args(c, ptr);
                                              }),
                                      c.str()
                                              + (at_end ? " at end"
                                                        : " at begin"));
                    }
                }
    }
}

TEST_P(kernel_dt_packed, InterleavedCalleeSavedRegistersPreserved) {
    // The interleaving kernels use rbx, rbp, r12-r15 (AVX2: rbp and r15
    // also as row pointers) and the largest stack frames of the file
    // (tails of 2B elements per row and input): full blocks and a tail,
    // every role, the most rows the ISA takes, both store kinds.
    using harness =
            callee_saved_harness<si::select_kernel_fn, si::select_call_args>;
    const harness h;
    auto &g = rng();
    for (int w : { 1, 2, 4, 8 }) {
        const std::vector<int> all = inter_rows(kisa(), w);
        if (all.empty())
            continue;
        const int rows = all.back();
        for (int roles = 0; roles < 16; ++roles)
            for (int nt = 0; nt < 2; ++nt) {
                inter_case c;
                c.key = inter_key(kisa(), w, rows, roles & 1, (roles >> 1) & 1,
                                  (roles >> 2) & 1, (roles >> 3) & 1, nt);
                c.cols = 2 * lanes(w) * 2 + 5; // blocks and a tail
                for (int op = 0; op < 3; ++op)
                    c.stride[op] = (c.scalar(op) ? 1 : c.cols) * (op ? w : 1);
                const aligned_operands o([&](int op) { return c.bytes(op); },
                                         g);
                const void *const *ptr = o.ptr;
                const auto want = transposed_want(c, ptr);
                const auto a = inter_args(c, ptr);
                const auto kern = si::create_jit_select_kernel(c.key);
                uint64_t out[8] = {};
                h.get()(kern->fn(), &a, out);
                EXPECT_TRUE(harness::preserved(out, kern->name()));
                EXPECT_TRUE(bytes_equal(ptr[3], want.data(), want.size(), w))
                        << c.str();
            }
    }
}

TEST_P(kernel_dt_packed, PlansInterleaveChannelsLastDst) {
    // Inputs NCHW, dst NHWC, [2, C, 9, W]: the fold follows the inputs'
    // order, tiles of C rows (channels), dst transposed with each pixel's
    // channels back to back. The interleaving kernel runs where C is under
    // 16 for 2-, 4- and 8-byte elements (AVX2: up to 13, 1-byte ones too,
    // as on AVX-512 CPUs; 2-byte ones up to 15 and of a multiple of 4 up
    // to 28 rows by
    // AVX2's kernel on both), with cond full or
    // per channel (one element per row), src_1 full or 0-D; its nt
    // variant wherever the plan has nt stores (a call whose dst does not
    // start a cache line runs the regular one). The results are the
    // reference's wherever it runs or not, at 1 and 2 threads, dst
    // aligned or not.
    auto &g = rng();
    int fails = 0;
    for (int w : { 1, 2, 4, 8 })
        for (int64_t c : { 2, 3, 4, 7, 8, 12, 13, 14, 15, 16, 20, 28 })
            for (int shape = 0; shape < 3; ++shape)
                for (int variant = 0; variant < 3; ++variant)
                    for (bool nt : { false, true }) {
                        // Two images, or one that two threads split (in
                        // column blocks: calls at pixel offsets; f32, 3
                        // and 7 channels).
                        if (shape == 2 && (w != 4 || (c != 3 && c != 7)))
                            continue;
                        const dims_t d =
                                shape == 2 ? dims_t { 1, c, 128, 64 }
                                           : dims_t { 2, c, 9, shape ? 64 : 5 };
                        nd_spec s = full_spec(d, w);
                        s.strides[si::op_dst] = { d[1] * d[2] * d[3], 1,
                                                  d[3] * d[1], d[1] };
                        // variant 0: all inputs NCHW; 1: cond per channel;
                        // 2: a 0-D src_1.
                        if (variant == 1)
                            s.in[si::op_cond] = { 1, c, 1, 1 };
                        if (variant == 2)
                            s.in[si::op_src1] = {};
                        const si::select_nd p = make_nd(s);
                        const si::select_plan plan = si::plan_select(
                                p, nt ? si::nt_candidate_bytes() : 0);
                        // 2-byte elements past 15 rows: AVX2's kernel
                        // on AVX-512 CPUs too.
                        const bool want_dt =
                                takes_rows(plan_isa(kisa(), w), w, int(c))
                                || (w == 2
                                    && takes_rows(si::kernel_isa::avx2, w,
                                                  int(c))
                                    && c > 15);
                        const std::string desc =
                                nd_str(p) + (nt ? " (nt)" : "");
                        const bool planned =
                                plan.kernel_dt
                                && plan.kernel_dt->key().dt_rows == c;
                        KT_EXPECT(fails,
                                  ::testing::AssertionResult(planned == want_dt)
                                          << plan.kernel_str(),
                                  desc);
                        if (want_dt) {
                            KT_EXPECT(fails,
                                      ::testing::AssertionResult(
                                              (plan.kernel_dt_nt != nullptr)
                                              == plan.has_nt())
                                              << plan.kernel_str(),
                                      desc);
                            // AVX2's nt variant of 8 rows or more
                            // prefetches its rows; AVX-512's both variants
                            // where the CPU's tuning says so.
                            const auto &kk = plan.kernel_dt->key();
                            const bool z = kk.isa == si::kernel_isa::avx2;
                            const bool pf_dt =
                                    !z
                                    && si::this_cpu_tuning().dt_prefetch_packed;
                            KT_EXPECT(fails,
                                      ::testing::AssertionResult(
                                              (kk.dt_prefetch != 0) == pf_dt)
                                              << plan.kernel_str(),
                                      desc);
                            if (plan.kernel_dt_nt)
                                KT_EXPECT(fails,
                                          ::testing::AssertionResult(
                                                  (plan.kernel_dt_nt->key()
                                                           .dt_prefetch
                                                   != 0)
                                                  == (z ? c >= 8 : pf_dt))
                                                  << plan.kernel_str(),
                                          desc);
                        }
                        const auto ran_ok = [&](const si::executed &ran,
                                                size_t misd) {
                            if (!want_dt)
                                return ::testing::AssertionSuccess();
                            const bool ran_it =
                                    ran.kernel
                                    && ran.kernel->key().dt_rows == c;
                            const bool nt_ran =
                                    ran_it && ran.kernel->key().nt_stores;
                            return ::testing::AssertionResult(
                                           ran_it
                                           && nt_ran == (nt && misd == 0))
                                   << plan.kernel_str(ran);
                        };
                        KT_EXPECT(fails,
                                  run_plan_aligned_or_not(plan, p, nt,
                                                          size_t(w), g, ran_ok),
                                  desc);
                    }
}

SELGRAPH_INSTANTIATE_PER_JIT_ISA(kernel_dt_packed);

} // namespace
} // namespace selgraph_test
