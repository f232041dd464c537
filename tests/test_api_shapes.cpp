// Shape inference and the shape / layout checks of partition::compile.
#include "tests/api_test_utils.hpp"

using namespace sgt;

namespace {

// Compiles a Select (op id 31) with dense f32 operands; the dst is declared
// and compiled with unknown ndims unless `dst` is given.
selgraph::compiled_partition compile_dims(const dims &c, const dims &a,
                                          const dims &b,
                                          const dims *dst = nullptr,
                                          const char *bcast = nullptr) {
    const lt lc(0, dt::boolean, c, lyt::strided);
    const lt la(1, dt::f32, a, lyt::strided);
    const lt lb(2, dt::f32, b, lyt::strided);
    const lt ld = dst ? lt(3, dt::f32, *dst, lyt::strided)
                      : lt(3, dt::f32, lyt::strided);
    return compile_select(lc, la, lb, ld, 31, bcast);
}

dims inferred(const dims &c, const dims &a, const dims &b,
              const char *bcast = nullptr) {
    return compile_dims(c, a, b, nullptr, bcast)
            .query_logical_tensor(3)
            .get_dims();
}

} // namespace

// ---------------------------------------------------------------------------
// Valid shapes

TEST(ApiShapes, SpecCondExamplesValid) {
    EXPECT_EQ(inferred({ 4, 5 }, { 2, 3, 4, 5 }, { 2, 3, 4, 5 }),
              (dims { 2, 3, 4, 5 }));
    EXPECT_EQ(inferred({ 3, 1, 5 }, { 2, 3, 4, 5 }, { 2, 3, 4, 5 }),
              (dims { 2, 3, 4, 5 }));
}

TEST(ApiShapes, SpecCondExampleInvalid) {
    EXPECT_SG_ERROR(inferred({ 3, 5 }, { 2, 3, 4, 5 }, { 2, 3, 4, 5 }),
                    status::invalid_shape, "Select op 31", "cond", "[3,5]",
                    "[2,3,4,5]");
}

TEST(ApiShapes, NumpyBroadcastOfSources) {
    EXPECT_EQ(inferred({ 1 }, { 2, 1, 4 }, { 3, 1 }), (dims { 2, 3, 4 }));
    EXPECT_EQ(inferred({}, { 5 }, {}), (dims { 5 }));
    EXPECT_EQ(inferred({}, {}, { 1, 7 }), (dims { 1, 7 }));
    EXPECT_EQ(inferred({ 7, 1, 1 }, { 8, 1, 6, 1 }, { 7, 1, 5 }),
              (dims { 8, 7, 6, 5 }));
    // cond of lower rank than dst, and a cond equal to dst.
    EXPECT_EQ(inferred({ 6 }, { 4, 1 }, { 6 }), (dims { 4, 6 }));
    EXPECT_EQ(inferred({ 4, 6 }, { 4, 1 }, { 6 }), (dims { 4, 6 }));
    // Zero-size dims broadcast against 1.
    EXPECT_EQ(inferred({ 1 }, { 0, 1 }, { 3 }), (dims { 0, 3 }));
    EXPECT_EQ(inferred({ 0, 3 }, { 0, 1 }, { 1, 3 }), (dims { 0, 3 }));
}

TEST(ApiShapes, ZeroDimTensors) {
    EXPECT_EQ(inferred({}, {}, {}), dims {});
    EXPECT_EQ(inferred({}, { 2, 3 }, {}), (dims { 2, 3 }));
    EXPECT_EQ(inferred({}, {}, { 2, 3 }), (dims { 2, 3 }));
    // A cond of rank 2 cannot broadcast to a 0-D dst.
    EXPECT_SG_ERROR(inferred({ 1, 1 }, {}, {}), status::invalid_shape, "cond",
                    "[1,1]");
}

TEST(ApiShapes, IncompatibleSourcesAreInvalid) {
    EXPECT_SG_ERROR(inferred({ 1 }, { 2, 3 }, { 4 }), status::invalid_shape,
                    "Select op 31", "src_0", "[2,3]", "src_1", "[4]");
    EXPECT_SG_ERROR(inferred({ 1 }, { 0 }, { 2 }), status::invalid_shape,
                    "src_0", "[0]", "src_1", "[2]");
}

TEST(ApiShapes, CondMayNeverEnlargeDst) {
    // From the brief: cond {2,1} with srcs {1,5} would give {2,5}, but cond
    // only broadcasts one way.
    EXPECT_SG_ERROR(inferred({ 2, 1 }, { 1, 5 }, { 1, 5 }),
                    status::invalid_shape, "Select op 31", "cond", "[2,1]",
                    "[1,5]");
    // A larger rank, even with leading ones.
    EXPECT_SG_ERROR(inferred({ 1, 2, 3 }, { 2, 3 }, { 2, 3 }),
                    status::invalid_shape, "cond", "[1,2,3]", "[2,3]");
    EXPECT_SG_ERROR(inferred({ 3 }, {}, {}), status::invalid_shape, "cond",
                    "[3]");
    // cond 0 would shrink a dst dim of 1.
    EXPECT_SG_ERROR(inferred({ 0 }, { 1 }, { 1 }), status::invalid_shape,
                    "cond", "[0]");
    EXPECT_SG_ERROR(inferred({ 5, 4 }, { 4 }, { 1, 4 }), status::invalid_shape,
                    "cond", "[5,4]");
}

TEST(ApiShapes, NoneRequiresEqualShapes) {
    EXPECT_EQ(inferred({ 2, 3 }, { 2, 3 }, { 2, 3 }, "none"), (dims { 2, 3 }));
    EXPECT_EQ(inferred({}, {}, {}, "none"), dims {});
    EXPECT_SG_ERROR(inferred({ 1, 3 }, { 2, 3 }, { 2, 3 }, "none"),
                    status::invalid_shape, "Select op 31", "none", "cond",
                    "[1,3]", "[2,3]");
    EXPECT_SG_ERROR(inferred({ 2, 3 }, { 2, 3 }, { 3 }, "none"),
                    status::invalid_shape, "src_1", "[3]");
    EXPECT_SG_ERROR(inferred({ 2, 3 }, { 1, 3 }, { 2, 3 }, "none"),
                    status::invalid_shape, "src_0", "[1,3]");
    EXPECT_SG_ERROR(inferred({}, { 1 }, { 1 }, "none"), status::invalid_shape,
                    "none");
    // The dst given must be equal too.
    const dims bad_dst { 1, 3 };
    EXPECT_SG_ERROR(
            compile_dims({ 2, 3 }, { 2, 3 }, { 2, 3 }, &bad_dst, "none"),
            status::invalid_shape, "dst", "[1,3]", "[2,3]");
    // The same shapes with numpy are fine.
    EXPECT_EQ(inferred({ 1, 3 }, { 2, 3 }, { 3 }, "numpy"), (dims { 2, 3 }));
}

TEST(ApiShapes, DstKnownDimsMustMatch) {
    const dims ok { 2, 3 };
    EXPECT_EQ(compile_dims({ 3 }, { 2, 1 }, { 3 }, &ok)
                      .query_logical_tensor(3)
                      .get_dims(),
              ok);
    for (const dims &bad : { dims { 3, 2 }, dims { 2, 1 }, dims { 1, 2, 3 },
                             dims { 6 }, dims {}, dims { 2, 3, 1 } }) {
        EXPECT_SG_ERROR(compile_dims({ 3 }, { 2, 1 }, { 3 }, &bad),
                        status::invalid_shape, "Select op 31", "dst",
                        dims_str(bad), "[2,3]");
    }
}

TEST(ApiShapes, DstUnknownDimsAreInferred) {
    // Unknown ndims.
    {
        auto cp = compile_dims({ 4, 1 }, { 1, 5 }, { 4, 5 });
        const lt q = cp.query_logical_tensor(3);
        EXPECT_EQ(q.get_id(), 3u);
        EXPECT_EQ(q.get_data_type(), dt::f32);
        EXPECT_EQ(q.get_layout_type(), lyt::strided);
        EXPECT_EQ(q.get_dims(), (dims { 4, 5 }));
        EXPECT_EQ(q.get_strides(), (dims { 5, 1 }));
        EXPECT_EQ(q.get_mem_size(), 80u);
    }
    // Known ndims, some unknown dims.
    {
        const dims d { -1, 5, -1 };
        auto cp = compile_dims({ 1 }, { 2, 5, 1 }, { 3 }, &d);
        const lt q = cp.query_logical_tensor(3);
        EXPECT_EQ(q.get_dims(), (dims { 2, 5, 3 }));
        EXPECT_EQ(q.get_strides(), (dims { 15, 3, 1 }));
    }
    // Known ndims with every dim unknown.
    {
        const lt lc(0, dt::boolean, dims { 7 }, lyt::strided);
        const lt la(1, dt::bf16, { 2, 7 }, lyt::strided);
        const lt lb(2, dt::bf16, dims {}, lyt::strided);
        const lt ld(3, dt::bf16, 2, lyt::strided);
        auto cp = compile_select(lc, la, lb, ld);
        const lt q = cp.query_logical_tensor(3);
        EXPECT_EQ(q.get_data_type(), dt::bf16);
        EXPECT_EQ(q.get_dims(), (dims { 2, 7 }));
        EXPECT_EQ(q.get_strides(), (dims { 7, 1 }));
    }
    // Known ndims that differs from the inferred rank.
    {
        const lt lc(0, dt::boolean, dims { 7 }, lyt::strided);
        const lt la(1, dt::f32, { 2, 7 }, lyt::strided);
        const lt lb(2, dt::f32, { 2, 7 }, lyt::strided);
        const lt ld(3, dt::f32, 3, lyt::strided);
        EXPECT_SG_ERROR(compile_select(lc, la, lb, ld, 31),
                        status::invalid_shape, "Select op 31", "dst", "[2,7]");
    }
}

TEST(ApiShapes, QueryInputPortsAndUnknownId) {
    auto cp = compile_dims({ 3, 1 }, { 3, 4 }, { 4 });
    EXPECT_EQ(cp.query_logical_tensor(0).get_dims(), (dims { 3, 1 }));
    EXPECT_EQ(cp.query_logical_tensor(0).get_data_type(), dt::boolean);
    EXPECT_EQ(cp.query_logical_tensor(1).get_dims(), (dims { 3, 4 }));
    EXPECT_EQ(cp.query_logical_tensor(2).get_dims(), dims { 4 });
    EXPECT_SG_ERROR(cp.query_logical_tensor(99), status::invalid_arguments,
                    "31", "99");
    const selgraph::compiled_partition empty;
    EXPECT_SG_ERROR(empty.query_logical_tensor(3), status::invalid_arguments,
                    "empty");
    EXPECT_SG_ERROR(empty.get_inplace_ports(), status::invalid_arguments,
                    "empty");
}

TEST(ApiShapes, RanksOneThroughEightAndTwelve) {
    for (int r : { 1, 2, 3, 4, 5, 6, 7, 8, 12 }) {
        dims a(r), b(r), c(r), want(r);
        for (int i = 0; i < r; ++i) {
            const int64_t n = 2 + (i % 2);
            a[i] = i % 3 == 0 ? 1 : n;
            b[i] = n;
            c[i] = i % 2 ? n : 1;
            want[i] = n;
        }
        EXPECT_EQ(inferred(c, a, b), want) << "rank " << r;
    }
}

// ---------------------------------------------------------------------------
// Layout checks

TEST(ApiShapes, NegativeInputStridesRejected) {
    const lt c(0, dt::boolean, { 2, 3 }, lyt::strided);
    const lt a(1, dt::f32, { 2, 3 }, lyt::strided);
    const lt b(2, dt::f32, { 2, 3 }, lyt::strided);
    const lt d(3, dt::f32, { 2, 3 }, lyt::strided);
    auto p = select_partition(c, a, b, d, 32);
    const lt cn(0, dt::boolean, { 2, 3 }, dims { -3, 1 });
    const lt an(1, dt::f32, { 2, 3 }, dims { 3, -1 });
    const lt bn(2, dt::f32, { 2, 3 }, dims { -2, -1 });
    EXPECT_SG_ERROR(p.compile({ cn, a, b }, { d }, cpu_engine()),
                    status::invalid_shape, "Select op 32", "cond", "negative",
                    "[2,3]");
    EXPECT_SG_ERROR(p.compile({ c, an, b }, { d }, cpu_engine()),
                    status::invalid_shape, "Select op 32", "src_0", "negative");
    EXPECT_SG_ERROR(p.compile({ c, a, bn }, { d }, cpu_engine()),
                    status::invalid_shape, "Select op 32", "src_1", "negative");
}

TEST(ApiShapes, NegativeDstStridesRejected) {
    const lt c(0, dt::boolean, { 2, 3 }, lyt::strided);
    const lt a(1, dt::f32, { 2, 3 }, lyt::strided);
    const lt b(2, dt::f32, { 2, 3 }, lyt::strided);
    const lt d(3, dt::f32, { 2, 3 }, lyt::strided);
    auto p = select_partition(c, a, b, d, 33);
    const lt dn(3, dt::f32, { 2, 3 }, dims { -3, 1 });
    EXPECT_SG_ERROR(p.compile({ c, a, b }, { dn }, cpu_engine()),
                    status::invalid_shape, "Select op 33", "dst", "negative");
    const lt dn2(3, dt::f32, { 2, 3 }, dims { 3, -2 });
    EXPECT_SG_ERROR(p.compile({ c, a, b }, { dn2 }, cpu_engine()),
                    status::invalid_shape, "Select op 33", "dst", "negative");
}

TEST(ApiShapes, DstStrideZeroOnNonUnitDimRejected) {
    const lt c(0, dt::boolean, { 4, 3 }, lyt::strided);
    const lt a(1, dt::f32, { 4, 3 }, lyt::strided);
    const lt b(2, dt::f32, { 4, 3 }, lyt::strided);
    const lt d(3, dt::f32, { 4, 3 }, lyt::strided);
    auto p = select_partition(c, a, b, d, 34);
    EXPECT_SG_ERROR(
            p.compile({ c, a, b }, { lt(3, dt::f32, { 4, 3 }, dims { 0, 1 }) },
                      cpu_engine()),
            status::invalid_shape, "Select op 34", "dst", "stride 0", "[4,3]");
    EXPECT_SG_ERROR(p.compile({ c, a, b },
                              { lt(3, dt::f32, { 4, 3 }, dims { 3, 0 }) },
                              cpu_engine()),
                    status::invalid_shape, "dst", "stride 0");
}

TEST(ApiShapes, ByteSizeOverflowIsInvalidShape) {
    const int64_t big = int64_t(1) << 40;
    EXPECT_SG_ERROR(inferred({ 1 }, { big, big }, { big, big }),
                    status::invalid_shape, "Select op 31");
    // Only the dst overflows (the sources broadcast).
    EXPECT_SG_ERROR(inferred({ 1 }, { big, 1 }, { 1, big }),
                    status::invalid_shape, "Select op 31", "dst");
    // Elements fit in int64, bytes do not.
    EXPECT_SG_ERROR(inferred({}, { int64_t(1) << 62 }, {}),
                    status::invalid_shape, "src_0");
    // Strided view whose span overflows.
    {
        const lt c(0, dt::boolean, dims { 2 }, lyt::strided);
        const lt a(1, dt::f32, dims { 2 }, dims { int64_t(1) << 62 });
        const lt b(2, dt::f32, dims { 2 }, lyt::strided);
        const lt d(3, dt::f32, dims { 2 }, lyt::strided);
        EXPECT_SG_ERROR(compile_select(c, a, b, d, 35), status::invalid_shape,
                        "Select op 35", "src_0");
    }
}

TEST(ApiShapes, EmptyTensorWithHugeDimsIsNotAnOverflow) {
    // Zero elements, zero bytes: logical_tensor::get_mem_size says 0, so
    // compile must not call it an overflow (numpy accepts such shapes).
    const int64_t big = int64_t(1) << 40;
    const dims e { big, big, 0 };
    EXPECT_EQ(lt(1, dt::f32, e, lyt::strided).get_mem_size(), 0u);
    try {
        const auto cp = compile_dims({}, e, {});
        const lt q = cp.query_logical_tensor(3);
        EXPECT_EQ(q.get_dims(), e);
        EXPECT_EQ(q.get_mem_size(), 0u);
        uint8_t cond = 1;
        float s1 = 0.f;
        const lt lc(0, dt::boolean, dims {}, lyt::strided);
        const lt la(1, dt::f32, e, lyt::strided);
        const lt lb(2, dt::f32, dims {}, lyt::strided);
        cp.execute(cpu_stream(),
                   { selgraph::tensor(lc, cpu_engine(), &cond),
                     selgraph::tensor(la, cpu_engine(), nullptr),
                     selgraph::tensor(lb, cpu_engine(), &s1) },
                   { selgraph::tensor(q, cpu_engine(), nullptr) });
    } catch (const selgraph::error &err) {
        ADD_FAILURE() << "empty dst " << dims_str(e) << " rejected ("
                      << selgraph::status2str(err.status)
                      << "): " << err.what();
    }
}

TEST(ApiShapes, CompileInputValidation) {
    const lt c(0, dt::boolean, { 2, 3 }, lyt::strided);
    const lt a(1, dt::f32, { 2, 3 }, lyt::strided);
    const lt b(2, dt::f32, { 2, 3 }, lyt::strided);
    const lt d(3, dt::f32, { 2, 3 }, lyt::strided);
    auto p = select_partition(c, a, b, d, 36);
    // Engine.
    EXPECT_SG_ERROR(p.compile({ c, a, b }, { d }, selgraph::engine()),
                    status::invalid_arguments, "Select op 36", "engine");
    // Counts.
    EXPECT_SG_ERROR(p.compile({ c, a }, { d }, cpu_engine()),
                    status::invalid_arguments, "Select op 36");
    EXPECT_SG_ERROR(p.compile({ c, a, b }, {}, cpu_engine()),
                    status::invalid_arguments, "Select op 36");
    // An id that is not a port.
    EXPECT_SG_ERROR(p.compile({ c, a, lt(9, dt::f32, { 2, 3 }, lyt::strided) },
                              { d }, cpu_engine()),
                    status::invalid_arguments, "Select op 36", "src_1", "2");
    EXPECT_SG_ERROR(p.compile({ c, a, b },
                              { lt(9, dt::f32, { 2, 3 }, lyt::strided) },
                              cpu_engine()),
                    status::invalid_arguments, "Select op 36", "9", "dst");
    // Types differing from the ones added.
    EXPECT_SG_ERROR(p.compile({ c, lt(1, dt::bf16, { 2, 3 }, lyt::strided), b },
                              { d }, cpu_engine()),
                    status::invalid_data_type, "Select op 36", "src_0", "bf16",
                    "f32");
    EXPECT_SG_ERROR(p.compile({ c, a, b },
                              { lt(3, dt::f16, { 2, 3 }, lyt::strided) },
                              cpu_engine()),
                    status::invalid_data_type, "Select op 36", "dst", "f16");
    // Unknown shapes at compile.
    EXPECT_SG_ERROR(p.compile({ lt(0, dt::boolean, lyt::strided), a, b }, { d },
                              cpu_engine()),
                    status::invalid_shape, "Select op 36", "cond");
    EXPECT_SG_ERROR(p.compile({ c, lt(1, dt::f32, { -1, 3 }, lyt::strided), b },
                              { d }, cpu_engine()),
                    status::invalid_shape, "Select op 36", "src_0");
    // Opaque layouts.
    EXPECT_SG_ERROR(p.compile({ c, a, lt(2, dt::f32, { 2, 3 }, lyt::opaque) },
                              { d }, cpu_engine()),
                    status::unimplemented, "Select op 36", "src_1", "opaque");
    // Inputs in any order are matched by id.
    auto cp = p.compile({ b, c, a }, { d }, cpu_engine());
    EXPECT_EQ(cp.query_logical_tensor(3).get_dims(), (dims { 2, 3 }));
}

TEST(ApiShapes, AnyLayoutInputsCompileDense) {
    const lt c(0, dt::boolean, { 2, 3 }, lyt::any);
    const lt a(1, dt::f32, { 2, 3 }, lyt::any);
    const lt b(2, dt::f32, dims { 3 }, lyt::any);
    const lt d(3, dt::f32, { 2, 3 }, lyt::any);
    auto cp = compile_select(c, a, b, d);
    const lt q = cp.query_logical_tensor(3);
    EXPECT_EQ(q.get_layout_type(), lyt::strided);
    EXPECT_EQ(q.get_strides(), (dims { 3, 1 }));
    const uint8_t cond[6] = { 1, 0, 0x80, 0, 0xff, 2 };
    const float s0[6] = { 1, 2, 3, 4, 5, 6 };
    const float s1[3] = { -1, -2, -3 };
    float out[6] = {};
    cp.execute(cpu_stream(),
               { selgraph::tensor(c, cpu_engine(), const_cast<uint8_t *>(cond)),
                 selgraph::tensor(a, cpu_engine(), const_cast<float *>(s0)),
                 selgraph::tensor(b, cpu_engine(), const_cast<float *>(s1)) },
               { selgraph::tensor(q, cpu_engine(), out) });
    const float want[6] = { 1, -2, 3, -1, 5, 6 };
    for (int i = 0; i < 6; ++i)
        EXPECT_EQ(out[i], want[i]) << i;
}
