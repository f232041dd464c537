// Values: dst = cond ? src_0 : src_1, compared bit for bit with expected
// outputs computed in the test (the spec's examples, direct formulas, or the
// naive broadcast loop of api_test_utils.hpp).
#include "tests/api_test_utils.hpp"

using namespace sgt;
using selgraph::tensor;

namespace {

const dt value_types[] = { dt::f32, dt::bf16, dt::f16 };

// Raw element buffers: element i holds the low elem_size(t) bytes of w[i].
std::vector<uint8_t> pack(dt t, const std::vector<uint32_t> &w) {
    const size_t es = elem_size(t);
    std::vector<uint8_t> out(w.size() * es);
    for (size_t i = 0; i < w.size(); ++i)
        std::memcpy(out.data() + i * es, &w[i], es); // little-endian
    return out;
}

uint32_t word_at(dt t, const uint8_t *p, size_t i) {
    uint32_t v = 0;
    std::memcpy(&v, p + i * elem_size(t), elem_size(t));
    return v;
}

uint32_t f32_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

struct exec_result {
    dims d;
    std::vector<uint8_t> bytes; // dense dst
};

// Dense operands; dst declared with unknown ndims and inferred.
exec_result exec_dense(dt t, const dims &cd, const dims &ad, const dims &bd,
                       const std::vector<uint8_t> &c,
                       const std::vector<uint8_t> &a,
                       const std::vector<uint8_t> &b,
                       const char *bcast = nullptr) {
    const lt lc(0, dt::boolean, cd, lyt::strided);
    const lt la(1, t, ad, lyt::strided);
    const lt lb(2, t, bd, lyt::strided);
    const lt ld(3, t, lyt::strided);
    auto cp = compile_select(lc, la, lb, ld, 50, bcast);
    const lt q = cp.query_logical_tensor(3);
    exec_result r;
    r.d = q.get_dims();
    const size_t n = q.get_mem_size();
    buffer out(n);
    out.fill(0xA5);
    cp.execute(cpu_stream(),
               { tensor(lc, cpu_engine(), const_cast<uint8_t *>(c.data())),
                 tensor(la, cpu_engine(), const_cast<uint8_t *>(a.data())),
                 tensor(lb, cpu_engine(), const_cast<uint8_t *>(b.data())) },
               { tensor(q, cpu_engine(), out.data()) });
    for (size_t i = n; i < out.bytes; ++i)
        EXPECT_EQ(out.data()[i], 0xA5) << "write past dst end at byte " << i;
    r.bytes.assign(out.data(), out.data() + n);
    return r;
}

} // namespace

// ---------------------------------------------------------------------------
// The spec examples

TEST(ApiSemantics, OpenVinoExample3x2) {
    // cond [[false, false], [true, false], [true, true]]
    // then [[-1, 0], [1, 2], [3, 4]], else [[11, 10], [9, 8], [7, 6]]
    // -> [[11, 10], [1, 8], [3, 4]]
    const std::vector<uint8_t> cond = { 0, 0, 1, 0, 1, 1 };
    const float then_v[6] = { -1, 0, 1, 2, 3, 4 };
    const float else_v[6] = { 11, 10, 9, 8, 7, 6 };
    const float want_v[6] = { 11, 10, 1, 8, 3, 4 };
    // The same values as f16 bit patterns (exact).
    const uint32_t then_h[6] = {
        0xBC00, 0x0000, 0x3C00, 0x4000, 0x4200, 0x4400
    };
    const uint32_t else_h[6] = {
        0x4980, 0x4900, 0x4880, 0x4800, 0x4700, 0x4600
    };
    const uint32_t want_h[6] = {
        0x4980, 0x4900, 0x3C00, 0x4800, 0x4200, 0x4400
    };
    for (dt t : value_types) {
        for (const char *bcast : { "numpy", "none" }) {
            SCOPED_TRACE(testing::Message() << dt_name(t) << " " << bcast);
            std::vector<uint32_t> a(6), b(6), w(6);
            for (int i = 0; i < 6; ++i) {
                if (t == dt::f16) {
                    a[i] = then_h[i];
                    b[i] = else_h[i];
                    w[i] = want_h[i];
                } else {
                    const int sh = t == dt::bf16 ? 16 : 0;
                    a[i] = f32_bits(then_v[i]) >> sh;
                    b[i] = f32_bits(else_v[i]) >> sh;
                    w[i] = f32_bits(want_v[i]) >> sh;
                }
            }
            const exec_result r =
                    exec_dense(t, { 3, 2 }, { 3, 2 }, { 3, 2 }, cond,
                               pack(t, a), pack(t, b), bcast);
            EXPECT_EQ(r.d, (dims { 3, 2 }));
            ASSERT_EQ(r.bytes.size(), 6 * elem_size(t));
            for (size_t i = 0; i < 6; ++i)
                EXPECT_EQ(word_at(t, r.bytes.data(), i), w[i])
                        << "element " << i;
            if (t == dt::f32) {
                float got[6];
                std::memcpy(got, r.bytes.data(), sizeof(got));
                for (int i = 0; i < 6; ++i)
                    EXPECT_EQ(got[i], want_v[i]);
            }
        }
    }
}

TEST(ApiSemantics, AttentionMask) {
    // cond [1,1,S,S] causal, src_0 [B,H,S,S] scores, src_1 0-D -inf.
    const int64_t B = 2, H = 3;
    const uint32_t neg_inf[3] = { 0xFF800000u, 0xFF80u, 0xFC00u };
    int ti = 0;
    for (dt t : value_types) {
        for (int64_t S : { 67, 128 }) {
            SCOPED_TRACE(testing::Message() << dt_name(t) << " S=" << S);
            std::vector<uint8_t> cond(S * S);
            for (int64_t i = 0; i < S; ++i)
                for (int64_t j = 0; j < S; ++j)
                    cond[i * S + j] = j <= i ? 1 : 0;
            std::mt19937 rng(static_cast<uint32_t>(S) + 17u * ti);
            std::vector<uint32_t> scores(B * H * S * S);
            for (auto &v : scores)
                v = rng() & (t == dt::f32 ? 0xFFFFFFFFu : 0xFFFFu);
            const exec_result r =
                    exec_dense(t, { 1, 1, S, S }, { B, H, S, S }, {}, cond,
                               pack(t, scores), pack(t, { neg_inf[ti] }));
            ASSERT_EQ(r.d, (dims { B, H, S, S }));
            size_t bad = 0;
            for (int64_t bh = 0; bh < B * H; ++bh)
                for (int64_t i = 0; i < S; ++i)
                    for (int64_t j = 0; j < S; ++j) {
                        const size_t e =
                                static_cast<size_t>((bh * S + i) * S + j);
                        const uint32_t want = j <= i ? scores[e] : neg_inf[ti];
                        if (word_at(t, r.bytes.data(), e) != want && bad++ < 5)
                            ADD_FAILURE() << "bh " << bh << " i " << i << " j "
                                          << j << ": got 0x" << std::hex
                                          << word_at(t, r.bytes.data(), e)
                                          << " want 0x" << want;
                    }
            EXPECT_EQ(bad, 0u);
        }
        ++ti;
    }
}

TEST(ApiSemantics, PerRowCond) {
    const int64_t R = 7, C = 300;
    for (dt t : value_types) {
        SCOPED_TRACE(dt_name(t));
        std::vector<uint8_t> cond = { 1, 0, 0x80, 0, 0xff, 2, 0 };
        std::mt19937 rng(5);
        std::vector<uint32_t> a(R * C), b(R * C);
        for (auto &v : a)
            v = rng();
        for (auto &v : b)
            v = rng();
        const exec_result r = exec_dense(t, { R, 1 }, { R, C }, { R, C }, cond,
                                         pack(t, a), pack(t, b));
        ASSERT_EQ(r.d, (dims { R, C }));
        const uint32_t mask = t == dt::f32 ? 0xFFFFFFFFu : 0xFFFFu;
        for (int64_t i = 0; i < R; ++i)
            for (int64_t j = 0; j < C; ++j) {
                const size_t e = static_cast<size_t>(i * C + j);
                const uint32_t want = (cond[i] ? a[e] : b[e]) & mask;
                ASSERT_EQ(word_at(t, r.bytes.data(), e), want)
                        << "row " << i << " col " << j;
            }
    }
}

TEST(ApiSemantics, PerRowCondWithBroadcastSources) {
    // cond [R,1]; src_0 a row vector [C]; src_1 a column [R,1].
    const int64_t R = 9, C = 131;
    for (dt t : value_types) {
        SCOPED_TRACE(dt_name(t));
        std::vector<uint8_t> cond(R);
        for (int64_t i = 0; i < R; ++i)
            cond[i] = static_cast<uint8_t>(i % 3 == 0 ? 0 : 0x40 * i);
        std::vector<uint32_t> a(C), b(R);
        for (int64_t j = 0; j < C; ++j)
            a[j] = 0x1000u + static_cast<uint32_t>(j);
        for (int64_t i = 0; i < R; ++i)
            b[i] = 0x7000u + static_cast<uint32_t>(i);
        const exec_result r = exec_dense(t, { R, 1 }, { C }, { R, 1 }, cond,
                                         pack(t, a), pack(t, b));
        ASSERT_EQ(r.d, (dims { R, C }));
        for (int64_t i = 0; i < R; ++i)
            for (int64_t j = 0; j < C; ++j)
                ASSERT_EQ(word_at(t, r.bytes.data(),
                                  static_cast<size_t>(i * C + j)),
                          cond[i] ? a[j] : b[i])
                        << "row " << i << " col " << j;
    }
}

TEST(ApiSemantics, ZeroDimCond) {
    const int64_t R = 5, C = 37;
    for (dt t : value_types) {
        for (uint8_t cv : { uint8_t(0), uint8_t(1), uint8_t(0x80),
                            uint8_t(0xff), uint8_t(2) }) {
            SCOPED_TRACE(testing::Message()
                         << dt_name(t) << " cond 0x" << std::hex << int(cv));
            std::vector<uint32_t> a(R * C), b(R * C);
            for (size_t i = 0; i < a.size(); ++i) {
                a[i] = 0x3000u + static_cast<uint32_t>(i);
                b[i] = 0x5000u + static_cast<uint32_t>(i);
            }
            const exec_result r = exec_dense(t, {}, { R, C }, { R, C }, { cv },
                                             pack(t, a), pack(t, b));
            ASSERT_EQ(r.d, (dims { R, C }));
            for (size_t i = 0; i < a.size(); ++i)
                ASSERT_EQ(word_at(t, r.bytes.data(), i), cv ? a[i] : b[i]) << i;
        }
    }
}

TEST(ApiSemantics, ZeroDimCondAndSources) {
    for (dt t : value_types) {
        SCOPED_TRACE(dt_name(t));
        // Everything 0-D.
        for (uint8_t cv : { uint8_t(0), uint8_t(0x80) }) {
            const exec_result r =
                    exec_dense(t, {}, {}, {}, { cv }, pack(t, { 0x1234u }),
                               pack(t, { 0x4321u }));
            EXPECT_EQ(r.d, dims {});
            ASSERT_EQ(r.bytes.size(), elem_size(t));
            EXPECT_EQ(word_at(t, r.bytes.data(), 0), cv ? 0x1234u : 0x4321u);
        }
        // 0-D cond and sources filling a vector of cond [N]: the scalar
        // sources become a fill.
        const int64_t N = 45;
        std::vector<uint8_t> cond(N);
        for (int64_t i = 0; i < N; ++i)
            cond[i] = static_cast<uint8_t>((i * 7) % 3);
        // cond [N] may not enlarge dst: the dst comes from src_0 [N].
        std::vector<uint32_t> a(N);
        for (int64_t i = 0; i < N; ++i)
            a[i] = 0x2000u + static_cast<uint32_t>(i);
        const exec_result r = exec_dense(t, { N }, { N }, {}, cond, pack(t, a),
                                         pack(t, { 0x7e00u }));
        ASSERT_EQ(r.d, dims { N });
        for (int64_t i = 0; i < N; ++i)
            ASSERT_EQ(word_at(t, r.bytes.data(), static_cast<size_t>(i)),
                      cond[i] ? a[i] : 0x7e00u)
                    << i;
        // src_0 0-D, src_1 full: the scalar is in the src_0 slot.
        std::vector<uint32_t> b(N);
        for (int64_t i = 0; i < N; ++i)
            b[i] = 0x6000u + static_cast<uint32_t>(i);
        const exec_result r2 = exec_dense(t, { N }, {}, { N }, cond,
                                          pack(t, { 0x0badu }), pack(t, b));
        ASSERT_EQ(r2.d, dims { N });
        for (int64_t i = 0; i < N; ++i)
            ASSERT_EQ(word_at(t, r2.bytes.data(), static_cast<size_t>(i)),
                      cond[i] ? 0x0badu : b[i])
                    << i;
    }
}

TEST(ApiSemantics, SpecialBitPatternsSurvive) {
    const std::vector<uint32_t> f32_special = {
        0x7fc01234u, // quiet NaN with payload
        0x7f800001u, // signalling NaN
        0xffc00001u, // negative NaN
        0x80000000u, // -0.0
        0x00000000u, // +0.0
        0x00000001u, // smallest denormal
        0x807fffffu, // negative denormal
        0x7f800000u, // +inf
        0xff800000u, // -inf
        0xffffffffu,
    };
    const std::vector<uint32_t> h_special = {
        0xffffu, 0x8000u, 0x7c01u, 0x7f81u, 0xff80u,
        0xfc00u, 0x0001u, 0x7e00u, 0x0000u, 0x83ffu,
    };
    for (dt t : value_types) {
        SCOPED_TRACE(dt_name(t));
        const auto &sp = t == dt::f32 ? f32_special : h_special;
        for (int64_t n : { 10, 100, 263 }) {
            std::vector<uint32_t> a(n), b(n);
            std::vector<uint8_t> cond(n);
            for (int64_t i = 0; i < n; ++i) {
                a[i] = sp[i % sp.size()];
                b[i] = sp[(i * 3 + 1) % sp.size()];
                cond[i] = static_cast<uint8_t>(
                        (i % 4 == 0)
                                ? 0
                                : (i % 4 == 1 ? 2
                                              : (i % 4 == 2 ? 0x80 : 0xff)));
            }
            const exec_result r = exec_dense(t, { n }, { n }, { n }, cond,
                                             pack(t, a), pack(t, b));
            for (int64_t i = 0; i < n; ++i)
                ASSERT_EQ(word_at(t, r.bytes.data(), static_cast<size_t>(i)),
                          cond[i] ? a[i] : b[i])
                        << "n " << n << " i " << i;
            // A special scalar as src_1.
            const uint32_t s = sp[0];
            const exec_result r2 = exec_dense(t, { n }, { n }, {}, cond,
                                              pack(t, a), pack(t, { s }));
            for (int64_t i = 0; i < n; ++i)
                ASSERT_EQ(word_at(t, r2.bytes.data(), static_cast<size_t>(i)),
                          cond[i] ? a[i] : s)
                        << "scalar src_1, n " << n << " i " << i;
        }
    }
}

TEST(ApiSemantics, EveryNonZeroCondByteIsTrue) {
    // Vector cond: one element per cond byte value 0..255, plus a tail.
    const int64_t n = 256 + 7;
    std::vector<uint8_t> cond(n);
    for (int64_t i = 0; i < n; ++i)
        cond[i] = static_cast<uint8_t>(i);
    for (dt t : value_types) {
        SCOPED_TRACE(dt_name(t));
        std::vector<uint32_t> a(n, 0x1111u), b(n, 0x2222u);
        const exec_result r = exec_dense(t, { n }, { n }, { n }, cond,
                                         pack(t, a), pack(t, b));
        for (int64_t i = 0; i < n; ++i)
            ASSERT_EQ(word_at(t, r.bytes.data(), static_cast<size_t>(i)),
                      cond[i] != 0 ? 0x1111u : 0x2222u)
                    << "cond byte 0x" << std::hex << int(cond[i]);
        // Per-row cond: one row per cond byte value.
        const int64_t C = 19;
        std::vector<uint8_t> rc(256);
        for (int i = 0; i < 256; ++i)
            rc[i] = static_cast<uint8_t>(255 - i);
        std::vector<uint32_t> ra(256 * C, 0x3333u), rb(256 * C, 0x4444u);
        const exec_result r2 = exec_dense(t, { 256, 1 }, { 256, C }, { 256, C },
                                          rc, pack(t, ra), pack(t, rb));
        for (int64_t i = 0; i < 256; ++i)
            for (int64_t j = 0; j < C; ++j)
                ASSERT_EQ(word_at(t, r2.bytes.data(),
                                  static_cast<size_t>(i * C + j)),
                          rc[i] != 0 ? 0x3333u : 0x4444u)
                        << "row cond byte 0x" << std::hex << int(rc[i]);
    }
}

// ---------------------------------------------------------------------------
// Broadcast patterns against the naive loop

TEST(ApiSemantics, BroadcastCombinations) {
    const int64_t R = 5, C = 70;
    const dims shapes[] = { { R, C }, { R, 1 }, { 1, C }, { C },
                            {},       { 1, 1 }, { 1 } };
    int n_run = 0;
    uint32_t seed = 100;
    for (dt t : value_types)
        for (const dims &a : shapes)
            for (const dims &b : shapes)
                for (const dims &c : shapes) {
                    dims d;
                    if (!numpy_broadcast(a, b, d) || !cond_fits(c, d))
                        continue;
                    select_case sc;
                    sc.type = t;
                    sc.cond = { c, {} };
                    sc.src0 = { a, {} };
                    sc.src1 = { b, {} };
                    sc.dst = { d, {} };
                    sc.seed = seed++;
                    run_select_case(sc);
                    ++n_run;
                    if (HasFatalFailure() || HasFailure())
                        return;
                }
    EXPECT_GT(n_run, 300);
}

TEST(ApiSemantics, SpecCondExamplesValues) {
    for (dt t : value_types) {
        for (const dims &c : { dims { 4, 5 }, dims { 3, 1, 5 } }) {
            select_case sc;
            sc.type = t;
            sc.cond = { c, {} };
            sc.src0 = { { 2, 3, 4, 5 }, {} };
            sc.src1 = { { 2, 3, 4, 5 }, {} };
            sc.dst = { { 2, 3, 4, 5 }, {} };
            run_select_case(sc);
        }
    }
}

TEST(ApiSemantics, RanksOneThroughEight) {
    std::mt19937 rng(2024);
    int n_run = 0;
    for (int rank = 1; rank <= 8; ++rank)
        for (int trial = 0; trial < 6; ++trial) {
            dims full(rank);
            int64_t total = 1;
            for (int i = 0; i < rank; ++i) {
                full[i] = i == rank - 1 ? 1 + rng() % 40 : 1 + rng() % 4;
                total *= full[i];
            }
            if (total > 8192)
                full[0] = 1;
            // Sources: some dims 1, possibly lower rank.
            auto derive = [&](const dims &from) {
                dims o = from;
                for (auto &x : o)
                    if (rng() % 3 == 0)
                        x = 1;
                const size_t drop = rng() % 3 == 0 ? rng() % (o.size() + 1) : 0;
                o.erase(o.begin(), o.begin() + static_cast<long>(drop));
                return o;
            };
            const dims a = derive(full);
            const dims b = rng() % 2 ? full : derive(full);
            dims d;
            ASSERT_TRUE(numpy_broadcast(a, b, d));
            const dims c = derive(d);
            ASSERT_TRUE(cond_fits(c, d));
            for (dt t : value_types) {
                select_case sc;
                sc.type = t;
                sc.cond = { c, {} };
                sc.src0 = { a, {} };
                sc.src1 = { b, {} };
                sc.dst = { d, {} };
                sc.seed = static_cast<uint32_t>(rank * 100 + trial);
                run_select_case(sc);
                ++n_run;
                if (HasFailure())
                    return;
            }
        }
    EXPECT_EQ(n_run, 8 * 6 * 3);
}

TEST(ApiSemantics, RankTwelve) {
    for (dt t : value_types) {
        select_case sc;
        sc.type = t;
        sc.src0 = { { 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 3, 17 }, {} };
        sc.src1 = { { 2, 2, 1, 2, 1, 2, 1, 3, 17 }, {} };
        sc.cond = { { 1, 1, 2, 1, 1, 1, 3, 1 }, {} };
        dims d;
        ASSERT_TRUE(numpy_broadcast(sc.src0.d, sc.src1.d, d));
        ASSERT_TRUE(cond_fits(sc.cond.d, d));
        sc.dst = { d, {} };
        run_select_case(sc);
    }
}

TEST(ApiSemantics, DstDeclaredWithUnknownDims) {
    for (dt t : value_types) {
        select_case sc;
        sc.type = t;
        sc.cond = { { 3, 1, 33 }, {} };
        sc.src0 = { { 2, 3, 1, 33 }, {} };
        sc.src1 = { { 4, 1 }, {} };
        sc.dst = { { 2, 3, 4, 33 }, {} };
        sc.dst_unknown_dims = true;
        run_select_case(sc);
    }
}

TEST(ApiSemantics, MisalignedDst) {
    for (dt t : value_types)
        for (size_t mis : { 1, 3 }) {
            select_case sc;
            sc.type = t;
            sc.cond = { { 6, 200 }, {} };
            sc.src0 = { { 6, 200 }, {} };
            sc.src1 = { { 200 }, {} };
            sc.dst = { { 6, 200 }, {} };
            sc.dst_misalign_elems = mis;
            run_select_case(sc);
        }
}

TEST(ApiSemantics, LargeParallel) {
    // Big enough for the threaded paths: many rows, and few long rows split
    // into chunks.
    for (dt t : value_types) {
        select_case sc;
        sc.type = t;
        sc.cond = { { 3, 100003 }, {} };
        sc.src0 = { { 3, 100003 }, {} };
        sc.src1 = { { 3, 1 }, {} };
        sc.dst = { { 3, 100003 }, {} };
        run_select_case(sc);
        select_case sc2;
        sc2.type = t;
        sc2.cond = { { 1, 1, 515 }, {} };
        sc2.src0 = { { 4, 64, 515 }, {} };
        sc2.src1 = { { 4, 64, 515 }, {} };
        sc2.dst = { { 4, 64, 515 }, {} };
        run_select_case(sc2);
    }
}

// ---------------------------------------------------------------------------
// Empty tensors

TEST(ApiSemantics, EmptyDstWritesNothing) {
    for (dt t : value_types) {
        SCOPED_TRACE(dt_name(t));
        struct empty_case {
            dims c, a, b, d;
        };
        const empty_case cases[] = {
            { { 0, 5 }, { 0, 5 }, { 0, 5 }, { 0, 5 } },
            { { 5 }, { 1, 5 }, { 0, 5 }, { 0, 5 } },
            { {}, { 3, 0, 4 }, { 4 }, { 3, 0, 4 } },
            { { 1 }, { 0 }, {}, { 0 } },
            { { 0, 1 }, { 0, 1 }, { 1, 1 }, { 0, 1 } },
        };
        for (const auto &ec : cases) {
            SCOPED_TRACE(dims_str(ec.d));
            const lt lc(0, dt::boolean, ec.c, lyt::strided);
            const lt la(1, t, ec.a, lyt::strided);
            const lt lb(2, t, ec.b, lyt::strided);
            const lt ld(3, t, lyt::strided);
            auto cp = compile_select(lc, la, lb, ld);
            const lt q = cp.query_logical_tensor(3);
            EXPECT_EQ(q.get_dims(), ec.d);
            EXPECT_EQ(q.get_mem_size(), 0u);
            // Real buffers for non-empty inputs, null for empty ones.
            std::vector<uint8_t> cbuf(64, 1), abuf(64, 2), bbuf(64, 3);
            auto h = [](const lt &l, std::vector<uint8_t> &v) -> void * {
                return l.get_mem_size() ? v.data() : nullptr;
            };
            std::vector<uint8_t> sentinel(128, 0x5A);
            cp.execute(cpu_stream(),
                       { tensor(lc, cpu_engine(), h(lc, cbuf)),
                         tensor(la, cpu_engine(), h(la, abuf)),
                         tensor(lb, cpu_engine(), h(lb, bbuf)) },
                       { tensor(q, cpu_engine(), sentinel.data()) });
            for (size_t i = 0; i < sentinel.size(); ++i)
                ASSERT_EQ(sentinel[i], 0x5A) << "byte " << i << " written";
            // A null dst handle is fine for an empty dst.
            EXPECT_NO_THROW(
                    cp.execute(cpu_stream(),
                               { tensor(lc, cpu_engine(), h(lc, cbuf)),
                                 tensor(la, cpu_engine(), h(la, abuf)),
                                 tensor(lb, cpu_engine(), h(lb, bbuf)) },
                               { tensor(q, cpu_engine(), nullptr) }));
            // The inputs were not written either.
            for (uint8_t x : abuf)
                ASSERT_EQ(x, 2);
        }
        // All-null handles when every tensor is empty.
        const lt lc(0, dt::boolean, { 0, 5 }, lyt::strided);
        const lt la(1, t, { 0, 5 }, lyt::strided);
        const lt lb(2, t, { 0, 5 }, lyt::strided);
        const lt ld(3, t, { 0, 5 }, lyt::strided);
        auto cp = compile_select(lc, la, lb, ld);
        EXPECT_NO_THROW(cp.execute(cpu_stream(),
                                   { tensor(lc, cpu_engine(), nullptr),
                                     tensor(la, cpu_engine(), nullptr),
                                     tensor(lb, cpu_engine(), nullptr) },
                                   { tensor(ld, cpu_engine(), nullptr) }));
    }
}

// ---------------------------------------------------------------------------
// Row lengths around the vector widths (tails), for every kind of row: cond
// vector or per-row, each source vector or scalar.

TEST(ApiSemantics, RowLengthsAndTails) {
    uint32_t seed = 1000;
    for (dt t : value_types)
        for (int64_t n = 1; n <= 150; ++n) {
            const int64_t rows = 3;
            struct pattern {
                dims c, a, b;
            };
            const pattern patterns[] = {
                { { rows, n }, { rows, n }, { rows, n } }, // all vectors
                { { rows, n }, { rows, n }, {} },          // src_1 scalar
                { { rows, n }, { rows, 1 }, { rows, n } }, // src_0 per row
                { { rows, 1 }, { rows, n }, { n } },       // cond per row
                { { rows, 1 }, { rows, 1 }, { n } },       // src_0 fill
                { { rows, 1 }, { rows, 1 }, { 1, 1 } },    // both scalar
                { {}, { rows, n }, { rows, n } },          // 0-D cond
                { { rows, n }, {}, { rows, n } },          // src_0 0-D
            };
            for (const auto &p : patterns) {
                dims d;
                ASSERT_TRUE(numpy_broadcast(p.a, p.b, d));
                ASSERT_TRUE(cond_fits(p.c, d));
                select_case sc;
                sc.type = t;
                sc.cond = { p.c, {} };
                sc.src0 = { p.a, {} };
                sc.src1 = { p.b, {} };
                sc.dst = { d, {} };
                sc.seed = seed++;
                run_select_case(sc);
                if (HasFailure())
                    return;
            }
        }
}

TEST(ApiSemantics, LargeRandomBroadcastsAndViews) {
    // Sizes big enough for the threaded paths, with broadcasts and padded
    // rows, against the naive loop.
    std::mt19937 rng(4242);
    for (int trial = 0; trial < 12; ++trial) {
        const dt t = value_types[trial % 3];
        const int64_t A = 1 + rng() % 6, B = 1 + rng() % 40,
                      C = 500 + rng() % 3000;
        const dims full { A, B, C };
        auto pick = [&](bool allow_scalar) {
            switch (rng() % (allow_scalar ? 5 : 4)) {
                case 0: return full;
                case 1: return dims { B, C };
                case 2: return dims { A, B, 1 };
                case 3: return dims { A, 1, C };
                default: return dims {};
            }
        };
        const dims a = trial % 2 ? full : pick(true);
        const dims b = pick(true);
        dims d;
        ASSERT_TRUE(numpy_broadcast(a, b, d));
        dims c = pick(true);
        if (!cond_fits(c, d))
            c = d;
        auto padded = [&](const dims &x) {
            if (x.empty() || rng() % 2)
                return dims {};
            dims s(x.size());
            int64_t acc = 1;
            for (size_t k = x.size(); k-- > 0;) {
                s[k] = acc;
                acc = acc * x[k] + static_cast<int64_t>(rng() % 9);
            }
            return s;
        };
        select_case sc;
        sc.type = t;
        sc.cond = { c, padded(c) };
        sc.src0 = { a, padded(a) };
        sc.src1 = { b, padded(b) };
        sc.dst = { d, padded(d) };
        sc.dst_misalign_elems = trial % 4 == 3 ? 1 : 0;
        sc.seed = static_cast<uint32_t>(trial);
        run_select_case(sc);
        if (HasFailure())
            return;
    }
}
