// The Select op schema (arity, data types, attributes) and its shape
// inference: the only place that decides whether a Select is valid.
#ifndef SELGRAPH_SRC_SELECT_SCHEMA_HPP
#define SELGRAPH_SRC_SELECT_SCHEMA_HPP

#include "op_impl.hpp"

namespace selgraph {
namespace impl {

enum class broadcast_mode { numpy, none };

/// Port names in order: cond, src_0, src_1, dst.
extern const char *const select_port_names[4];

/// Arity, data types and attributes (add_op time). Throws invalid_graph_op or
/// invalid_data_type naming the op, the port and the types.
void verify_select_op(const op::impl &o);

/// The op's auto_broadcast attribute (numpy when absent). Assumes verified.
broadcast_mode select_broadcast_mode(const op::impl &o);

/// Infers dst's shape from cond, src_0 and src_1 (compile time): numpy
/// broadcast of src_0 with src_1, then one-way broadcast of cond to it; with
/// `none` all shapes must be equal. Throws invalid_shape naming the op, the
/// ports and the shapes.
dims infer_select_dst_shape(size_t op_id, broadcast_mode mode, const dims &cond,
                            const dims &src_0, const dims &src_1);

} // namespace impl
} // namespace selgraph

#endif
