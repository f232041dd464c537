// auto_broadcast = "pdpd" (OpenVINO's PaddlePaddle-style broadcasting) with
// the axis attribute: every worked and every rejected case of the pdpd
// note, the attribute checks, and random pdpd shapes against an
// independent rule and an independent N-d reference, bit for bit.
#include "tests/api_test_utils.hpp"

using namespace sgt;

namespace {

// The pdpd rule for one operand `b` laid onto `a`, written from the note:
// rank(b) <= rank(a); axis -1 means rank(a) - rank(b); no axis below -1;
// trailing 1s of b ignored; each remaining dim of b equal to the dim of a
// it lies on, or 1; b must not run past a's last dim. Returns false when
// rejected; `at` is the dim of a where b's dim 0 lies.
bool pdpd_rule(const dims &b, const dims &a, int64_t axis, int &at) {
    if (axis < -1 || b.size() > a.size())
        return false;
    const int64_t start =
            axis == -1 ? static_cast<int64_t>(a.size() - b.size()) : axis;
    size_t kept = b.size();
    while (kept > 0 && b[kept - 1] == 1)
        --kept;
    if (start + static_cast<int64_t>(kept) > static_cast<int64_t>(a.size()))
        return false;
    for (size_t j = 0; j < kept; ++j) {
        const int64_t x = b[j], y = a[start + j];
        if (x != 1 && x != y)
            return false;
    }
    at = static_cast<int>(start);
    return true;
}

// A pdpd Select case with the placements worked out by pdpd_rule.
select_case pdpd_case(dt t, const dims &c, const dims &a, const dims &b,
                      int64_t axis, uint32_t seed) {
    select_case sc;
    sc.type = t;
    sc.cond.d = c;
    sc.src0.d = a;
    sc.src1.d = b;
    sc.dst.d = a; // pdpd: dst is src_0's shape
    sc.bcast = "pdpd";
    sc.axis = axis;
    sc.seed = seed;
    const int64_t ax = axis == no_axis ? -1 : axis;
    EXPECT_TRUE(pdpd_rule(b, a, ax, sc.src1_at)) << "test case error";
    EXPECT_TRUE(pdpd_rule(c, a, ax, sc.cond_at)) << "test case error";
    return sc;
}

struct worked {
    dims c, a, b;
    int64_t axis;
    dims d;
};

// The worked cases of the pdpd note, in its order.
const std::vector<worked> &worked_cases() {
    static const std::vector<worked> v = {
        { { 2, 4 }, { 2, 4 }, { 2 }, 0, { 2, 4 } },
        { { 4 }, { 2, 4 }, { 4 }, 1, { 2, 4 } },
        { { 1 }, { 2, 4 }, { 4 }, 1, { 2, 4 } },
        { { 4 }, { 4, 2, 3, 8 }, { 4, 2, 3, 1 }, 0, { 4, 2, 3, 8 } },
        { { 3, 4 }, { 2, 3, 4, 5 }, { 3, 1 }, 1, { 2, 3, 4, 5 } },
        { { 5 }, { 2, 3, 4, 5 }, {}, -1, { 2, 3, 4, 5 } },
    };
    return v;
}

} // namespace

TEST(ApiPdpd, WorkedCasesShapes) {
    for (const auto &w : worked_cases()) {
        SCOPED_TRACE(testing::Message()
                     << "cond " << dims_str(w.c) << " src_0 " << dims_str(w.a)
                     << " src_1 " << dims_str(w.b) << " axis " << w.axis);
        const lt c(0, dt::boolean, w.c, lyt::strided);
        const lt a(1, dt::f32, w.a, lyt::strided);
        const lt b(2, dt::f32, w.b, lyt::strided);
        const lt d(3, dt::f32, lyt::any);
        const auto cp = compile_select(c, a, b, d, 60, "pdpd", w.axis);
        EXPECT_EQ(cp.query_logical_tensor(3).get_dims(), w.d);
        EXPECT_EQ(cp.query_logical_tensor(3).get_strides(), dense_strides(w.d));
    }
}

TEST(ApiPdpd, WorkedCasesValues) {
    uint32_t seed = 1;
    for (dt t : { dt::f32, dt::f64, dt::s8, dt::bf16, dt::u64 })
        for (const auto &w : worked_cases())
            run_select_case(pdpd_case(t, w.c, w.a, w.b, w.axis, ++seed));
}

TEST(ApiPdpd, WorkedCaseByHand) {
    // cond [2,4], src_0 [2,4], src_1 [2] at axis 0: src_1[i] fills row i.
    const float then_v[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    const float else_v[2] = { -1, -2 };
    const uint8_t cond[8] = { 1, 0, 1, 0, 0, 0, 2, 255 };
    const lt c(0, dt::boolean, { 2, 4 }, lyt::strided);
    const lt a(1, dt::f32, { 2, 4 }, lyt::strided);
    const lt b(2, dt::f32, dims { 2 }, lyt::strided);
    const lt d(3, dt::f32, lyt::any);
    const auto cp = compile_select(c, a, b, d, 61, "pdpd", 0);
    float out[8] = {};
    cp.execute(
            cpu_stream(),
            { selgraph::tensor(c, cpu_engine(), const_cast<uint8_t *>(cond)),
              selgraph::tensor(a, cpu_engine(), const_cast<float *>(then_v)),
              selgraph::tensor(b, cpu_engine(), const_cast<float *>(else_v)) },
            { selgraph::tensor(cp.query_logical_tensor(3), cpu_engine(),
                               out) });
    const float want[8] = { 0, -1, 2, -1, -2, -2, 6, 7 };
    for (int i = 0; i < 8; ++i)
        EXPECT_EQ(out[i], want[i]) << i;
}

TEST(ApiPdpd, AxisDefaultsToMinusOne) {
    // No axis attribute: right-aligned, as axis -1.
    run_select_case(pdpd_case(dt::f32, { 5 }, { 2, 3, 4, 5 }, {}, no_axis, 3));
    run_select_case(pdpd_case(dt::s32, { 4, 5 }, { 2, 3, 4, 5 }, { 3, 1, 1 },
                              no_axis, 4));
    const lt c(0, dt::boolean, dims { 5 }, lyt::strided);
    const lt a(1, dt::f32, { 2, 5 }, lyt::strided);
    const lt b(2, dt::f32, dims { 5 }, lyt::strided);
    const lt d(3, dt::f32, lyt::any);
    EXPECT_EQ(compile_select(c, a, b, d, 62, "pdpd")
                      .query_logical_tensor(3)
                      .get_dims(),
              (dims { 2, 5 }));
}

TEST(ApiPdpd, RejectedCases) {
    struct rejected {
        dims c, a, b;
        int64_t axis;
        std::vector<std::string> subs;
    };
    const std::vector<rejected> cases = {
        // src_1 of higher rank than src_0.
        { { 4 }, { 2, 4 }, { 2, 2, 4 }, -1, { "src_1", "[2,2,4]", "[2,4]" } },
        { { 4 }, { 2, 4 }, { 1, 2, 4 }, 0, { "src_1", "[1,2,4]", "[2,4]" } },
        // A dim neither 1 nor equal: src_1 [3] at axis 0 onto [2,4].
        { { 4 }, { 2, 4 }, { 3 }, 0, { "src_1", "[3]", "[2,4]", "axis 0" } },
        // The same for cond.
        { { 3 }, { 2, 4 }, { 2 }, 0, { "cond", "[3]", "[2,4]", "axis 0" } },
        { { 2, 5 }, { 2, 4 }, { 4 }, -1, { "cond", "[2,5]", "[2,4]" } },
        // An axis below -1.
        { { 4 }, { 2, 4 }, { 4 }, -2, { "axis -2", "[2,4]" } },
        // Running past the last dim: src_1 [4,4] at axis 1 onto [2,4].
        { { 4 },
          { 2, 4 },
          { 4, 4 },
          1,
          { "src_1", "[4,4]", "[2,4]", "axis 1" } },
        { { 4 }, { 2, 4 }, { 4 }, 2, { "src_1", "[4]", "[2,4]", "axis 2" } },
        { { 2, 4 }, { 2, 4 }, { 4 }, 1, { "cond", "[2,4]", "axis 1" } },
        // src_0 is never broadcast (numpy would take this).
        { { 4 }, { 1, 4 }, { 2, 4 }, 0, { "src_1", "[2,4]", "[1,4]" } },
        // Trailing 1s are dropped, others are not: [4,1,2] does not fit.
        { { 4 }, { 2, 4 }, { 4, 1, 2 }, -1, { "src_1", "[4,1,2]" } },
        // The rank rule comes before trailing 1s are dropped.
        { {}, {}, { 1, 1 }, -1, { "src_1", "[1,1]", "[]" } },
        { { 1 }, {}, {}, 0, { "cond", "[1]", "[]" } },
    };
    for (const auto &r : cases) {
        const lt c(0, dt::boolean, r.c, lyt::strided);
        const lt a(1, dt::f64, r.a, lyt::strided);
        const lt b(2, dt::f64, r.b, lyt::strided);
        const lt d(3, dt::f64, lyt::any);
        const auto p = select_partition(c, a, b, d, 63, "pdpd", r.axis);
        int at = 0;
        EXPECT_FALSE(pdpd_rule(r.b, r.a, r.axis, at)
                     && pdpd_rule(r.c, r.a, r.axis, at))
                << "test case error";
        std::vector<std::string> subs = { "Select op 63", "pdpd" };
        subs.insert(subs.end(), r.subs.begin(), r.subs.end());
        ::sgt::expect_error(
                [&] {
                    p.compile({ c, a, b }, { d }, cpu_engine());
                },
                status::invalid_shape, subs, __FILE__, __LINE__,
                ("cond " + dims_str(r.c) + " src_0 " + dims_str(r.a) + " src_1 "
                 + dims_str(r.b) + " axis " + std::to_string(r.axis))
                        .c_str());
    }
}

TEST(ApiPdpd, AxisAttributeChecks) {
    const lt c(0, dt::boolean, { 2, 4 }, lyt::strided);
    const lt a(1, dt::f32, { 2, 4 }, lyt::strided);
    const lt b(2, dt::f32, dims { 4 }, lyt::strided);
    const lt d(3, dt::f32, lyt::any);
    {
        // axis must be an s64.
        selgraph::graph g(selgraph::engine::kind::cpu);
        selgraph::op o = make_select_op(64, c, a, b, d, "pdpd");
        o.set_attr<float>(selgraph::op::attr::axis, 1.f);
        EXPECT_SG_ERROR(g.add_op(o), status::invalid_graph_op, "Select op 64",
                        "axis", "int64_t");
    }
    for (const char *mode : { "numpy", "none" }) {
        // axis belongs to pdpd.
        selgraph::graph g(selgraph::engine::kind::cpu);
        EXPECT_SG_ERROR(g.add_op(make_select_op(65, c, a, b, d, mode, 0)),
                        status::invalid_graph_op, "Select op 65", "axis",
                        "pdpd", mode);
    }
    {
        selgraph::graph g(selgraph::engine::kind::cpu);
        EXPECT_SG_ERROR(g.add_op(make_select_op(66, c, a, b, d, nullptr, -1)),
                        status::invalid_graph_op, "Select op 66", "axis",
                        "numpy");
    }
}

TEST(ApiPdpd, ZeroSizeAndZeroDim) {
    // 0-D src_0: dst is 0-D; 0-D cond and src_1 fit anywhere.
    run_select_case(pdpd_case(dt::s16, {}, {}, {}, -1, 5));
    run_select_case(pdpd_case(dt::s16, {}, {}, {}, 0, 5));
    run_select_case(pdpd_case(dt::s16, {}, { 7 }, {}, 1, 5));
    // A 0 dim: an operand dim of 0 must meet 0, 1 meets anything.
    run_select_case(pdpd_case(dt::u32, { 1, 0 }, { 3, 0 }, { 3, 1 }, 0, 6));
    run_select_case(pdpd_case(dt::u32, { 0 }, { 3, 0 }, { 0 }, -1, 6));
    run_select_case(pdpd_case(dt::u32, { 3 }, { 3, 0 }, { 3, 1 }, 0, 6));
}

TEST(ApiPdpd, RandomShapesAgainstTheRule) {
    // Random src_0 shapes, axes and operands laid onto them, some valid,
    // some not: compile must accept exactly what the rule accepts, with
    // dst = src_0's shape, and compute what the N-d reference computes.
    std::mt19937 rng(909);
    int valid = 0, invalid = 0;
    const dt types[] = { dt::f64, dt::s8, dt::f32, dt::f16, dt::u64, dt::u8 };
    for (int i = 0; i < 600; ++i) {
        const int ra = static_cast<int>(rng() % 6);
        dims a(ra);
        for (auto &x : a)
            x = 1 + static_cast<int64_t>(rng() % 5);
        // An operand laid onto a from `at`, with dims of a or 1, maybe
        // trailing 1s, maybe spoiled.
        auto make_operand = [&](int64_t axis) {
            const int64_t at = axis == -1 ? -1 : axis;
            const int64_t start =
                    at < 0 ? static_cast<int64_t>(rng() % (ra + 1)) : at;
            const int64_t room = std::max<int64_t>(0, ra - start);
            const int64_t len =
                    room ? static_cast<int64_t>(rng() % (room + 1)) : 0;
            dims b;
            for (int64_t j = 0; j < len; ++j)
                b.push_back(rng() % 3 == 0 ? 1 : a[start + j]);
            if (axis == -1) {
                // Right-aligned: pad to reach a's end with a's dims.
                while (start + static_cast<int64_t>(b.size()) < ra)
                    b.push_back(a[start + b.size()]);
            } else {
                const int trailing = static_cast<int>(rng() % 3);
                for (int k = 0; k < trailing; ++k)
                    b.push_back(1);
            }
            if (!b.empty() && rng() % 7 == 0)
                b[rng() % b.size()] += 1; // likely a mismatch
            if (rng() % 15 == 0)
                b.insert(b.begin(), 2); // maybe too long
            return b;
        };
        int64_t axis =
                rng() % 3 == 0 ? -1 : static_cast<int64_t>(rng() % (ra + 1));
        if (rng() % 25 == 0)
            axis = ra + 1 + static_cast<int64_t>(rng() % 2);
        const dims b = make_operand(axis);
        const dims c = make_operand(axis);
        int at_b = 0, at_c = 0;
        const bool ok =
                pdpd_rule(b, a, axis, at_b) && pdpd_rule(c, a, axis, at_c);
        const dt t = types[i % 6];
        SCOPED_TRACE(testing::Message()
                     << "case " << i << ": cond " << dims_str(c) << " src_0 "
                     << dims_str(a) << " src_1 " << dims_str(b) << " axis "
                     << axis);
        if (ok) {
            ++valid;
            run_select_case(pdpd_case(t, c, a, b, axis, 1000 + i));
        } else {
            ++invalid;
            const lt lc(0, dt::boolean, c, lyt::strided);
            const lt la(1, t, a, lyt::strided);
            const lt lb(2, t, b, lyt::strided);
            const lt ld(3, t, lyt::any);
            const auto p = select_partition(lc, la, lb, ld, 67, "pdpd", axis);
            EXPECT_SG_ERROR(p.compile({ lc, la, lb }, { ld }, cpu_engine()),
                            status::invalid_shape, "Select op 67", "pdpd",
                            dims_str(a));
        }
    }
    // Both outcomes are exercised in quantity.
    EXPECT_GT(valid, 200);
    EXPECT_GT(invalid, 50);
}

TEST(ApiPdpd, StridedOperandsAndStridedDst) {
    // Layouts are independent of the broadcast mode: a transposed src_1
    // placed at axis 0 and a padded dst.
    select_case sc = pdpd_case(dt::f64, { 3, 1 }, { 3, 8, 5 }, { 3, 8 }, 0, 7);
    sc.src1.s = { 1, 3 };
    sc.dst.s = { 48, 6, 1 };
    run_select_case(sc);
    select_case sc2 = pdpd_case(dt::s8, { 8 }, { 3, 8, 5 }, { 8, 5 }, 1, 8);
    sc2.src0.s = { 1, 15, 3 };
    run_select_case(sc2);
}
