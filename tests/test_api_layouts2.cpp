// Permuted and transposed layouts through the public API (logical tensors
// with explicit strides), f32, bf16 and f16: channels-last data alone, with
// a per-channel cond or src_1, src_0 or dst channels-last over NCHW
// operands, transposed [N,N] operands, attention scores stored with the
// last two dims swapped. Results are compared bit for bit with a loop
// written here (gaps of dst and the bytes after it included), and in-place
// is reported for src_0 and dst exactly when their shapes and strides
// match in a channels-last layout. The binary runs once per ISA cap.
#include "tests/api_test_utils.hpp"

using namespace sgt;
using selgraph::tensor;

namespace {

const dt layout_types[] = { dt::f32, dt::bf16, dt::f16 };

/// An operand: dims and element strides (empty: dense row-major).
struct opnd {
    dims d;
    dims s;
};

dims strides_of(const opnd &o) {
    return o.s.empty() ? dense_strides(o.d) : o.s;
}

/// NCHW dims in channels-last memory order (N, H, W, C outermost first).
dims nhwc_strides(const dims &d) {
    return { d[1] * d[2] * d[3], 1, d[3] * d[1], d[1] };
}

/// The expected dst, element by element: for every index of dst (rank up
/// to 4), each input read at its own strides, right-aligned, index 0 along
/// its dims of 1.
void expected_select(const opnd &c, const opnd &a, const opnd &b, const opnd &d,
                     const uint8_t *cp, const uint8_t *ap, const uint8_t *bp,
                     uint8_t *dp, size_t es) {
    const size_t r = d.d.size();
    dims dd(4, 1), ds(4, 0), cs(4, 0), as(4, 0), bs(4, 0);
    const dims dst_st = strides_of(d);
    for (size_t k = 0; k < r; ++k) {
        dd[4 - r + k] = d.d[k];
        ds[4 - r + k] = dst_st[k];
    }
    auto place = [](const opnd &o, dims &out) {
        const dims st = strides_of(o);
        const size_t n = o.d.size();
        for (size_t k = 0; k < n; ++k)
            out[4 - n + k] = o.d[k] == 1 ? 0 : st[k];
    };
    place(c, cs);
    place(a, as);
    place(b, bs);
    for (int64_t i0 = 0; i0 < dd[0]; ++i0)
        for (int64_t i1 = 0; i1 < dd[1]; ++i1)
            for (int64_t i2 = 0; i2 < dd[2]; ++i2)
                for (int64_t i3 = 0; i3 < dd[3]; ++i3) {
                    auto off = [&](const dims &s) {
                        return i0 * s[0] + i1 * s[1] + i2 * s[2] + i3 * s[3];
                    };
                    const bool take_a = cp[off(cs)] != 0;
                    const uint8_t *src =
                            take_a ? ap + off(as) * es : bp + off(bs) * es;
                    std::memcpy(dp + off(ds) * es, src, es);
                }
}

lt make(size_t id, dt t, const opnd &o) {
    return o.s.empty() ? lt(id, t, o.d, lyt::strided) : lt(id, t, o.d, o.s);
}

/// Compiles and executes one layout case and compares it with
/// expected_select.
void run_layout_case(const char *name, dt t, const opnd &c, const opnd &a,
                     const opnd &b, const opnd &d, uint32_t seed) {
    SCOPED_TRACE(testing::Message()
                 << name << " " << dt_name(t) << " cond " << dims_str(c.d)
                 << dims_str(strides_of(c)) << " src_0 " << dims_str(a.d)
                 << dims_str(strides_of(a)) << " src_1 " << dims_str(b.d)
                 << dims_str(strides_of(b)) << " dst " << dims_str(d.d)
                 << dims_str(strides_of(d)));
    const size_t es = elem_size(t);
    const lt lc = make(0, dt::boolean, c);
    const lt la = make(1, t, a);
    const lt lb = make(2, t, b);
    const lt ld = make(3, t, d);
    selgraph::compiled_partition cp;
    try {
        cp = compile_select(lc, la, lb, ld, 11);
    } catch (const selgraph::error &e) {
        FAIL() << "compile failed: " << e.what();
    }
    const lt qd = cp.query_logical_tensor(3);
    ASSERT_EQ(qd.get_dims(), d.d);
    ASSERT_EQ(qd.get_strides(), strides_of(d));

    std::mt19937 rng(seed);
    const opnd *ins[3] = { &c, &a, &b };
    buffer in[3];
    for (int i = 0; i < 3; ++i) {
        const size_t n =
                static_cast<size_t>(span_elems(ins[i]->d, strides_of(*ins[i])));
        in[i] = buffer(n * (i == 0 ? 1 : es));
        if (i == 0)
            fill_cond(in[i].data(), in[i].bytes, rng);
        else
            fill_random(in[i].data(), in[i].bytes, rng);
    }
    const size_t dn = static_cast<size_t>(span_elems(d.d, strides_of(d))) * es;
    buffer out(dn), want(dn);
    out.fill(0x5c);
    want.fill(0x5c);
    expected_select(c, a, b, d, in[0].data(), in[1].data(), in[2].data(),
                    want.data(), es);
    cp.execute(cpu_stream(),
               { tensor(lc, cpu_engine(), in[0].data()),
                 tensor(la, cpu_engine(), in[1].data()),
                 tensor(lb, cpu_engine(), in[2].data()) },
               { tensor(qd, cpu_engine(), out.data()) });
    EXPECT_TRUE(same_bytes(out.data(), want.data(), out.bytes, es));
}

} // namespace

TEST(ApiLayouts2, ChannelsLastNamedCases) {
    const dims shapes[] = { { 2, 8, 5, 7 },
                            { 1, 17, 3, 33 },
                            { 2, 64, 4, 9 },
                            { 3, 3, 16, 1 },
                            { 2, 1, 5, 7 } };
    uint32_t seed = 1;
    for (dt t : layout_types)
        for (const dims &d : shapes) {
            const dims cl = nhwc_strides(d);
            const dims chan = { 1, d[1], 1, 1 };
            run_layout_case("all_nhwc", t, { d, cl }, { d, cl }, { d, cl },
                            { d, cl }, seed++);
            run_layout_case("nhwc_per_channel_cond", t, { chan, {} }, { d, cl },
                            { d, cl }, { d, cl }, seed++);
            run_layout_case("nhwc_per_channel_src1", t, { d, cl }, { d, cl },
                            { chan, {} }, { d, cl }, seed++);
            run_layout_case("src0_nhwc_rest_nchw", t, { d, {} }, { d, cl },
                            { d, {} }, { d, {} }, seed++);
            run_layout_case("dst_nhwc_rest_nchw", t, { d, {} }, { d, {} },
                            { d, {} }, { d, cl }, seed++);
            run_layout_case("dst_nhwc_per_channel_cond", t, { chan, {} },
                            { d, {} }, { d, {} }, { d, cl }, seed++);
            if (HasFailure())
                return;
        }
}

TEST(ApiLayouts2, FewChannelsBetweenChannelsLastAndNchw) {
    // Channel counts under a register tile's rows (AVX-512: calls of at
    // most a 16-byte lane of rows; AVX2: whole vectors within the
    // source's span, the last columns scalar), s8 and bf16 as well as f32,
    // pixel counts that leave column tails: channels-last inputs into an
    // NCHW dst, and the reverse.
    uint32_t seed = 300;
    for (dt t : { dt::s8, dt::bf16, dt::f32 })
        for (int64_t c : { 2, 3, 5, 9, 10, 12, 16, 17, 24, 31 })
            for (const dims &hw : { dims { 9, 13 }, dims { 16, 40 } }) {
                const dims d = { 2, c, hw[0], hw[1] };
                const dims cl = nhwc_strides(d);
                run_layout_case("nhwc_into_nchw", t, { d, cl }, { d, cl },
                                { d, cl }, { d, {} }, seed++);
                run_layout_case("nchw_into_nhwc", t, { d, {} }, { d, {} },
                                { d, {} }, { d, cl }, seed++);
                if (HasFailure())
                    return;
            }
}

TEST(ApiLayouts2, TransposedSquareOperands) {
    uint32_t seed = 100;
    for (dt t : layout_types)
        for (int64_t n : { 1, 2, 16, 17, 33, 64, 100 }) {
            const dims d = { n, n }, tr = { 1, n };
            run_layout_case("src0_transposed", t, { d, {} }, { d, tr },
                            { d, {} }, { d, {} }, seed++);
            run_layout_case("cond_transposed", t, { d, tr }, { d, {} },
                            { d, {} }, { d, {} }, seed++);
            if (HasFailure())
                return;
        }
}

TEST(ApiLayouts2, InputsWithEveryDimReversed) {
    // An input of [N, C, H, W] stored as [W, H, C, N] (layout case L22),
    // the rest row-major: rows of H x W in pieces of W for that input
    // (docs/broadcast-folding.md, step 7), and cond with a per-channel
    // src_1 beside a reversed src_0.
    uint32_t seed = 400;
    for (dt t : layout_types)
        for (const dims &d : { dims { 2, 8, 5, 7 }, dims { 17, 3, 4, 13 },
                               dims { 16, 4, 7, 56 }, dims { 33, 2, 3, 2 } }) {
            const dims rev = { 1, d[0], d[0] * d[1], d[0] * d[1] * d[2] };
            const dims chan = { 1, d[1], 1, 1 };
            run_layout_case("src0_reversed", t, { d, {} }, { d, rev },
                            { d, {} }, { d, {} }, seed++);
            run_layout_case("cond_reversed", t, { d, rev }, { d, {} },
                            { d, {} }, { d, {} }, seed++);
            run_layout_case("src0_reversed_per_channel_src1", t, { d, {} },
                            { d, rev }, { chan, {} }, { d, {} }, seed++);
            if (HasFailure())
                return;
        }
}

TEST(ApiLayouts2, AttentionScoresLastTwoDimsSwapped) {
    uint32_t seed = 200;
    for (dt t : layout_types)
        for (const dims &bhs : { dims { 2, 3, 17 }, dims { 1, 2, 64 },
                                 dims { 2, 2, 65 }, dims { 1, 1, 5 } }) {
            const int64_t B = bhs[0], H = bhs[1], S = bhs[2];
            const dims sc = { B, H, S, S }, mask = { 1, 1, S, S };
            const dims swapped = { H * S * S, S * S, 1, S };
            run_layout_case("scores_swapped", t, { mask, {} }, { sc, swapped },
                            { dims {}, {} }, { sc, {} }, seed++);
            run_layout_case("scores_and_dst_swapped", t, { mask, {} },
                            { sc, swapped }, { dims {}, {} }, { sc, swapped },
                            seed++);
            if (HasFailure())
                return;
        }
}

TEST(ApiLayouts2, LargerTiledCases) {
    // Problems big enough for several tiles and threads.
    uint32_t seed = 300;
    for (dt t : layout_types) {
        const dims d = { 300, 257 };
        run_layout_case("src0_transposed_300x257", t, { d, {} },
                        { d, { 1, 300 } }, { dims {}, {} }, { d, {} }, seed++);
        const dims e = { 2, 48, 17, 33 };
        run_layout_case("dst_nhwc_2x48x17x33", t, { e, {} }, { e, {} },
                        { e, {} }, { e, nhwc_strides(e) }, seed++);
        // Rows that are no multiple of a vector: ViT's scores (lines of
        // 197 elements, panels rather than streamed tiles) and 7 x 7
        // channels-last images (strips run as one row).
        const dims sc = { 2, 3, 197, 197 }, mask = { 1, 1, 197, 197 };
        run_layout_case("vit_scores_swapped", t, { mask, {} },
                        { sc, { 3 * 197 * 197, 197 * 197, 1, 197 } },
                        { dims {}, {} }, { sc, {} }, seed++);
        const dims l = { 3, 160, 7, 7 };
        run_layout_case("src0_nhwc_3x160x7x7", t, { l, {} },
                        { l, nhwc_strides(l) }, { l, {} }, { l, {} }, seed++);
        // Rows of 1023 elements, 4 bytes (2) short of 4 KiB (2 KiB) in f32
        // (bf16, f16), and of 1023 bytes of cond: the scratch rows are
        // padded to spread over L1's sets, so a strip no longer runs as one
        // row.
        const dims p = { 140, 1023 };
        run_layout_case("src0_transposed_140x1023", t, { p, {} },
                        { p, { 1, 140 } }, { p, {} }, { p, {} }, seed++);
        run_layout_case("cond_transposed_140x1023", t, { p, { 1, 140 } },
                        { p, {} }, { dims {}, {} }, { p, {} }, seed++);
        run_layout_case("dst_transposed_140x1023", t, { p, {} }, { p, {} },
                        { p, {} }, { p, { 1, 140 } }, seed++);
        // A dst whose rows are 4 bytes (2) short of 4 KiB (2 KiB) apart:
        // its transpose runs in bands of 128 of those rows (300: two bands
        // and 44 rows).
        const dims q = { 1023, 300 };
        run_layout_case("dst_transposed_1023x300", t, { q, {} }, { q, {} },
                        { q, {} }, { q, { 1, 1023 } }, seed++);
        // Rows too wide for panels of 128 rows in 1 MiB: narrower panels
        // (src_0 f32: 48 rows, 2-byte: 112; dst f32: 16, 2-byte: 48) and
        // a last panel of the rows left.
        const dims wa = { 300, 4100 }, wd = { 300, 8200 };
        run_layout_case("src0_transposed_300x4100", t, { wa, {} },
                        { wa, { 1, 300 } }, { wa, {} }, { wa, {} }, seed++);
        run_layout_case("dst_transposed_300x8200", t, { wd, {} }, { wd, {} },
                        { dims {}, {} }, { wd, { 1, 300 } }, seed++);
    }
}

TEST(ApiLayouts2, RowVectorsInTiles) {
    // A per-channel operand ([1, C, 1, 1] or [N, C, 1, 1]) over
    // channels-last inputs, with dst (or src_1) in NCHW: the tiles' rows
    // are C elements, and the row kernel reads the per-channel operand
    // from its row repeated up to 1024 elements (C = 100: 10 rows at a
    // time and the rows left of each strip; [N, C, 1, 1]: a new row per
    // image).
    uint32_t seed = 400;
    for (dt t : layout_types)
        for (int64_t c : { 3, 16, 100 }) {
            const dims d = { 2, c, 17, 33 }, pc = { 1, c, 1, 1 },
                       pn = { 2, c, 1, 1 };
            const dims cl = nhwc_strides(d);
            run_layout_case("nhwc_per_channel_cond_dst_nchw", t, { pc, {} },
                            { d, cl }, { d, cl }, { d, {} }, seed++);
            run_layout_case("nhwc_per_image_channel_cond_dst_nchw", t,
                            { pn, {} }, { d, cl }, { d, cl }, { d, {} },
                            seed++);
            run_layout_case("nhwc_per_channel_src1_src0_nchw", t, { d, cl },
                            { d, {} }, { pc, {} }, { d, cl }, seed++);
            if (HasFailure())
                return;
        }
    // Inputs stored in the order (2, 0, 3, 1) and dst in (2, 3, 1, 0),
    // outermost first, with a per-channel cond: the fold follows the inputs
    // and transposes dst; its rows of C elements merge with dim 3 (dst is
    // contiguous across the two as well), the cond repeated, and the tile
    // dim is dim 0.
    const auto strides_in_order = [](const dims &d, const dims &order) {
        dims st(d.size());
        int64_t acc = 1;
        for (size_t k = order.size(); k-- > 0;) {
            st[static_cast<size_t>(order[k])] = acc;
            acc *= d[static_cast<size_t>(order[k])];
        }
        return st;
    };
    for (dt t : layout_types)
        for (const dims &d : { dims { 5, 6, 20, 7 }, dims { 33, 3, 9, 40 } }) {
            const dims pc = { 1, d[1], 1, 1 };
            const dims si = strides_in_order(d, { 2, 0, 3, 1 });
            const dims sd = strides_in_order(d, { 2, 3, 1, 0 });
            run_layout_case("per_channel_cond_dst_in_another_order", t,
                            { pc, {} }, { d, si }, { d, si }, { d, sd },
                            seed++);
            if (HasFailure())
                return;
        }
}

namespace {

// get_inplace_ports of a Select whose src_0 and dst have the given shape and
// strides.
std::vector<std::pair<size_t, size_t>>
inplace_of(dt t, const dims &d, const dims &a_st, const dims &d_st) {
    const lt c(0, dt::boolean, d, lyt::strided);
    const lt a(1, t, d, a_st);
    const lt b(2, t, dims {}, lyt::strided);
    const lt o(3, t, d, d_st);
    return compile_select(c, a, b, o, 12).get_inplace_ports();
}

} // namespace

TEST(ApiLayouts2, InplaceInChannelsLast) {
    for (dt t : layout_types) {
        SCOPED_TRACE(dt_name(t));
        const dims d = { 2, 16, 5, 7 };
        const dims cl = nhwc_strides(d);
        // Padded channels-last: a pixel pitch of 20 for 16 channels.
        const dims clp = { 5 * 7 * 20, 1, 7 * 20, 20 };
        for (const dims &st : { cl, clp }) {
            const auto pairs = inplace_of(t, d, st, st);
            ASSERT_EQ(pairs.size(), 1u) << dims_str(st);
            EXPECT_EQ(pairs[0].first, 1u);
            EXPECT_EQ(pairs[0].second, 3u);
        }
        EXPECT_TRUE(inplace_of(t, d, cl, dense_strides(d)).empty());
        EXPECT_TRUE(inplace_of(t, d, dense_strides(d), cl).empty());
        EXPECT_TRUE(inplace_of(t, d, clp, cl).empty());
        EXPECT_TRUE(inplace_of(t, d, cl, clp).empty());
        // N, W, H, C: channels-last with H and W swapped.
        EXPECT_TRUE(
                inplace_of(t, d, { 5 * 7 * 16, 1, 16, 5 * 16 }, cl).empty());

        // Executed in place: dst's handle is src_0's, a per-channel cond.
        const size_t es = elem_size(t);
        const dims chan = { 1, 16, 1, 1 };
        const lt lc(0, dt::boolean, chan, lyt::strided);
        const lt la(1, t, d, clp);
        const lt lb(2, t, dims {}, lyt::strided);
        const lt ld(3, t, d, clp);
        auto cp = compile_select(lc, la, lb, ld, 13);
        std::mt19937 rng(9);
        buffer c(16), b(es);
        fill_cond(c.data(), c.bytes, rng);
        fill_random(b.data(), b.bytes, rng);
        buffer io(static_cast<size_t>(span_elems(d, clp)) * es);
        fill_random(io.data(), io.bytes, rng);
        const buffer a_copy = io;
        buffer want = io;
        expected_select({ chan, {} }, { d, clp }, { dims {}, {} }, { d, clp },
                        c.data(), a_copy.data(), b.data(), want.data(), es);
        cp.execute(cpu_stream(),
                   { tensor(lc, cpu_engine(), c.data()),
                     tensor(la, cpu_engine(), io.data()),
                     tensor(lb, cpu_engine(), b.data()) },
                   { tensor(ld, cpu_engine(), io.data()) });
        EXPECT_TRUE(same_bytes(io.data(), want.data(), io.bytes, es));
    }
}

TEST(ApiLayouts2, RepeatedExecutesOfALargeTiledCase) {
    // Over 4 MiB touched per execute: the plan carries the non-temporal
    // variant and the store policy times both kinds over the executes;
    // every execute must give the same, right bytes.
    for (dt t : { dt::f32, dt::bf16 }) {
        SCOPED_TRACE(dt_name(t));
        const size_t es = elem_size(t);
        const int64_t R = 1100, C = 1031;
        const opnd c { { R, C }, { 1, R } }, a { { R, C }, { 1, R } },
                b { { C }, {} }, d { { R, C }, {} };
        const lt lc = make(0, dt::boolean, c), la = make(1, t, a),
                 lb = make(2, t, b), ld = make(3, t, d);
        auto cp = compile_select(lc, la, lb, ld, 14);
        std::mt19937 rng(21);
        buffer bc(static_cast<size_t>(R * C)),
                ba(static_cast<size_t>(R * C) * es),
                bb(static_cast<size_t>(C) * es);
        fill_cond(bc.data(), bc.bytes, rng);
        fill_random(ba.data(), ba.bytes, rng);
        fill_random(bb.data(), bb.bytes, rng);
        const size_t dn = static_cast<size_t>(R * C) * es;
        buffer want(dn);
        want.fill(0x33);
        expected_select(c, a, b, d, bc.data(), ba.data(), bb.data(),
                        want.data(), es);
        for (int rep = 0; rep < 12; ++rep) {
            buffer out(dn, static_cast<size_t>(rep % 3) * es);
            out.fill(0x33);
            cp.execute(cpu_stream(),
                       { tensor(lc, cpu_engine(), bc.data()),
                         tensor(la, cpu_engine(), ba.data()),
                         tensor(lb, cpu_engine(), bb.data()) },
                       { tensor(ld, cpu_engine(), out.data()) });
            ASSERT_TRUE(same_bytes(out.data(), want.data(), out.bytes, es))
                    << "execute " << rep;
        }
    }
}
