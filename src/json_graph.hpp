// oneDNN's graph JSON (as ONEDNN_GRAPH_DUMP writes it and benchdnn's graph
// driver reads it): JSON text <-> ops, logical tensors and ports. The loader
// checks everything it reads and throws selgraph::error naming the field and
// the op; the writer is what SELGRAPH_GRAPH_DUMP uses.
#ifndef SELGRAPH_SRC_JSON_GRAPH_HPP
#define SELGRAPH_SRC_JSON_GRAPH_HPP

#include <string>
#include <utility>
#include <vector>

#include "op_impl.hpp"

namespace selgraph {
namespace impl {

/// One op as the file has it. `attrs` keeps every attribute (in name order),
/// also those whose name selgraph's op::attr lacks (oneDNN's newer
/// attributes, such as MatMul's accumulation_mode): they travel through a
/// load and a write, and only the named ones are set on the op.
struct json_op {
    size_t id = 0;
    std::string name;
    op::kind kind = op::kind::Wildcard;
    std::vector<std::pair<std::string, attr_value>> attrs;
    std::vector<logical_tensor> inputs;
    std::vector<logical_tensor> outputs;
};

struct json_graph {
    std::string version = "3.5.0"; // the oneDNN format version written
    std::string engine_kind = "cpu";
    std::string fpmath_mode = "strict";
    std::vector<size_t> input_ports;
    std::vector<size_t> output_ports;
    std::vector<json_op> ops;
};

/// Parses and checks a graph. Throws selgraph::error: invalid_arguments for
/// bad JSON, a missing field or a field of the wrong type,
/// invalid_data_type for an unknown dtype, invalid_shape for a bad shape or
/// stride, invalid_graph for duplicate op ids, a tensor produced twice or
/// described two ways, a port that names no tensor, or a cycle.
json_graph parse_json_graph(const std::string &text);

/// The graph as oneDNN writes it (indented JSON).
std::string write_json_graph(const json_graph &g);

/// The public op for a loaded op (attributes op::attr names).
op make_op(const json_op &o);

/// A loaded op from an op's state (for dumps).
json_op to_json_op(const op::impl &o);

/// Input ports (tensors no op produces) and output ports (tensors no op
/// consumes) of a list of ops, in order of first appearance.
void infer_ports(json_graph &g);

/// Writes `g` to `file` in the working directory; failures are reported on
/// stderr and otherwise ignored (a dump never fails the call it is in).
void dump_json_graph(const json_graph &g, const std::string &file);

/// Which dumps SELGRAPH_GRAPH_DUMP asks for ("graph", "subgraph", or both
/// separated by a comma), read at each call.
bool graph_dump_enabled(const char *what);

} // namespace impl
} // namespace selgraph

#endif
