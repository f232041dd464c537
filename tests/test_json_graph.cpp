// The JSON graph loader and writer (src/json_graph.hpp) on their own: every
// field, every data type, unknown shapes and ranks, strided and 0-D tensors,
// every attribute type, round trips, graph dumps, and each malformed input
// with its status and message.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/json_graph.hpp"

namespace {

using namespace selgraph;
using impl::json_graph;
using impl::parse_json_graph;
using lt = logical_tensor;
using dt = lt::data_type;

std::string read(const std::string &path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

const std::string json_dir = SELGRAPH_TEST_JSON_DIR;

std::string lt_json(const std::string &id, const std::string &dtype,
                    const std::string &shape, const std::string &stride,
                    const std::string &layout = "strided",
                    const std::string &prop = "undef") {
    return "{\"id\": " + id + ", \"dtype\": \"" + dtype + "\", \"shape\": "
           + shape + ", \"stride\": " + stride + ", \"layout_type\": \""
           + layout + "\", \"property_type\": \"" + prop + "\"}";
}

// A one-Select graph with the given tensors and attributes.
std::string select_json(const std::string &c, const std::string &a,
                        const std::string &b, const std::string &d,
                        const std::string &attrs = "{}",
                        const std::string &ports = "") {
    return "{\"version\": \"3.5.0\", \"engine_kind\": \"cpu\", "
           "\"fpmath_mode\": \"strict\", "
           + ports
           + "\"graph\": [{\"id\": 0, \"name\": \"s\", \"kind\": "
             "\"Select\", \"attrs\": "
           + attrs + ", \"inputs\": [" + c + ", " + a + ", " + b
           + "], \"outputs\": [" + d + "]}]}";
}

std::string dense(const std::string &id, const std::string &dtype) {
    return lt_json(id, dtype, "[2, 3]", "[3, 1]");
}

TEST(JsonGraph, ReadsEveryField) {
    const json_graph g =
            parse_json_graph(read(json_dir + "/select_all_fields.json"));
    EXPECT_EQ(g.version, "3.11.0");
    EXPECT_EQ(g.engine_kind, "cpu");
    EXPECT_EQ(g.fpmath_mode, "strict");
    EXPECT_EQ(g.input_ports,
              (std::vector<size_t> { 10, 11, 4294967301ull, 12 }));
    EXPECT_EQ(g.output_ports, (std::vector<size_t> { 4294967303ull }));
    ASSERT_EQ(g.ops.size(), 3u);

    const auto &mm = g.ops[0];
    EXPECT_EQ(mm.id, 4294967296ull); // beyond 32 bits
    EXPECT_EQ(mm.kind, op::kind::MatMul);
    EXPECT_EQ(mm.name, "matmul");
    ASSERT_EQ(mm.attrs.size(), 3u); // accumulation_mode is kept
    EXPECT_EQ(mm.attrs[0].first, "accumulation_mode");
    EXPECT_EQ(std::get<std::string>(mm.attrs[0].second), "strict");
    EXPECT_EQ(std::get<bool>(mm.attrs[1].second), false);
    EXPECT_EQ(std::get<bool>(mm.attrs[2].second), true);
    const lt &a = mm.inputs[0];
    EXPECT_EQ(a.get_id(), 10u);
    EXPECT_EQ(a.get_data_type(), dt::f32);
    EXPECT_EQ(a.get_dims(), (lt::dims { 2, 3, 4, 8 }));
    EXPECT_EQ(a.get_strides(), (lt::dims { 96, 32, 8, 1 }));
    EXPECT_EQ(a.get_property_type(), lt::property_type::variable);
    const lt &b = mm.inputs[1];
    EXPECT_EQ(b.get_layout_type(), lt::layout_type::undef);
    EXPECT_EQ(b.get_property_type(), lt::property_type::constant);
    EXPECT_EQ(b.get_dims(), (lt::dims { 2, 3, 5, 8 }));

    const auto &sel = g.ops[1];
    EXPECT_EQ(sel.kind, op::kind::Select);
    EXPECT_EQ(sel.inputs[0].get_data_type(), dt::boolean);
    EXPECT_EQ(sel.inputs[0].get_id(), 4294967301ull);
    EXPECT_EQ(sel.inputs[2].get_ndims(), 0);   // 0-D
    EXPECT_EQ(sel.outputs[0].get_ndims(), -1); // unknown rank as written

    const auto &q = g.ops[2];
    EXPECT_EQ(q.kind, op::kind::Quantize);
    ASSERT_EQ(q.attrs.size(), 5u); // name order
    EXPECT_EQ(q.attrs[0].first, "alpha");
    EXPECT_EQ(std::get<float>(q.attrs[0].second), 0.25f);
    EXPECT_EQ(std::get<int64_t>(q.attrs[1].second), 1);
    EXPECT_EQ(std::get<std::string>(q.attrs[2].second), "per_tensor");
    EXPECT_EQ(std::get<std::vector<float>>(q.attrs[3].second),
              (std::vector<float> { 0.00392157f, 2.5f }));
    EXPECT_EQ(std::get<std::vector<int64_t>>(q.attrs[4].second),
              (std::vector<int64_t> { 0, -3 }));
    const lt &u = q.outputs[0];
    EXPECT_EQ(u.get_data_type(), dt::u8);
    EXPECT_EQ(u.get_layout_type(), lt::layout_type::any);
    EXPECT_EQ(u.get_dims(), (lt::dims { 2, lt::unknown_dim, 4, -1 }));
}

TEST(JsonGraph, EveryDataTypeByName) {
    const std::pair<const char *, dt> types[] = {
        { "f16", dt::f16 },         { "bf16", dt::bf16 },
        { "f32", dt::f32 },         { "s32", dt::s32 },
        { "s8", dt::s8 },           { "u8", dt::u8 },
        { "f64", dt::f64 },         { "boolean", dt::boolean },
        { "f8_e5m2", dt::f8_e5m2 }, { "f8_e4m3", dt::f8_e4m3 },
        { "s4", dt::s4 },           { "u4", dt::u4 },
        { "s64", dt::s64 },         { "u16", dt::u16 },
        { "s16", dt::s16 },         { "u32", dt::u32 },
        { "u64", dt::u64 },         { "undef", dt::undef },
    };
    for (const auto &t : types) {
        // A Wildcard op takes any type.
        const std::string text =
                "{\"graph\": [{\"id\": 1, \"kind\": \"Wildcard\", \"inputs\": ["
                + dense("1", t.first) + "], \"outputs\": ["
                + dense("2", t.first) + "]}]}";
        const json_graph g = parse_json_graph(text);
        EXPECT_EQ(g.ops[0].inputs[0].get_data_type(), t.second) << t.first;
        // The writer uses the same names.
        EXPECT_NE(impl::write_json_graph(g).find(std::string("\"dtype\": \"")
                                                 + t.first + "\""),
                  std::string::npos)
                << t.first;
    }
}

TEST(JsonGraph, EveryOpKindByName) {
    for (int k = 0; k < static_cast<int>(op::kind::LastSymbol); ++k) {
        const char *name = op_kind2str(static_cast<op::kind>(k));
        const std::string text = "{\"graph\": [{\"id\": 3, \"kind\": \""
                                 + std::string(name)
                                 + "\", \"inputs\": [], \"outputs\": []}]}";
        EXPECT_EQ(static_cast<int>(parse_json_graph(text).ops[0].kind), k)
                << name;
    }
}

void expect_same(const json_graph &a, const json_graph &b) {
    EXPECT_EQ(a.version, b.version);
    EXPECT_EQ(a.engine_kind, b.engine_kind);
    EXPECT_EQ(a.input_ports, b.input_ports);
    EXPECT_EQ(a.output_ports, b.output_ports);
    ASSERT_EQ(a.ops.size(), b.ops.size());
    for (size_t i = 0; i < a.ops.size(); ++i) {
        const auto &x = a.ops[i], &y = b.ops[i];
        EXPECT_EQ(x.id, y.id);
        EXPECT_EQ(x.kind, y.kind);
        EXPECT_EQ(x.name, y.name);
        EXPECT_EQ(x.attrs, y.attrs);
        ASSERT_EQ(x.inputs.size(), y.inputs.size());
        ASSERT_EQ(x.outputs.size(), y.outputs.size());
        for (size_t j = 0; j < x.inputs.size(); ++j)
            EXPECT_TRUE(x.inputs[j].is_equal(y.inputs[j])) << i << " " << j;
        for (size_t j = 0; j < x.outputs.size(); ++j)
            EXPECT_TRUE(x.outputs[j].is_equal(y.outputs[j])) << i << " " << j;
    }
}

TEST(JsonGraph, WriteThenReadGivesTheSameGraph) {
    for (const char *f :
         { "select_all_fields.json", "select_pdpd_s64.json",
           "select_strided_f16.json", "select_host_scalar_bf16.json",
           "select_zero_size_f64.json", "no_select.json" }) {
        SCOPED_TRACE(f);
        const json_graph a = parse_json_graph(read(json_dir + "/" + f));
        const std::string text = impl::write_json_graph(a);
        const json_graph b = parse_json_graph(text);
        expect_same(a, b);
        EXPECT_EQ(impl::write_json_graph(b), text);
    }
}

struct bad_case {
    const char *what;
    std::string text;
    status st;
    std::vector<std::string> in_message;
};

TEST(JsonGraph, MalformedInputsNameTheFieldAndTheOp) {
    const std::string ok_c = dense("1", "boolean"), ok_a = dense("2", "f32"),
                      ok_b = dense("3", "f32"), ok_d = dense("4", "f32");
    const std::vector<bad_case> cases = {
        { "not JSON",
          "{\"graph\": [",
          status::invalid_arguments,
          { "not valid JSON" } },
        { "empty text", "", status::invalid_arguments, { "not valid JSON" } },
        { "top level array",
          "[1, 2]",
          status::invalid_arguments,
          { "top level", "array" } },
        { "no graph",
          "{\"version\": \"3.5.0\"}",
          status::invalid_arguments,
          { "graph", "missing" } },
        { "graph not array",
          "{\"graph\": 3}",
          status::invalid_arguments,
          { "graph", "expected an array", "number" } },
        { "version not string",
          "{\"version\": 3, \"graph\": []}",
          status::invalid_arguments,
          { "version", "expected a string" } },
        { "bad engine",
          "{\"engine_kind\": \"tpu\", \"graph\": []}",
          status::invalid_arguments,
          { "engine_kind", "tpu" } },
        { "op not object",
          "{\"graph\": [7]}",
          status::invalid_arguments,
          { "graph[0]", "expected an object" } },
        { "negative op id",
          "{\"graph\": [{\"id\": -1, \"kind\": \"Select\", \"inputs\": [], "
          "\"outputs\": []}]}",
          status::invalid_arguments,
          { "graph[0]", "id", "-1" } },
        { "id too large",
          "{\"graph\": [{\"id\": 184467440737095516150, \"kind\": \"Abs\", "
          "\"inputs\": [], \"outputs\": []}]}",
          status::invalid_arguments,
          { "graph[0]", "id" } },
        { "unknown kind",
          "{\"graph\": [{\"id\": 5, \"kind\": \"Frobnicate\", \"inputs\": "
          "[], \"outputs\": []}]}",
          status::invalid_graph_op,
          { "op 5", "kind", "Frobnicate" } },
        { "missing inputs",
          "{\"graph\": [{\"id\": 5, \"kind\": \"Abs\", \"outputs\": []}]}",
          status::invalid_arguments,
          { "op 5, Abs", "inputs", "missing" } },
        { "unknown dtype",
          select_json(ok_c, dense("2", "f128"), ok_b, ok_d),
          status::invalid_data_type,
          { "op 0, Select", "inputs[1]", "logical tensor 2", "dtype",
            "f128" } },
        { "dtype not string",
          select_json(ok_c, ok_a,
                      "{\"id\": 3, \"dtype\": 4, \"shape\": [1], "
                      "\"stride\": [1], \"layout_type\": \"strided\"}",
                      ok_d),
          status::invalid_arguments,
          { "inputs[2]", "dtype" } },
        { "shape not array",
          select_json(ok_c, ok_a, lt_json("3", "f32", "5", "[1]"), ok_d),
          status::invalid_arguments,
          { "inputs[2]", "shape", "array" } },
        { "shape of strings",
          select_json(ok_c, ok_a, lt_json("3", "f32", "[\"2\"]", "[1]"), ok_d),
          status::invalid_arguments,
          { "inputs[2]", "shape[0]", "integer" } },
        { "negative dim",
          select_json(ok_c, ok_a, lt_json("3", "f32", "[2, -5]", "[5, 1]"),
                      ok_d),
          status::invalid_shape,
          { "inputs[2]", "shape", "-5" } },
        { "too many dims",
          select_json(ok_c, ok_a,
                      lt_json("3", "f32",
                              "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]",
                              "[1]"),
                      ok_d),
          status::invalid_shape,
          { "inputs[2]", "20 dimensions" } },
        { "absurd shape",
          select_json(ok_c, ok_a,
                      lt_json("3", "f32",
                              "[4611686018427387904, 4611686018427387904]",
                              "[1, 1]"),
                      ok_d),
          status::invalid_shape,
          { "op 0, Select", "inputs[2]", "shape", "2^63 - 1 bytes" } },
        { "strides of another rank",
          select_json(ok_c, ok_a, lt_json("3", "f32", "[2, 3]", "[1]"), ok_d),
          status::invalid_shape,
          { "inputs[2]", "stride", "rank" } },
        { "negative stride",
          select_json(ok_c, ok_a, lt_json("3", "f32", "[2, 3]", "[-3, 1]"),
                      ok_d),
          status::invalid_shape,
          { "inputs[2]", "stride", "negative" } },
        { "bad layout",
          select_json(ok_c, ok_a, lt_json("3", "f32", "[1]", "[1]", "tiled"),
                      ok_d),
          status::invalid_arguments,
          { "inputs[2]", "layout_type", "tiled" } },
        { "bad property",
          select_json(ok_c, ok_a,
                      lt_json("3", "f32", "[1]", "[1]", "strided", "shared"),
                      ok_d),
          status::invalid_arguments,
          { "inputs[2]", "property_type", "shared" } },
        { "bad attribute type",
          select_json(ok_c, ok_a, ok_b, ok_d,
                      "{\"auto_broadcast\": {\"type\": \"str\", \"value\": "
                      "\"numpy\"}}"),
          status::invalid_arguments,
          { "op 0, Select", "attrs.auto_broadcast.type", "str" } },
        { "attribute value of the wrong type",
          select_json(ok_c, ok_a, ok_b, ok_d,
                      "{\"axis\": {\"type\": \"s64\", \"value\": \"1\"}}"),
          status::invalid_arguments,
          { "attrs.axis.value", "integer" } },
        { "bool out of range",
          "{\"graph\": [{\"id\": 2, \"kind\": \"MatMul\", \"attrs\": "
          "{\"transpose_a\": {\"type\": \"bool\", \"value\": 2}}, "
          "\"inputs\": [], \"outputs\": []}]}",
          status::invalid_arguments,
          { "op 2, MatMul", "attrs.transpose_a.value", "0 or 1" } },
        { "unknown Select attribute",
          select_json(ok_c, ok_a, ok_b, ok_d,
                      "{\"beta_gamma\": {\"type\": \"s64\", \"value\": 1}}"),
          status::invalid_graph_op,
          { "op 0, Select", "attrs.beta_gamma" } },
        { "duplicate op ids",
          "{\"graph\": [{\"id\": 1, \"kind\": \"Abs\", \"inputs\": [], "
          "\"outputs\": []}, {\"id\": 1, \"kind\": \"Exp\", \"inputs\": [], "
          "\"outputs\": []}]}",
          status::invalid_graph,
          { "op 1 (Exp)", "used twice" } },
        { "tensor produced twice",
          "{\"graph\": [{\"id\": 1, \"kind\": \"Abs\", \"inputs\": ["
                  + dense("1", "f32") + "], \"outputs\": [" + dense("2", "f32")
                  + "]}, {\"id\": 2, \"kind\": \"Exp\", \"inputs\": ["
                  + dense("1", "f32") + "], \"outputs\": [" + dense("2", "f32")
                  + "]}]}",
          status::invalid_graph,
          { "op 2 (Exp)", "logical tensor 2", "already the output" } },
        { "tensor of two types",
          "{\"graph\": [{\"id\": 1, \"kind\": \"Abs\", \"inputs\": ["
                  + dense("1", "f32") + "], \"outputs\": [" + dense("2", "f32")
                  + "]}, {\"id\": 2, \"kind\": \"Exp\", \"inputs\": ["
                  + dense("2", "bf16") + "], \"outputs\": [" + dense("3", "f32")
                  + "]}]}",
          status::invalid_graph,
          { "op 2 (Exp)", "logical tensor 2", "bf16" } },
        { "dangling input port",
          select_json(ok_c, ok_a, ok_b, ok_d, "{}",
                      "\"input_ports\": [1, 2, 99], "),
          status::invalid_graph,
          { "input_ports", "99" } },
        { "dangling output port",
          select_json(ok_c, ok_a, ok_b, ok_d, "{}", "\"output_ports\": [3], "),
          status::invalid_graph,
          { "output_ports", "3" } },
        { "port not an id",
          select_json(ok_c, ok_a, ok_b, ok_d, "{}",
                      "\"input_ports\": [\"1\"], "),
          status::invalid_arguments,
          { "input_ports[0]" } },
        { "cycle",
          "{\"graph\": [{\"id\": 1, \"kind\": \"Abs\", \"inputs\": ["
                  + dense("1", "f32") + "], \"outputs\": [" + dense("2", "f32")
                  + "]}, {\"id\": 2, \"kind\": \"Exp\", \"inputs\": ["
                  + dense("2", "f32") + "], \"outputs\": [" + dense("1", "f32")
                  + "]}]}",
          status::invalid_graph,
          { "cycle" } },
    };
    for (const auto &c : cases) {
        SCOPED_TRACE(c.what);
        try {
            parse_json_graph(c.text);
            ADD_FAILURE() << "no error for: " << c.text;
        } catch (const error &e) {
            EXPECT_EQ(e.status, c.st) << e.what();
            for (const auto &m : c.in_message)
                EXPECT_NE(std::string(e.what()).find(m), std::string::npos)
                        << "'" << m << "' not in: " << e.what();
        }
    }
}

TEST(JsonGraph, DeepNestingIsAnErrorNotACrash) {
    // 100000 nested arrays: a recursive parser would overflow the stack.
    const std::string text = "{\"graph\": " + std::string(100000, '[')
                             + std::string(100000, ']') + "}";
    try {
        parse_json_graph(text);
        ADD_FAILURE() << "no error";
    } catch (const error &e) {
        EXPECT_EQ(e.status, status::invalid_arguments);
        EXPECT_NE(std::string(e.what()).find("graph[0]"), std::string::npos)
                << e.what();
    }
}

TEST(JsonGraph, UnsupportedOpsBecomeUnsupportedPartitions) {
    const json_graph g =
            parse_json_graph(read(json_dir + "/select_all_fields.json"));
    graph sg(engine::kind::cpu);
    for (const auto &o : g.ops)
        sg.add_op(impl::make_op(o));
    sg.finalize();
    const auto parts = sg.get_partitions();
    ASSERT_EQ(parts.size(), 3u);
    EXPECT_FALSE(parts[0].is_supported());
    EXPECT_TRUE(parts[1].is_supported());
    EXPECT_FALSE(parts[2].is_supported());
    EXPECT_EQ(parts[1].get_ops(), (std::vector<size_t> { 4294967297ull }));
}

std::vector<std::string> files_with_prefix(const std::string &prefix) {
    std::vector<std::string> r;
    for (int i = 1; i < 4096; ++i) {
        const std::string f = prefix + std::to_string(i) + ".json";
        if (std::ifstream(f))
            r.push_back(f);
    }
    return r;
}

TEST(JsonGraph, DumpsOnFinalizeAndCompileLoadBack) {
    for (const auto &f : files_with_prefix("selgraph_graph_"))
        std::remove(f.c_str());
    for (const auto &f : files_with_prefix("selgraph_partition_"))
        std::remove(f.c_str());
    ASSERT_EQ(setenv("SELGRAPH_GRAPH_DUMP", "graph,subgraph", 1), 0);
    lt c(10, dt::boolean, { 1, 4 }, lt::layout_type::strided);
    lt a(11, dt::f32, { 3, 4 }, lt::layout_type::strided);
    lt b(12, dt::f32, lt::dims {}, lt::layout_type::strided,
         lt::property_type::host_scalar);
    lt d(13, dt::f32, lt::layout_type::any);
    op s(21, op::kind::Select, { c, a, b }, { d }, "masked_fill");
    s.set_attr(op::attr::auto_broadcast, "numpy");
    graph g(engine::kind::cpu);
    g.add_op(s);
    g.finalize();
    engine eng(engine::kind::cpu, 0);
    auto parts = g.get_partitions();
    auto cp = parts[0].compile({ c, a, b }, { d }, eng);
    ASSERT_EQ(unsetenv("SELGRAPH_GRAPH_DUMP"), 0);

    const auto graphs = files_with_prefix("selgraph_graph_");
    ASSERT_EQ(graphs.size(), 1u);
    const json_graph gg = parse_json_graph(read(graphs[0]));
    ASSERT_EQ(gg.ops.size(), 1u);
    EXPECT_EQ(gg.ops[0].id, 21u);
    EXPECT_EQ(gg.ops[0].name, "masked_fill");
    EXPECT_EQ(gg.input_ports, (std::vector<size_t> { 10, 11, 12 }));
    EXPECT_EQ(gg.output_ports, (std::vector<size_t> { 13 }));
    EXPECT_TRUE(gg.ops[0].inputs[2].is_equal(b));
    EXPECT_EQ(gg.ops[0].inputs[2].get_property_type(),
              lt::property_type::host_scalar);
    EXPECT_EQ(gg.ops[0].outputs[0].get_ndims(), -1);

    const std::string part =
            "selgraph_partition_" + std::to_string(parts[0].get_id()) + ".json";
    const json_graph pg = parse_json_graph(read(part));
    ASSERT_EQ(pg.ops.size(), 1u);
    // The partition as compiled: dst inferred, dense.
    EXPECT_TRUE(pg.ops[0].outputs[0].is_equal(cp.query_logical_tensor(13)));
    EXPECT_EQ(pg.ops[0].outputs[0].get_dims(), (lt::dims { 3, 4 }));
    EXPECT_EQ(pg.ops[0].attrs.size(), 1u);
}

TEST(JsonGraph, NoDumpWithoutTheVariable) {
    ASSERT_EQ(unsetenv("SELGRAPH_GRAPH_DUMP"), 0);
    for (const auto &f : files_with_prefix("selgraph_graph_"))
        std::remove(f.c_str());
    graph g(engine::kind::cpu);
    g.add_op(op(1, op::kind::Abs));
    g.finalize();
    EXPECT_TRUE(files_with_prefix("selgraph_graph_").empty());
}

} // namespace
