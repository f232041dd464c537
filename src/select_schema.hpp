// The Select op schema (arity, data types, attributes) and its shape
// inference: the only place that decides whether a Select is valid.
#ifndef SELGRAPH_SRC_SELECT_SCHEMA_HPP
#define SELGRAPH_SRC_SELECT_SCHEMA_HPP

#include "op_impl.hpp"

namespace selgraph {
namespace impl {

enum class broadcast_mode { numpy, none, pdpd };

/// Port names in order: cond, src_0, src_1, dst.
extern const char *const select_port_names[4];

/// Arity, data types and attributes (add_op time). Throws invalid_graph_op,
/// invalid_data_type or unimplemented naming the op, the port and the types.
void verify_select_op(const op::impl &o);

/// The op's auto_broadcast attribute (numpy when absent). Assumes verified.
broadcast_mode select_broadcast_mode(const op::impl &o);

/// The op's axis attribute (-1 when absent). Assumes verified.
int64_t select_axis(const op::impl &o);

/// The shapes of a Select after broadcasting: dst's dims, and where each
/// input lies on them. Dim j of input `p` lies on dst dim j + offset[p]; an
/// input dim that is 1, or that falls outside dst (a trailing 1 under
/// pdpd), is broadcast. numpy and none right-align every input, pdpd places
/// src_1 and cond at `axis`: every mode becomes the same N-d problem.
struct select_shapes {
    dims dst;
    int offset[3] = { 0, 0, 0 };
};

/// Infers dst's shape and the placement of cond, src_0 and src_1 (compile
/// time).
/// - numpy: numpy broadcast of src_0 with src_1, then one-way broadcast of
///   cond to it.
/// - none: all shapes equal.
/// - pdpd: dst is src_0's shape; src_1, then cond, are laid onto it from
///   `axis` (-1: right-aligned), trailing dims of 1 ignored.
/// Throws invalid_shape naming the op, the ports, the shapes (and the axis).
select_shapes infer_select_shapes(size_t op_id, broadcast_mode mode,
                                  int64_t axis, const dims &cond,
                                  const dims &src_0, const dims &src_1);

} // namespace impl
} // namespace selgraph

#endif
