// The two descriptions of one Select a kernel can be handed.
//
// select_nd: the problem as the user wrote it, every operand right-aligned to
// dst's rank, strides in elements and 0 where an operand is broadcast. The
// reference kernel runs this in the dim order it is given, independently of
// any folding, so that it can be the oracle of every folded JIT kernel; a
// plan that runs no JIT kernel hands it the problem reordered and merged
// in memory order (coalesce_select, src/broadcast.hpp).
//
// select_folded: the same problem after broadcast folding (src/broadcast.*):
// dims in dst's memory order, an inner dim (dst's contiguous one) and up to
// max_ndims-1 outer dims, byte strides, and per operand a mode along the
// inner dim (vector, scalar or transposed).
#ifndef SELGRAPH_KERNELS_SELECT_PROBLEM_HPP
#define SELGRAPH_KERNELS_SELECT_PROBLEM_HPP

#include <cstddef>
#include <cstdint>

namespace selgraph {
namespace impl {

constexpr int max_ndims = 12;

/// Operand indices, in port order.
enum operand { op_cond = 0, op_src0 = 1, op_src1 = 2, op_dst = 3 };
constexpr int n_operands = 4;

/// Bytes of one element of operand `op`: cond is 1 byte, the others
/// `elem_size`.
constexpr int operand_bytes(int op, int elem_size) {
    return op == op_cond ? 1 : elem_size;
}

struct select_nd {
    int ndims = 0; ///< dst's rank (0 for a 0-D dst)
    int64_t dims[max_ndims] = {};
    /// Element strides per operand; 0 where broadcast.
    int64_t strides[n_operands][max_ndims] = {};
    int elem_size = 4; ///< bytes of a src/dst element (1, 2, 4 or 8); cond
                       ///< is 1 byte

    /// Element count; 0 as soon as a dim is 0, so that the huge dims of an
    /// empty tensor never overflow.
    int64_t nelems() const {
        for (int i = 0; i < ndims; ++i)
            if (dims[i] == 0)
                return 0;
        int64_t n = 1;
        for (int i = 0; i < ndims; ++i)
            n *= dims[i];
        return n;
    }
};

/// How an operand moves along the folded inner dim.
enum class inner_mode : uint8_t {
    vector = 0,  ///< contiguous elements
    scalar = 1,  ///< one element for the whole row (broadcast, stride 0)
    strided = 2, ///< anything else: no JIT kernel, the reference runs it
    /// Strided along the row but contiguous along the outer dim `tdim`:
    /// moved through a transposed tile (src/parallel_execute.cpp).
    transposed = 3,
};

/// Widened rows: a row under short_row_bytes of dst whose row vectors keep
/// it from merging becomes rows of up to wide_row_elems elements, the row
/// vectors repeated (src/broadcast.cpp, step 6; and inside the tiles of
/// src/parallel_execute.cpp). Folds that transpose nothing are compared by
/// the bytes per element their operands move in runs under short_row_bytes
/// (step 3).
constexpr int64_t short_row_bytes = 1024, wide_row_elems = 1024;

/// Row groups: a transposed input's lines under short_line_bytes along the
/// tile dim, contiguous into the next outer dim, take that dim into the
/// tile dim (src/broadcast.cpp, step 8).
constexpr int64_t short_line_bytes = 512;

/// dst's pieces: a transposed dst's rows under dst_piece_row_bytes merge
/// with the dim outside the tile dim for the inputs (src/broadcast.cpp,
/// step 7's mirror). Survey layouts on the Zen 5 guest ran 1.1-5.7x as
/// fast so in rows of 4 to 202 bytes, and 0.7-1.0x in rows of 376 to 608
/// (docs/performance.md, "A transposed dst in pieces").
constexpr int64_t dst_piece_row_bytes = 256;

/// Pieces a pitch apart beside transposed inputs (select_folded::
/// gapped_pieces): rows under padded_piece_row_bytes of dst, each a
/// partial line of dst in the fold of rows. Survey layouts on the Zen 5
/// guest ran 1.3-2.2x as fast so in rows of 20 to 24 bytes; in rows of
/// 159 and 160 bytes 1.2-1.3x at 1 thread but 0.6-0.8x at 2, in rows of
/// 411 to 804 bytes 0.8-0.9x (docs/performance.md, "Padded pieces beside
/// transposed inputs"); on the 2-vCPU Intel Xeon rows of 159 to 804 bytes
/// 0.66-1.01x ("The pieces' bounds on Intel").
constexpr int64_t padded_piece_row_bytes = 64;

struct select_folded {
    int ndims = 1; ///< folded dims; dims[ndims-1] is the inner dim
    int64_t dims[max_ndims] = {};
    /// Byte strides per operand and folded dim.
    int64_t strides[n_operands][max_ndims] = {};
    inner_mode mode[n_operands] = {};
    /// Bit i (0 = cond, 1 = src_0, 2 = src_1) set where operand i is
    /// broadcast (stride 0) along a folded dim: for verbose and docs.
    uint8_t bcast_mask[max_ndims] = {};
    int elem_size = 4;
    /// The outer dim (always ndims-2) along which every transposed operand
    /// is contiguous; -1 when no operand is transposed.
    int tdim = -1;
    /// Short rows widened: the row is `rep` copies of the original row of
    /// inner() / rep elements, and each operand in `rep_mask` (bit i for
    /// operand i: one row vector for the whole problem, broadcast along
    /// every outer dim) is read from a buffer holding its row `rep` times.
    int64_t rep = 1;
    uint8_t rep_mask = 0;
    /// Pieces (src/broadcast.cpp, step 7): the inner dim is an outer dim
    /// merged into a short row for every operand but the transposed inputs,
    /// whose lines it leaves in pieces of `piece` columns, each transposed
    /// operand's pieces piece_stride[i] bytes apart (column c of the row at
    /// (c / piece) * piece_stride[i] + (c % piece) * strides[i][inner]);
    /// or, with dst transposed (and no input), for the inputs but not dst,
    /// whose pieces lie piece_stride[op_dst] bytes apart. Pieces begin
    /// every `piece_pitch` columns (column c of a transposed operand at
    /// (c / piece_pitch) * piece_stride[i] + (c % piece_pitch) *
    /// strides[i][inner]): `piece` but where the operands read along the
    /// long row (dst's pieces' inputs, or dst and the inputs beside the
    /// transposed ones) are padded to a longer pitch, read along it with
    /// their padding; the columns past a piece's end are no one's, and dst
    /// gets only the pieces.
    /// 0: no pieces, every operand's columns at one stride.
    int64_t piece = 0;
    int64_t piece_pitch = 0;
    int64_t piece_stride[n_operands] = {};
    /// Row groups (src/broadcast.cpp, step 8): the tile dim is an outer dim
    /// merged with a short tile dim of `group` rows for every transposed
    /// input (contiguous across the two), while each other operand's rows
    /// come in groups of `group` rows, group_stride[i] bytes apart (row r
    /// at (r / group) * group_stride[i] + (r % group) * strides[i][tdim]).
    /// 0: no groups, every operand's rows at one stride.
    int64_t group = 0;
    int64_t group_stride[n_operands] = {};

    bool has_transposed() const { return tdim >= 0; }
    /// Pieces of transposed inputs (not dst) a pitch apart: dst's long row
    /// has columns that are no one's, so the row kernel runs each long
    /// row's pieces as one call's rows and never stores them.
    bool gapped_pieces() const {
        return piece > 0 && piece_pitch > piece
               && mode[op_dst] != inner_mode::transposed;
    }

    int64_t inner() const { return dims[ndims - 1]; }
    int64_t rows() const {
        int64_t r = 1;
        for (int i = 0; i + 1 < ndims; ++i)
            r *= dims[i];
        return r;
    }
};

} // namespace impl
} // namespace selgraph

#endif
