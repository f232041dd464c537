#ifndef SELGRAPH_SRC_BROADCAST_HPP
#define SELGRAPH_SRC_BROADCAST_HPP

#include <string>

#include "kernels/select_problem.hpp"

namespace selgraph {
namespace impl {

/// The folds fold_select may make where a CPU's plans differ.
struct fold_options {
    /// Step 7's mirror through padding: a transposed dst's short rows
    /// merge with the dim outside the tile dim where the inputs' rows are
    /// padded alike (select_folded::piece_pitch > piece). Off: they keep
    /// their fold (plan_unstaged, cpu_tuning::dt_over_padded_dst_pieces).
    bool padded_dst_pieces = true;
};

/// Folds the broadcast pattern of `p` into the fewest dims (see the worked
/// example in broadcast.cpp and docs/broadcast-folding.md).
select_folded fold_select(const select_nd &p, const fold_options &o = {});

/// `p` walked in memory order: the dims where dst is 1 dropped, the rest
/// ordered by one operand's strides (outermost first) and merged where
/// every operand is contiguous across two (steps 2 to 4 of fold_select, in
/// element strides). Of dst's order and each input's, the one whose row
/// costs the fewest bytes of cache lines per element (an operand's own
/// bytes where contiguous, none where broadcast, its stride's up to a
/// 64-byte line where strided; ties: dst's, then cond's, src_0's, src_1's).
/// The reference kernel runs it where no JIT plan does (select_plan::ref).
/// An empty `p` is returned as it is.
select_nd coalesce_select(const select_nd &p);

/// Bytes per element of `f` that go through a transpose from memory, the
/// measure by which fold_select picks an order; -1 where an operand is
/// left strided.
int64_t fold_transposed_bytes(const select_folded &f);

/// "64x65536 bcast=c-,cb modes=cv,av,bs" style summary for verbose output.
std::string folded2str(const select_folded &f);

} // namespace impl
} // namespace selgraph

#endif
