// Differential tests of the dispatcher and the kernels it picks
// (plan_select + execute_plan, the ISA capped per test) against
// impl::ref_select on the select_nd, bit for bit, with the naive oracle
// checking ref_select itself: every inner/outer broadcast pattern, element
// sizes 8 (f64, s64, u64), 4 (f32, s32, u32), 2 (bf16, f16, s16, u16) and
// 1 (s8, u8, f8, boolean), row lengths around the vector and
// unroll widths, ranks 0..8, zero-size dims, strided inputs and outputs,
// in-place, non-temporal plans, threads, and thousands of random shapes.
// Each case also checks that the JIT of the ISA under test ran (kernel key
// and name) wherever the folded problem allows it.
#include <algorithm>

#include "kernel_test_utils.hpp"

namespace selgraph_test {
namespace {

using kernel_nd = isa_test;

TEST_P(kernel_nd, BroadcastPatternsAllSizes) {
    auto &g = rng();
    int fails = 0;
    const size_t nt = si::nt_candidate_bytes();
    for (int w : { 8, 4, 2, 1 })
        for (int64_t r : { 1, 3 })
            for (uint64_t un : sweep_sizes()) {
                const auto n = static_cast<int64_t>(un);
                for (const auto &pt : broadcast_patterns(r, n)) {
                    const si::select_nd p = make_nd(pt.c, pt.a, pt.b, w);
                    plan_run_opts o;
                    // Every other size with the non-temporal variant.
                    o.working_set = (un & 1) ? nt : 0;
                    o.check_naive = r == 3;
                    KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                              std::string(pt.name) + " " + nd_str(p));
                }
            }
}

TEST_P(kernel_nd, AttentionMaskSquare) {
    // cond [1,1,S,S] vs src_0 [B,H,S,S] with a 0-D src_1 (-inf), and the
    // swapped form; the folding of the worked example in broadcast.cpp.
    auto &g = rng();
    int fails = 0;
    for (int w : { 8, 4, 2, 1 })
        for (int64_t s : { 1, 2, 7, 16, 33, 64, 100 }) {
            const si::select_nd p =
                    make_nd({ 1, 1, s, s }, { 2, 3, s, s }, {}, w);
            const si::select_nd q =
                    make_nd({ 1, 1, s, s }, {}, { 2, 3, s, s }, w);
            plan_run_opts o;
            KT_EXPECT(fails, run_plan_case(p, kisa(), o, g), nd_str(p));
            KT_EXPECT(fails, run_plan_case(q, kisa(), o, g), nd_str(q));
            if (jit() && s > 1) {
                const si::select_plan pl = si::plan_select(p, 0);
                ASSERT_TRUE(pl.kernel);
                EXPECT_EQ(pl.kernel->name(),
                          std::string(si::kernel_isa2str(kisa())) + "_e"
                                  + std::to_string(w) + "_cv_av_bs_u4");
                EXPECT_FALSE(pl.swap);
                if (s * s * w >= 1024) {
                    ASSERT_EQ(pl.folded.ndims, 2) << si::folded2str(pl.folded);
                    EXPECT_EQ(pl.folded.dims[0], 6);
                    EXPECT_EQ(pl.folded.dims[1], s * s);
                    EXPECT_EQ(pl.folded.rep, 1);
                } else {
                    // A short row with a mask row shared by all 6 rows:
                    // widened by the largest divisor of 6 that keeps the
                    // row within 1024 elements.
                    int64_t rep = 1;
                    for (int64_t k : { 6, 3, 2 })
                        if (rep == 1 && k * s * s <= 1024)
                            rep = k;
                    EXPECT_EQ(pl.folded.rep, rep) << si::folded2str(pl.folded);
                    EXPECT_EQ(pl.folded.inner(), rep * s * s);
                    EXPECT_EQ(pl.folded.rows(), 6 / rep);
                    EXPECT_EQ(pl.folded.rep_mask, 1u << si::op_cond);
                }
                const int od = pl.folded.ndims - 2; // -1: one row
                if (od >= 0) {
                    EXPECT_EQ(pl.folded.strides[si::op_cond][od], 0);
                    EXPECT_EQ(pl.folded.strides[si::op_src0][od],
                              pl.folded.inner() * w);
                }
                EXPECT_EQ(pl.folded.strides[si::op_src1][od + 1], 0);
                const si::select_plan ql = si::plan_select(q, 0);
                ASSERT_TRUE(ql.kernel);
                EXPECT_TRUE(ql.swap);
                EXPECT_EQ(ql.kernel->name(),
                          std::string(si::kernel_isa2str(kisa())) + "_e"
                                  + std::to_string(w) + "_cvn_av_bs_u4");
            }
        }
    // The worked example itself: [4,16,256,256] folds to 64 rows of 65536.
    const si::select_nd big =
            make_nd({ 1, 1, 256, 256 }, { 4, 16, 256, 256 }, {}, 4);
    const si::select_folded f = si::fold_select(big);
    ASSERT_EQ(f.ndims, 2);
    EXPECT_EQ(f.dims[0], 64);
    EXPECT_EQ(f.dims[1], 65536);
    EXPECT_EQ(f.strides[si::op_cond][0], 0);
    EXPECT_EQ(f.strides[si::op_cond][1], 1);
    EXPECT_EQ(f.strides[si::op_src0][0], 262144);
    EXPECT_EQ(f.strides[si::op_src0][1], 4);
    EXPECT_EQ(f.strides[si::op_src1][0], 0);
    EXPECT_EQ(f.strides[si::op_dst][0], 262144);
    EXPECT_EQ(f.mode[si::op_src1], si::inner_mode::scalar);
}

/// Random select_nd: `rank` dims with at most `max_elems` elements,
/// broadcast inputs, and layouts dense, padded, inner-strided or
/// transposed (`strided`).
struct random_case {
    si::select_nd p;
    bool in_place = false;
};

dims_t random_strides(const dims_t &d, int layout, std::mt19937_64 &g) {
    const size_t r = d.size();
    dims_t s(r);
    if (r == 0)
        return s;
    if (layout == 3 && r >= 2) {
        // The last two dims transposed.
        std::vector<size_t> order; // innermost first
        order.push_back(r - 2);
        order.push_back(r - 1);
        for (size_t i = r - 2; i-- > 0;)
            order.push_back(i);
        int64_t acc = 1;
        for (size_t i : order) {
            s[i] = acc;
            acc *= std::max<int64_t>(d[i], 1);
        }
        return s;
    }
    int64_t acc = layout == 2 ? 2 + static_cast<int64_t>(g() % 2) : 1;
    for (size_t i = r; i-- > 0;) {
        s[i] = acc;
        acc = acc * std::max<int64_t>(d[i], 1)
              + (layout == 1 || layout == 2 ? static_cast<int64_t>(g() % 4)
                                            : 0);
    }
    return s;
}

int pick_layout(std::mt19937_64 &g, bool strided, bool is_dst) {
    const int r = static_cast<int>(g() % 20);
    if (!strided)
        return r < 14 ? 0 : 1;
    if (is_dst)
        return r < 14 ? 0 : r < 18 ? 1 : r < 19 ? 2 : 3;
    return r < 11 ? 0 : r < 16 ? 1 : r < 18 ? 2 : 3;
}

random_case random_nd(std::mt19937_64 &g, int rank, int64_t max_elems, int w,
                      bool strided, bool allow_zero) {
    dims_t dst(rank);
    for (int i = 0; i < rank; ++i) {
        const int r = static_cast<int>(g() % 12);
        dst[i] = r < 3                    ? 1
                 : (r == 3 && allow_zero) ? 0
                 : r < 9                  ? 2 + static_cast<int64_t>(g() % 6)
                                          : 2 + static_cast<int64_t>(g() % 90);
    }
    auto prod = [&] {
        int64_t p = 1;
        for (auto x : dst)
            p *= x;
        return p;
    };
    while (prod() > max_elems) {
        auto it = std::max_element(dst.begin(), dst.end());
        *it = std::max<int64_t>(1, *it / 2);
    }
    // Broadcast flags; src_0 and src_1 never both broadcast where dst is
    // not 1 (numpy: dst is their broadcast).
    std::vector<std::vector<bool>> bc(3, std::vector<bool>(rank));
    for (int op = 0; op < 3; ++op)
        for (int i = 0; i < rank; ++i)
            bc[op][i] = g() % 3 == 0;
    for (int i = 0; i < rank; ++i)
        if (dst[i] != 1 && bc[1][i] && bc[2][i])
            bc[1 + g() % 2][i] = false;
    nd_spec s;
    s.w = w;
    s.dst_from_inputs = false;
    s.dst = dst;
    for (int op = 0; op < 3; ++op) {
        int lead = 0;
        while (lead < rank && bc[op][lead])
            ++lead;
        const int drop = lead ? static_cast<int>(g() % (lead + 1)) : 0;
        for (int i = drop; i < rank; ++i)
            s.in[op].push_back(bc[op][i] ? 1 : dst[i]);
        s.strides[op] =
                random_strides(s.in[op], pick_layout(g, strided, false), g);
    }
    s.strides[3] = random_strides(dst, pick_layout(g, strided, true), g);
    random_case rc;
    // In place: src_0 unbroadcast with dst's layout.
    if (g() % 6 == 0 && s.in[1] == dst) {
        s.strides[1] = s.strides[3];
        rc.in_place = true;
    }
    rc.p = make_nd(s);
    return rc;
}

TEST_P(kernel_nd, Ranks0To8) {
    std::mt19937_64 g(1234);
    int fails = 0;
    for (int rank = 0; rank <= 8; ++rank)
        for (int i = 0; i < 120; ++i) {
            const int w = 8 >> (i % 4);
            const random_case rc = random_nd(g, rank, 3000, w, false, false);
            plan_run_opts o;
            o.in_place = rc.in_place;
            KT_EXPECT(fails, run_plan_case(rc.p, kisa(), o, g),
                      "rank " + std::to_string(rank) + " " + nd_str(rc.p));
        }
    // Rank 0: every operand 0-D, and all-ones shapes up to rank 8.
    for (int w : { 8, 4, 2, 1 })
        for (int rank = 0; rank <= 8; ++rank) {
            const dims_t ones(rank, 1);
            const si::select_nd p = make_nd(ones, {}, ones, w);
            EXPECT_EQ(p.nelems(), 1);
            KT_EXPECT(fails, run_plan_case(p, kisa(), plan_run_opts(), g),
                      nd_str(p));
        }
}

TEST_P(kernel_nd, ZeroSizeDims) {
    std::mt19937_64 g(77);
    const std::vector<std::vector<dims_t>> shapes = {
        { { 0 }, { 0 }, { 0 } },
        { { 3, 0 }, { 3, 0 }, {} },
        { { 0, 5 }, { 0, 5 }, { 0, 5 } },
        { { 1, 0 }, { 4, 0 }, { 1 } },
        { {}, { 2, 0, 7 }, { 2, 1, 7 } },
        { { 5, 1 }, { 5, 0 }, { 5, 0 } },
        { { 0, 1, 64 }, { 0, 3, 64 }, { 1, 3, 64 } },
        { { 2, 3, 0, 4 }, { 2, 3, 0, 4 }, {} },
    };
    int fails = 0;
    for (int w : { 8, 4, 2, 1 })
        for (const auto &sh : shapes) {
            const si::select_nd p = make_nd(sh[0], sh[1], sh[2], w);
            ASSERT_EQ(p.nelems(), 0) << nd_str(p);
            si::select_plan plan;
            ASSERT_NO_THROW(plan = si::plan_select(p, 0)) << nd_str(p);
            // Null pointers: nothing may be touched.
            ASSERT_NO_THROW(si::execute_plan(plan, p, nullptr, nullptr, nullptr,
                                             nullptr, 2))
                    << nd_str(p);
            ASSERT_NO_THROW(
                    si::ref_select(p, nullptr, nullptr, nullptr, nullptr, 2));
            // Real (canaried, empty) buffers stay untouched.
            KT_EXPECT(fails, run_plan_case(p, kisa(), plan_run_opts(), g),
                      nd_str(p));
        }
}

TEST_P(kernel_nd, StridedInputsAndOutputs) {
    auto &g = rng();
    int fails = 0;
    for (int w : { 8, 4, 2 })
        for (int64_t n : { 1, 5, 16, 17, 33, 64, 100, 257 }) {
            const int64_t r = 3;
            struct strided_case {
                const char *name;
                int port;
                dims_t strides;
                bool jit;
            };
            const std::vector<strided_case> cases = {
                // Rows of one element: the padded pitch is a step along
                // the row, gathered (dst: scattered) by the stepped
                // kernel, as are operands with a step.
                { "src0_padded_rows", 1, { n + 7, 1 }, true },
                { "src1_padded_rows", 2, { n + 1, 1 }, true },
                { "cond_padded_rows", 0, { n + 3, 1 }, true },
                { "dst_padded_rows", 3, { n + 5, 1 }, true },
                { "src0_inner_stride2", 1, { 2 * n, 2 }, true },
                { "src1_inner_stride3", 2, { 3 * n + 1, 3 }, true },
                { "cond_inner_stride2", 0, { 2 * n, 2 }, true },
                { "dst_inner_stride2", 3, { 2 * n, 2 }, true },
                { "src0_transposed", 1, { 1, r }, true },
                { "dst_transposed", 3, { 1, r }, true },
            };
            for (const auto &sc : cases) {
                nd_spec s;
                s.w = w;
                for (int op = 0; op < 3; ++op)
                    s.in[op] = { r, n };
                s.strides[sc.port] = sc.strides;
                const si::select_nd p = make_nd(s);
                EXPECT_EQ(expect_jit_able(p), sc.jit) << sc.name;
                plan_run_opts o;
                KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                          std::string(sc.name) + " " + nd_str(p));
                o.working_set = si::nt_candidate_bytes();
                KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                          std::string(sc.name) + " (nt) " + nd_str(p));
            }
            // Inner stride 0 given explicitly for a full-size dim: the
            // operand reads one element per row (a scalar to the kernel).
            nd_spec s;
            s.w = w;
            for (int op = 0; op < 3; ++op)
                s.in[op] = { r, n };
            s.strides[2] = { 1, 0 };
            const si::select_nd p = make_nd(s);
            KT_EXPECT(fails, run_plan_case(p, kisa(), plan_run_opts(), g),
                      "src1_explicit_stride0 " + nd_str(p));
            // Both sources scalar along the row (cv_as_bs): the only way
            // to it is explicit zero strides, cond may not enlarge dst.
            s.strides[1] = { 1, 0 };
            s.strides[2] = { 0, 0 };
            const si::select_nd q = make_nd(s);
            KT_EXPECT(fails, run_plan_case(q, kisa(), plan_run_opts(), g),
                      "both_src_explicit_stride0 " + nd_str(q));
            plan_run_opts o;
            o.working_set = si::nt_candidate_bytes();
            KT_EXPECT(fails, run_plan_case(q, kisa(), o, g),
                      "both_src_explicit_stride0 (nt) " + nd_str(q));
        }
}

TEST_P(kernel_nd, InPlaceDstIsSrc0) {
    auto &g = rng();
    int fails = 0;
    for (int w : { 8, 4, 2, 1 })
        for (uint64_t un : sweep_sizes()) {
            const auto n = static_cast<int64_t>(un);
            for (const auto &pt : broadcast_patterns(3, n)) {
                const si::select_nd p = make_nd(pt.c, pt.a, pt.b, w);
                if (dims_t(p.dims, p.dims + p.ndims) != pt.a)
                    continue; // src_0 is broadcast: not an in-place pair
                plan_run_opts o;
                o.in_place = true;
                o.nthreads = 2;
                KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                          std::string(pt.name) + " in place " + nd_str(p));
            }
        }
}

TEST_P(kernel_nd, WidenedShortRows) {
    // Channels-last data [N,C,H,W] (NHWC strides) with a per-channel
    // operand [1,C,1,1]: rows of C elements that widen to rep * C, the
    // per-channel row repeated rep times from a buffer (broadcast.cpp, step
    // 6). Checked bit for bit, with threads and the non-temporal kernel,
    // and the widening itself against the rule worked by hand.
    auto &g = rng();
    int fails = 0;
    auto nhwc = [](int64_t c, int64_t h, int64_t w) {
        return dims_t { h * w * c, 1, w * c, c };
    };
    for (int w : { 4, 2, 1 })
        for (int64_t c : { 3, 16, 17, 64 })
            for (int64_t hw : { 7, 12 }) {
                const int64_t n = 2, h = 1;
                const dims_t act = { n, c, h, hw }, chan = { 1, c, 1, 1 };
                for (int port : { 0, 2 }) { // cond, then src_1 per channel
                    nd_spec sp;
                    sp.w = w;
                    for (int op = 0; op < 3; ++op) {
                        sp.in[op] = op == port ? chan : act;
                        if (op != port)
                            sp.strides[op] = nhwc(c, h, hw);
                    }
                    sp.strides[3] = nhwc(c, h, hw);
                    const si::select_nd p = make_nd(sp);
                    const si::select_folded f = si::fold_select(p);
                    // Outer dims N*H*W merge (the per-channel operand is
                    // broadcast along all of them) into m = 2 * hw; rows of
                    // C under 1 KiB widen by m's largest divisor k with
                    // k * C <= 1024.
                    const int64_t m = n * h * hw;
                    int64_t k = 1;
                    if (c * w < 1024)
                        for (int64_t d = std::min<int64_t>(m, 1024 / c); d >= 2;
                             --d)
                            if (m % d == 0) {
                                k = d;
                                break;
                            }
                    EXPECT_EQ(f.rep, k) << si::folded2str(f);
                    EXPECT_EQ(f.inner(), k * c) << si::folded2str(f);
                    EXPECT_EQ(f.rows(), m / k) << si::folded2str(f);
                    if (k > 1) {
                        EXPECT_EQ(f.rep_mask, 1u << port);
                    }
                    for (int nthr : { 1, 3 }) {
                        plan_run_opts o;
                        o.nthreads = nthr;
                        o.working_set =
                                nthr == 3 ? si::nt_candidate_bytes() : 0;
                        KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                                  "per-channel port " + std::to_string(port)
                                          + " " + nd_str(p));
                    }
                }
            }
    // Not widened: the short-row operand differs per sample (cond [N,C]
    // broadcast along H, W only), or a cond constant per row.
    const si::select_nd per_sample =
            make_nd({ 2, 16, 1, 1 }, { 2, 16, 5, 8 }, { 2, 16, 5, 8 }, 4);
    EXPECT_EQ(si::fold_select(per_sample).rep, 1);
    const si::select_nd per_row = make_nd({ 30, 1 }, { 30, 8 }, { 8 }, 4);
    EXPECT_EQ(si::fold_select(per_row).rep, 1);
    KT_EXPECT(fails, run_plan_case(per_row, kisa(), plan_run_opts(), g),
              nd_str(per_row));
}

TEST_P(kernel_nd, NonTemporalPlan) {
    // Above nt_candidate_bytes() the plan carries kernel_nt; execute uses it
    // for a dst aligned to the element size, at any such offset.
    auto &g = rng();
    int fails = 0;
    const size_t thr = si::nt_candidate_bytes();
    for (int w : { 8, 4, 2, 1 })
        for (int64_t n : { 1, 15, 16, 17, 63, 64, 65, 129, 1000 }) {
            const si::select_nd p = make_nd({ 3, n }, { 3, n }, {}, w);
            if (jit()) {
                EXPECT_FALSE(si::plan_select(p, thr - 1).kernel_nt);
                const si::select_plan pl = si::plan_select(p, thr);
                ASSERT_TRUE(pl.kernel_nt);
                EXPECT_EQ(pl.kernel_nt->key().nt_stores, 1);
                EXPECT_NE(pl.kernel_str().find("|"), std::string::npos);
            }
            for (size_t mis = 0; mis < 64; mis += static_cast<size_t>(w)) {
                plan_run_opts o;
                o.working_set = thr;
                o.misd = mis;
                o.mis0 = mis / 2 / w * w; // element-aligned sources
                KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                          nd_str(p) + " dst offset " + std::to_string(mis));
            }
            if (w > 1 && jit()) {
                // A dst not aligned to the element size: execute_plan must
                // use the plain JIT kernel (the nt head assumes w-aligned
                // dst). Not for the reference kernel, which accesses
                // elements as typed words.
                ASSERT_TRUE(si::plan_select(p, thr).kernel_nt);
                plan_run_opts o;
                o.working_set = thr;
                o.misd = 1;
                KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                          nd_str(p) + " dst offset 1");
            }
        }
}

TEST_P(kernel_nd, ThreadsSplitRowsAndChunks) {
    // Large enough for execute_plan to use several threads: few long rows
    // (split into 64-element chunks), many rows (split across outer dims),
    // one row, with nthreads that do not divide the work.
    auto &g = rng();
    int fails = 0;
    struct big {
        dims_t c, a, b;
    };
    const std::vector<big> cases = {
        { { 2, 50001 }, { 2, 50001 }, {} },
        { { 50001 }, { 2, 50001 }, { 2, 1 } },
        { { 37, 3001 }, { 37, 3001 }, { 37, 3001 } },
        { { 7, 1 }, { 5, 7, 3000 }, { 1, 7, 3000 } },
        { { 1, 1, 100, 100 }, { 2, 5, 100, 100 }, {} },
        { {}, { 100003 }, { 100003 } },
        { { 100003 }, { 1 }, { 100003 } },
        { { 3000, 1 }, { 3000, 40 }, { 40 } },
    };
    for (int w : { 8, 4, 2 })
        for (const auto &bc : cases) {
            const si::select_nd p = make_nd(bc.c, bc.a, bc.b, w);
            for (int nthr : { 1, 2, 3, 4, 7 }) {
                plan_run_opts o;
                o.nthreads = nthr;
                o.check_naive = nthr == 1;
                o.working_set = nthr == 3 ? si::nt_candidate_bytes() : 0;
                o.misd = nthr == 7 ? static_cast<size_t>(w) : 0;
                KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                          nd_str(p) + " nthreads " + std::to_string(nthr));
            }
        }
}

TEST_P(kernel_nd, RandomShapes) {
    std::mt19937_64 g(20240611);
    int fails = 0;
    int jit_cases = 0;
    const int count = 6000;
    for (int i = 0; i < count; ++i) {
        const int rank = static_cast<int>(g() % 7);
        const int w = 8 >> (i % 4);
        const int64_t max_elems = i % 50 == 0 ? 60000 : 2000;
        const random_case rc = random_nd(g, rank, max_elems, w, true, true);
        plan_run_opts o;
        o.in_place = rc.in_place;
        o.nthreads = 1 + static_cast<int>(g() % 3);
        o.working_set = g() % 4 == 0 ? si::nt_candidate_bytes() : 0;
        o.misd = (g() % 4) * static_cast<size_t>(w);
        o.mis0 = (g() % 3) * static_cast<size_t>(w);
        o.check_naive = max_elems < 10000;
        jit_cases += expect_jit_able(rc.p) && rc.p.nelems() > 0;
        KT_EXPECT(fails, run_plan_case(rc.p, kisa(), o, g),
                  "random case " + std::to_string(i) + " " + nd_str(rc.p)
                          + (rc.in_place ? " in place" : ""));
    }
    // The generator must mostly produce JIT-able problems, so that the JIT
    // is what these cases test.
    EXPECT_GT(jit_cases, count / 2);
}

TEST_P(kernel_nd, RandomLargeShapesThreaded) {
    // Random problems big enough for execute_plan's thread split (rows,
    // outer dims and 64-element chunks), with 2 to 4 threads.
    std::mt19937_64 g(777);
    int fails = 0;
    for (int i = 0; i < 150; ++i) {
        const int w = 8 >> (i % 4);
        random_case rc;
        for (int tries = 0; tries < 100; ++tries) {
            const int rank = 1 + static_cast<int>(g() % 5);
            rc = random_nd(g, rank, 150000, w, true, false);
            if (rc.p.nelems() >= 20000)
                break;
        }
        plan_run_opts o;
        o.in_place = rc.in_place;
        o.nthreads = 2 + static_cast<int>(g() % 3);
        o.working_set = g() % 2 ? si::nt_candidate_bytes() : 0;
        o.misd = (g() % 4) * static_cast<size_t>(w);
        o.check_naive = false;
        KT_EXPECT(fails, run_plan_case(rc.p, kisa(), o, g),
                  "large random case " + std::to_string(i) + " " + nd_str(rc.p)
                          + " nthreads " + std::to_string(o.nthreads));
    }
}

TEST_P(kernel_nd, CondBytesAllValuesThroughPlan) {
    // A row-vector cond holding every byte value, broadcast over rows;
    // expected values written out independently of ref_select.
    for (int w : { 8, 4, 2, 1 }) {
        const int64_t n = 256, r = 3;
        const si::select_nd p = make_nd({ n }, { r, n }, {}, w);
        const si::select_plan plan = si::plan_select(p, 0);
        ASSERT_TRUE(plan_takes(plan, kisa(), jit()));
        std::vector<uint8_t> cond(n), a(r * n * w), b(w), dst(r * n * w),
                want(r * n * w);
        for (int64_t i = 0; i < n; ++i)
            cond[i] = static_cast<uint8_t>(i);
        fill_values(a.data(), r * n, w, rng());
        // -inf of f64, f32 and bf16; an f8_e5m2 -inf for one byte.
        const uint64_t neg_inf = w == 8   ? 0xfff0000000000000ull
                                 : w == 4 ? 0xff800000u
                                 : w == 2 ? 0xff80u
                                          : 0xfcu;
        std::memcpy(b.data(), &neg_inf, w);
        for (int64_t i = 0; i < r * n; ++i)
            std::memcpy(&want[i * w], cond[i % n] ? &a[i * w] : b.data(), w);
        si::execute_plan(plan, p, cond.data(), a.data(), b.data(), dst.data(),
                         2);
        EXPECT_TRUE(bytes_equal(dst.data(), want.data(), dst.size(), w))
                << "w=" << w;
    }
}

SELGRAPH_INSTANTIATE_PER_ISA(kernel_nd);

TEST(kernel_nd_ref, ReferenceMatchesNaiveAtAnyThreadCount) {
    // ref_select, the oracle of every other test, against the naive loop:
    // ranks 1 to 5 whose outer dims wrap, rows longer than its blocks
    // (16384 elements), cond one byte per row (a copy from the chosen
    // source), src_1 every other element, dst padded or permuted, src_0
    // broadcast; 1 to 3 threads, every element size.
    std::mt19937_64 g(2911);
    int fails = 0;
    for (int w : { 1, 2, 4, 8 })
        for (const dims_t &d :
             { dims_t { 37 }, dims_t { 3, 5, 7 }, dims_t { 2, 3, 4, 5 },
               dims_t { 2, 1, 3, 2, 9 }, dims_t { 3, 40000 },
               dims_t { 2, 2, 16385 } })
            for (int kind = 0; kind < 5; ++kind) {
                const int nd = static_cast<int>(d.size());
                nd_spec s = full_spec(d, w);
                perm_t order(d.size());
                for (int k = 0; k < nd; ++k)
                    order[static_cast<size_t>(k)] = k;
                if (kind == 1) {
                    // cond one byte per row
                    s.in[0].back() = 1;
                } else if (kind == 2) {
                    // src_1 every other element of its row
                    s.strides[2] = perm_strides(d, order);
                    for (auto &x : s.strides[2])
                        x *= 2;
                } else if (kind == 3) {
                    // dst padded, cond per row, src_0 reversed order
                    s.in[0].back() = 1;
                    s.strides[3] = perm_strides(d, order, 3);
                    std::reverse(order.begin(), order.end());
                    s.strides[1] = perm_strides(d, order);
                } else if (kind == 4) {
                    // src_0 broadcast along dim 0, dst in reversed order
                    s.in[1][0] = 1;
                    std::reverse(order.begin(), order.end());
                    s.strides[3] = perm_strides(d, order);
                }
                const si::select_nd p = make_nd(s);
                nd_buffers b(p, g);
                std::vector<uint8_t> want(b.dst.data(),
                                          b.dst.data() + b.dst.size());
                const std::vector<uint8_t> init(want);
                naive_select(p, b.cond.data(), b.src0.data(), b.src1.data(),
                             want.data());
                for (int nthr : { 1, 2, 3 }) {
                    std::vector<uint8_t> got(init);
                    si::ref_select(p, b.cond.data(), b.src0.data(),
                                   b.src1.data(), got.data(), nthr);
                    KT_EXPECT(
                            fails,
                            bytes_equal(got.data(), want.data(), got.size(), w),
                            "kind " + std::to_string(kind) + " threads "
                                    + std::to_string(nthr) + " " + nd_str(p));
                }
            }
}

} // namespace
} // namespace selgraph_test
