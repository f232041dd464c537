// Graph flow (add_op / finalize / get_partitions), partition queries,
// unsupported partitions and the Select schema checked at add_op.
#include <set>

#include "tests/api_test_utils.hpp"

using namespace sgt;
using selgraph::graph;
using selgraph::op;
using selgraph::partition;

namespace {

struct select_lts {
    lt c, a, b, d;
};

select_lts lts_2x3(dt t = dt::f32) {
    return { lt(0, dt::boolean, { 2, 3 }, lyt::strided),
             lt(1, t, { 2, 3 }, lyt::strided), lt(2, t, { 2, 3 }, lyt::strided),
             lt(3, t, { 2, 3 }, lyt::strided) };
}

op select_op(size_t id, const select_lts &l) {
    return op(id, op::kind::Select, { l.c, l.a, l.b }, { l.d });
}

} // namespace

// ---------------------------------------------------------------------------
// Graph flow

TEST(ApiGraph, OneSupportedPartitionPerSelect) {
    graph g(selgraph::engine::kind::cpu);
    const select_lts l1 = lts_2x3();
    const select_lts l2 { lt(10, dt::boolean, dims { 4 }, lyt::strided),
                          lt(11, dt::bf16, dims { 4 }, lyt::strided),
                          lt(12, dt::bf16, dims { 4 }, lyt::strided),
                          lt(13, dt::bf16, dims { 4 }, lyt::strided) };
    EXPECT_EQ(g.add_op(select_op(100, l1)), status::success);
    EXPECT_EQ(g.add_op(select_op(200, l2)), status::success);
    EXPECT_FALSE(g.is_finalized());
    g.finalize();
    EXPECT_TRUE(g.is_finalized());
    const auto parts = g.get_partitions();
    ASSERT_EQ(parts.size(), 2u);

    EXPECT_TRUE(parts[0].is_supported());
    EXPECT_TRUE(parts[1].is_supported());
    EXPECT_EQ(parts[0].get_ops(), std::vector<size_t> { 100 });
    EXPECT_EQ(parts[1].get_ops(), std::vector<size_t> { 200 });
    EXPECT_EQ(parts[0].get_ops_num(), 1u);
    EXPECT_EQ(parts[1].get_ops_num(), 1u);
    EXPECT_NE(parts[0].get_id(), parts[1].get_id());
    EXPECT_EQ(parts[0].get_engine_kind(), selgraph::engine::kind::cpu);

    const auto in = parts[1].get_input_ports();
    ASSERT_EQ(in.size(), 3u);
    EXPECT_TRUE(in[0].is_equal(l2.c));
    EXPECT_TRUE(in[1].is_equal(l2.a));
    EXPECT_TRUE(in[2].is_equal(l2.b));
    const auto out = parts[1].get_output_ports();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(out[0].is_equal(l2.d));
    EXPECT_EQ(out[0].get_data_type(), dt::bf16);
    EXPECT_EQ(out[0].get_dims(), dims { 4 });
}

TEST(ApiGraph, PartitionIdsAreUniqueAcrossGraphs) {
    std::set<size_t> ids;
    for (int i = 0; i < 3; ++i) {
        graph g(selgraph::engine::kind::cpu);
        g.add_op(select_op(1, lts_2x3()));
        g.finalize();
        for (const auto &p : g.get_partitions())
            ids.insert(p.get_id());
    }
    EXPECT_EQ(ids.size(), 3u);
}

TEST(ApiGraph, OtherOpKindsBecomeUnsupportedPartitions) {
    graph g(selgraph::engine::kind::cpu);
    const lt x(20, dt::f32, { 2, 3 }, lyt::strided);
    const lt y(21, dt::f32, { 2, 3 }, lyt::strided);
    const lt z(22, dt::f32, { 2, 3 }, lyt::strided);
    const lt w(23, dt::f32, { 3, 3 }, lyt::strided);
    const lt m(24, dt::f32, { 2, 3 }, lyt::strided);
    ASSERT_EQ(g.add_op(op(5, op::kind::Add, { x, y }, { z })), status::success);
    ASSERT_EQ(g.add_op(select_op(6, lts_2x3())), status::success);
    ASSERT_EQ(g.add_op(op(7, op::kind::MatMul, { z, w }, { m })),
              status::success);
    g.finalize();
    const auto parts = g.get_partitions();
    ASSERT_EQ(parts.size(), 3u);
    int supported = 0;
    for (const auto &p : parts) {
        ASSERT_EQ(p.get_ops().size(), 1u);
        const size_t id = p.get_ops()[0];
        if (id == 6) {
            EXPECT_TRUE(p.is_supported());
            ++supported;
        } else {
            EXPECT_TRUE(id == 5 || id == 7) << id;
            EXPECT_FALSE(p.is_supported()) << "op " << id;
        }
    }
    EXPECT_EQ(supported, 1);
    // The Add partition reports its own ports.
    for (const auto &p : parts)
        if (p.get_ops()[0] == 5) {
            ASSERT_EQ(p.get_input_ports().size(), 2u);
            EXPECT_EQ(p.get_input_ports()[0].get_id(), 20u);
            EXPECT_EQ(p.get_input_ports()[1].get_id(), 21u);
            ASSERT_EQ(p.get_output_ports().size(), 1u);
            EXPECT_EQ(p.get_output_ports()[0].get_id(), 22u);
        }
}

TEST(ApiGraph, CompileUnsupportedPartitionIsUnimplemented) {
    graph g(selgraph::engine::kind::cpu);
    const lt x(20, dt::f32, { 2, 3 }, lyt::strided);
    const lt y(21, dt::f32, { 2, 3 }, lyt::strided);
    const lt z(22, dt::f32, { 2, 3 }, lyt::strided);
    ASSERT_EQ(g.add_op(op(55, op::kind::Add, { x, y }, { z })),
              status::success);
    g.finalize();
    const auto parts = g.get_partitions();
    ASSERT_EQ(parts.size(), 1u);
    ASSERT_FALSE(parts[0].is_supported());
    EXPECT_SG_ERROR(parts[0].compile({ x, y }, { z }, cpu_engine()),
                    status::unimplemented, "Add", "55");
}

TEST(ApiGraph, SelectInGpuGraphIsUnsupported) {
    graph g(selgraph::engine::kind::gpu);
    const select_lts l = lts_2x3();
    ASSERT_EQ(g.add_op(select_op(3, l)), status::success);
    g.finalize();
    const auto parts = g.get_partitions();
    ASSERT_EQ(parts.size(), 1u);
    EXPECT_FALSE(parts[0].is_supported());
    EXPECT_EQ(parts[0].get_engine_kind(), selgraph::engine::kind::gpu);
    EXPECT_SG_ERROR(parts[0].compile({ l.c, l.a, l.b }, { l.d }, cpu_engine()),
                    status::unimplemented, "Select", "3");
}

TEST(ApiGraph, EmptyGraphHasNoPartitions) {
    graph g(selgraph::engine::kind::cpu);
    g.finalize();
    EXPECT_TRUE(g.get_partitions().empty());
    EXPECT_TRUE(g.get_partitions(partition::policy::debug).empty());
}

TEST(ApiGraph, AddOpAfterFinalizeIsInvalidGraph) {
    graph g(selgraph::engine::kind::cpu);
    ASSERT_EQ(g.add_op(select_op(1, lts_2x3())), status::success);
    g.finalize();
    select_lts l2 = lts_2x3();
    l2.d = lt(30, dt::f32, { 2, 3 }, lyt::strided);
    EXPECT_SG_ERROR(g.add_op(select_op(2, l2)), status::invalid_graph, "2",
                    "finalized");
    EXPECT_EQ(g.add_op(select_op(2, l2), false), status::invalid_graph);
    // The graph still has its one partition.
    EXPECT_EQ(g.get_partitions().size(), 1u);
}

TEST(ApiGraph, DuplicateOpIdIsInvalidGraph) {
    graph g(selgraph::engine::kind::cpu);
    ASSERT_EQ(g.add_op(select_op(9, lts_2x3())), status::success);
    select_lts l2 = lts_2x3();
    l2.d = lt(31, dt::f32, { 2, 3 }, lyt::strided);
    EXPECT_SG_ERROR(g.add_op(select_op(9, l2)), status::invalid_graph, "9");
    EXPECT_EQ(g.add_op(select_op(9, l2), false), status::invalid_graph);
    g.finalize();
    EXPECT_EQ(g.get_partitions().size(), 1u);
}

TEST(ApiGraph, TwoOpsProducingOneTensorIsInvalidGraph) {
    graph g(selgraph::engine::kind::cpu);
    ASSERT_EQ(g.add_op(select_op(1, lts_2x3())), status::success);
    // Same dst id 3 as the first op.
    EXPECT_EQ(g.add_op(select_op(2, lts_2x3()), false), status::invalid_graph);
}

TEST(ApiGraph, GetPartitionsBeforeFinalizeIsInvalidGraph) {
    graph g(selgraph::engine::kind::cpu);
    ASSERT_EQ(g.add_op(select_op(1, lts_2x3())), status::success);
    EXPECT_SG_ERROR(g.get_partitions(), status::invalid_graph, "finalize");
}

TEST(ApiGraph, AddOpWithoutExceptionReturnsStatus) {
    graph g(selgraph::engine::kind::cpu);
    select_lts l = lts_2x3();
    l.c = lt(0, dt::s8, { 2, 3 }, lyt::strided);
    EXPECT_EQ(g.add_op(select_op(1, l), false), status::invalid_data_type);
    op two_inputs(2, op::kind::Select, { l.a, l.b }, { l.d });
    EXPECT_EQ(g.add_op(two_inputs, false), status::invalid_graph_op);
    // A rejected op is not in the graph: its id and dst are free again.
    EXPECT_EQ(g.add_op(select_op(1, lts_2x3()), false), status::success);
    g.finalize();
    const auto parts = g.get_partitions();
    ASSERT_EQ(parts.size(), 1u);
    EXPECT_EQ(parts[0].get_ops(), std::vector<size_t> { 1 });
}

TEST(ApiGraph, DefaultPartitionThrows) {
    const partition p;
    EXPECT_SG_ERROR(p.is_supported(), status::invalid_arguments, "partition");
    EXPECT_SG_ERROR(p.get_id(), status::invalid_arguments, "partition");
    const select_lts l = lts_2x3();
    EXPECT_SG_ERROR(p.compile({ l.c, l.a, l.b }, { l.d }, cpu_engine()),
                    status::invalid_arguments, "partition");
}

TEST(ApiGraph, OpAccessorsAndBuilders) {
    const select_lts l = lts_2x3();
    op o(77, op::kind::Select, "sel");
    o.add_input(l.c);
    o.add_inputs({ l.a, l.b });
    o.add_output(l.d);
    o.set_attr(op::attr::auto_broadcast, "numpy");
    EXPECT_EQ(o.get_id(), 77u);
    EXPECT_EQ(o.get_kind(), op::kind::Select);
    EXPECT_STREQ(selgraph::op_kind2str(op::kind::Select), "Select");
    graph g(selgraph::engine::kind::cpu);
    EXPECT_EQ(g.add_op(o), status::success);
    g.finalize();
    const auto parts = g.get_partitions();
    ASSERT_EQ(parts.size(), 1u);
    const auto in = parts[0].get_input_ports();
    ASSERT_EQ(in.size(), 3u);
    EXPECT_EQ(in[0].get_id(), 0u);
    EXPECT_EQ(in[1].get_id(), 1u);
    EXPECT_EQ(in[2].get_id(), 2u);
}

TEST(ApiGraph, StatusNames) {
    EXPECT_STREQ(selgraph::status2str(status::invalid_shape), "invalid_shape");
    EXPECT_STREQ(selgraph::status2str(status::invalid_graph_op),
                 "invalid_graph_op");
    EXPECT_EQ(static_cast<int>(status::invalid_data_type), 10);
    EXPECT_EQ(static_cast<int>(status::invalid_graph), 7);
    EXPECT_EQ(static_cast<int>(status::unimplemented), 3);
}

// ---------------------------------------------------------------------------
// Schema at add_op

TEST(ApiSchema, WrongArityIsInvalidGraphOp) {
    const select_lts l = lts_2x3();
    const lt extra(40, dt::f32, { 2, 3 }, lyt::strided);
    struct arity_case {
        std::vector<lt> in, out;
    };
    const arity_case cases[] = {
        { { l.c, l.a }, { l.d } },
        { { l.c, l.a, l.b, extra }, { l.d } },
        { { l.c, l.a, l.b }, {} },
        { { l.c, l.a, l.b }, { l.d, extra } },
        { {}, {} },
    };
    for (const auto &ac : cases) {
        graph g(selgraph::engine::kind::cpu);
        op o(12, op::kind::Select, ac.in, ac.out);
        EXPECT_SG_ERROR(g.add_op(o), status::invalid_graph_op, "Select op 12",
                        std::to_string(ac.in.size()) + " inputs",
                        std::to_string(ac.out.size()) + " output");
        EXPECT_EQ(g.add_op(o, false), status::invalid_graph_op);
    }
}

TEST(ApiSchema, CondMustBeBooleanOrU8) {
    for (dt t : { dt::s8, dt::f32, dt::s32, dt::bf16, dt::undef, dt::f64,
                  dt::s64, dt::u16, dt::u4 }) {
        select_lts l = lts_2x3();
        l.c = lt(0, t, { 2, 3 }, lyt::strided);
        graph g(selgraph::engine::kind::cpu);
        EXPECT_SG_ERROR(g.add_op(select_op(13, l)), status::invalid_data_type,
                        "Select op 13", "port cond", dt_name(t),
                        "boolean or u8");
        EXPECT_EQ(g.add_op(select_op(13, l), false), status::invalid_data_type);
    }
    for (dt t : { dt::boolean, dt::u8 }) {
        select_lts l = lts_2x3();
        l.c = lt(0, t, { 2, 3 }, lyt::strided);
        graph g(selgraph::engine::kind::cpu);
        EXPECT_EQ(g.add_op(select_op(13, l), false), status::success)
                << dt_name(t);
    }
}

TEST(ApiSchema, Src0MustHaveAType) {
    // All of src_0, src_1, dst agree; only the type itself is wrong.
    const select_lts l { lt(0, dt::boolean, { 2, 3 }, lyt::strided),
                         lt(1, dt::undef, { 2, 3 }, lyt::strided),
                         lt(2, dt::undef, { 2, 3 }, lyt::strided),
                         lt(3, dt::undef, { 2, 3 }, lyt::strided) };
    graph g(selgraph::engine::kind::cpu);
    EXPECT_SG_ERROR(g.add_op(select_op(14, l)), status::invalid_data_type,
                    "Select op 14", "port src_0", "undef", "f64", "s64", "u8",
                    "f8_e4m3", "boolean");
}

TEST(ApiSchema, EveryTypeWithAByteWidthAccepted) {
    for (dt t : all_select_types()) {
        graph g(selgraph::engine::kind::cpu);
        EXPECT_EQ(g.add_op(select_op(1, lts_2x3(t)), false), status::success)
                << dt_name(t);
    }
}

TEST(ApiSchema, Src1AndDstMustMatchSrc0Type) {
    {
        select_lts l = lts_2x3(dt::f32);
        l.b = lt(2, dt::bf16, { 2, 3 }, lyt::strided);
        graph g(selgraph::engine::kind::cpu);
        EXPECT_SG_ERROR(g.add_op(select_op(15, l)), status::invalid_data_type,
                        "Select op 15", "port src_1", "bf16", "f32");
    }
    {
        select_lts l = lts_2x3(dt::bf16);
        l.d = lt(3, dt::f16, { 2, 3 }, lyt::strided);
        graph g(selgraph::engine::kind::cpu);
        EXPECT_SG_ERROR(g.add_op(select_op(16, l)), status::invalid_data_type,
                        "Select op 16", "port dst", "f16", "bf16");
    }
    {
        select_lts l = lts_2x3(dt::f16);
        l.d = lt(3, dt::f32, { 2, 3 }, lyt::strided);
        graph g(selgraph::engine::kind::cpu);
        EXPECT_EQ(g.add_op(select_op(17, l), false), status::invalid_data_type);
    }
}

TEST(ApiSchema, AutoBroadcastValues) {
    for (const char *v : { "numpy", "none", "pdpd" }) {
        graph g(selgraph::engine::kind::cpu);
        op o = select_op(1, lts_2x3());
        o.set_attr(op::attr::auto_broadcast, v);
        EXPECT_EQ(g.add_op(o, false), status::success) << v;
    }
    for (const char *v : { "PDPD", "", "NUMPY", "explicit", "numpy " }) {
        graph g(selgraph::engine::kind::cpu);
        op o = select_op(18, lts_2x3());
        o.set_attr(op::attr::auto_broadcast, v);
        EXPECT_SG_ERROR(g.add_op(o), status::invalid_graph_op, "Select op 18",
                        "auto_broadcast", std::string("'") + v + "'");
        EXPECT_EQ(g.add_op(o, false), status::invalid_graph_op) << v;
    }
    {
        graph g(selgraph::engine::kind::cpu);
        op o = select_op(18, lts_2x3());
        o.set_attr(op::attr::auto_broadcast, std::string("none"));
        EXPECT_EQ(g.add_op(o, false), status::success);
    }
}

TEST(ApiSchema, AutoBroadcastMustBeString) {
    {
        graph g(selgraph::engine::kind::cpu);
        op o = select_op(19, lts_2x3());
        o.set_attr<int64_t>(op::attr::auto_broadcast, 1);
        EXPECT_SG_ERROR(g.add_op(o), status::invalid_graph_op, "Select op 19",
                        "auto_broadcast", "string");
    }
    {
        graph g(selgraph::engine::kind::cpu);
        op o = select_op(19, lts_2x3());
        o.set_attr<bool>(op::attr::auto_broadcast, true);
        EXPECT_EQ(g.add_op(o, false), status::invalid_graph_op);
    }
    {
        graph g(selgraph::engine::kind::cpu);
        op o = select_op(19, lts_2x3());
        o.set_attr<std::vector<int64_t>>(op::attr::auto_broadcast, { 1, 2 });
        EXPECT_EQ(g.add_op(o, false), status::invalid_graph_op);
    }
}

TEST(ApiSchema, UnknownAttributeIsInvalidGraphOp) {
    {
        graph g(selgraph::engine::kind::cpu);
        op o = select_op(20, lts_2x3());
        o.set_attr<float>(op::attr::alpha, 1.f);
        EXPECT_SG_ERROR(g.add_op(o), status::invalid_graph_op, "Select op 20",
                        "alpha");
    }
    {
        graph g(selgraph::engine::kind::cpu);
        op o = select_op(21, lts_2x3());
        o.set_attr(op::attr::auto_broadcast, "numpy");
        o.set_attr<int64_t>(op::attr::axis, 0);
        EXPECT_SG_ERROR(g.add_op(o), status::invalid_graph_op, "Select op 21",
                        "axis");
    }
}

TEST(ApiSchema, NonSelectOpsAreNotCheckedAgainstSelectSchema) {
    // An Add with an attribute Select does not know is accepted by the graph
    // (and becomes an unsupported partition).
    graph g(selgraph::engine::kind::cpu);
    const lt x(20, dt::s32, dims { 2 }, lyt::strided);
    const lt z(22, dt::s32, dims { 2 }, lyt::strided);
    op o(5, op::kind::Add, { x, x }, { z });
    o.set_attr(op::attr::auto_broadcast, "numpy");
    EXPECT_EQ(g.add_op(o, false), status::success);
    g.finalize();
    const auto parts = g.get_partitions();
    ASSERT_EQ(parts.size(), 1u);
    EXPECT_FALSE(parts[0].is_supported());
}

TEST(ApiGraph, OpChangesAfterAddOpDoNotAffectGraph) {
    graph g(selgraph::engine::kind::cpu);
    const select_lts l = lts_2x3();
    op o = select_op(1, l);
    ASSERT_EQ(g.add_op(o), status::success);
    // Made invalid after it was added: the graph keeps its copy.
    o.set_attr<float>(op::attr::alpha, 2.f);
    o.add_input(l.a);
    g.finalize();
    const auto parts = g.get_partitions();
    ASSERT_EQ(parts.size(), 1u);
    EXPECT_EQ(parts[0].get_input_ports().size(), 3u);
    auto cp = parts[0].compile({ l.c, l.a, l.b }, { l.d }, cpu_engine());
    EXPECT_EQ(cp.query_logical_tensor(3).get_dims(), (dims { 2, 3 }));
}

TEST(ApiGraph, DeclaredUnknownShapesCompileToManyShapes) {
    // As in oneDNN: the graph is built with unknown shapes, the partition is
    // compiled once per concrete shape.
    const lt c(0, dt::boolean, lyt::strided);
    const lt a(1, dt::f16, lyt::strided);
    const lt b(2, dt::f16, lyt::strided);
    const lt d(3, dt::f16, lyt::strided);
    graph g(selgraph::engine::kind::cpu);
    ASSERT_EQ(g.add_op(select_op(1, { c, a, b, d })), status::success);
    g.finalize();
    const auto parts = g.get_partitions();
    ASSERT_EQ(parts.size(), 1u);
    ASSERT_TRUE(parts[0].is_supported());
    EXPECT_EQ(parts[0].get_input_ports()[0].get_ndims(), -1);
    const auto cp1 =
            parts[0].compile({ lt(0, dt::boolean, { 2, 3 }, lyt::strided),
                               lt(1, dt::f16, { 2, 3 }, lyt::strided),
                               lt(2, dt::f16, dims {}, lyt::strided) },
                             { d }, cpu_engine());
    const auto cp2 =
            parts[0].compile({ lt(0, dt::boolean, { 5, 1, 1 }, lyt::strided),
                               lt(1, dt::f16, { 4, 1 }, lyt::strided),
                               lt(2, dt::f16, { 5, 1, 6 }, lyt::strided) },
                             { d }, cpu_engine());
    EXPECT_EQ(cp1.query_logical_tensor(3).get_dims(), (dims { 2, 3 }));
    EXPECT_EQ(cp2.query_logical_tensor(3).get_dims(), (dims { 5, 4, 6 }));
    EXPECT_EQ(cp2.query_logical_tensor(3).get_strides(), (dims { 24, 6, 1 }));
    // Both compiled partitions execute correctly.
    const uint16_t one = 0x3C00, two = 0x4000;
    std::vector<uint8_t> cond1 = { 1, 0, 0xff, 0, 0x80, 0 };
    std::vector<uint16_t> a1(6, one), out1(6, 0);
    uint16_t b1 = two;
    cp1.execute(cpu_stream(),
                { selgraph::tensor(cp1.query_logical_tensor(0), cpu_engine(),
                                   cond1.data()),
                  selgraph::tensor(cp1.query_logical_tensor(1), cpu_engine(),
                                   a1.data()),
                  selgraph::tensor(cp1.query_logical_tensor(2), cpu_engine(),
                                   &b1) },
                { selgraph::tensor(cp1.query_logical_tensor(3), cpu_engine(),
                                   out1.data()) });
    for (int i = 0; i < 6; ++i)
        EXPECT_EQ(out1[i], cond1[i] ? one : two) << i;
    std::vector<uint8_t> cond2 = { 0, 1, 0, 1, 1 };
    std::vector<uint16_t> a2 = { 10, 11, 12, 13 }, b2(30), out2(120, 0);
    for (int i = 0; i < 30; ++i)
        b2[i] = static_cast<uint16_t>(100 + i);
    cp2.execute(cpu_stream(),
                { selgraph::tensor(cp2.query_logical_tensor(0), cpu_engine(),
                                   cond2.data()),
                  selgraph::tensor(cp2.query_logical_tensor(1), cpu_engine(),
                                   a2.data()),
                  selgraph::tensor(cp2.query_logical_tensor(2), cpu_engine(),
                                   b2.data()) },
                { selgraph::tensor(cp2.query_logical_tensor(3), cpu_engine(),
                                   out2.data()) });
    for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 4; ++j)
            for (int k = 0; k < 6; ++k)
                ASSERT_EQ(out2[(i * 4 + j) * 6 + k],
                          cond2[i] ? a2[j] : b2[i * 6 + k])
                        << i << "," << j << "," << k;
}
