// The portable reference transpose: the oracle of the JIT transpose kernels
// (kernels/jit_transpose.hpp). It moves raw 1-, 2-, 4- or 8-byte words.
#ifndef SELGRAPH_KERNELS_REF_TRANSPOSE_HPP
#define SELGRAPH_KERNELS_REF_TRANSPOSE_HPP

#include <cstdint>

namespace selgraph {
namespace impl {

/// One call of a transpose kernel: rows x cols elements of w bytes.
struct transpose_call_args {
    const void *src; ///< element (r, c) at src + c * src_ld + r * w
    void *dst;       ///< element (r, c) at dst + r * dst_ld + c * w
    uint64_t rows;   ///< R >= 1
    uint64_t cols;   ///< C >= 1
    int64_t src_ld;  ///< bytes between consecutive c in src, > 0, w | src_ld
    int64_t dst_ld;  ///< bytes between consecutive r in dst, >= cols * w
    /// Columns, from the first, whose lines at rows [0, rows) belong to the
    /// source operand: the JIT kernels prefetch lines of the columns
    /// ahead of the ones they load, never at or past pf_cols (<= cols:
    /// nothing beyond the tile; 0: none). The reference ignores it.
    uint64_t pf_cols = 0;
    /// A second prefetch, in address order: the bytes [pf_next, pf_next +
    /// pf_next_bytes), which the caller vouches for (the next tile of the
    /// same operand), spread evenly over the JIT kernels' full register
    /// tiles, one line at a time. 0 bytes: none. The reference ignores it.
    const void *pf_next = nullptr;
    uint64_t pf_next_bytes = 0;
    /// The non-temporal variant: sfence at the end. 0: the caller fences
    /// once after a run of calls.
    uint64_t fence = 1;
    /// Whole lines from rows that do not start cache lines (the
    /// non-temporal JIT variants: AVX2 for every element size, AVX-512 for
    /// 2-, 4- and 8-byte elements, and for 1-byte ones on a CPU with
    /// AVX512_VBMI; where dst or dst_ld is not a multiple
    /// of 64 bytes but both are of min(w, 4); other kernels ignore it and
    /// write every element):
    /// each row's piece of a column block is merged in registers with the
    /// previous block's, kept in the row's slot of 64 bytes (row r at carry
    /// + r * 64, 64-byte aligned, `rows` slots), so that dst is written in
    /// whole aligned lines by non-temporal stores. Null: not used.
    void *carry = nullptr;
    /// The slots hold the previous call's last blocks of these same rows,
    /// whose columns end where this call's begin, and its carry_out was
    /// honoured: the bytes it left unwritten are written by this call. Only
    /// for a call of at least transpose_carry_cols columns and the same
    /// rows as that one (rows outside whole register tiles, and packed
    /// calls, are never carried).
    uint64_t carry_in = 0;
    /// A later call continues these rows: the last bytes of each row
    /// (those short of a whole line) stay in its slot, unwritten. Honoured
    /// where cols is a multiple of transpose_carry_cols; otherwise the call
    /// writes every element.
    uint64_t carry_out = 0;
    /// A hint: the source is in the caches (a thread's scratch, just
    /// written), so the JIT kernels' wide tiles may read lines any distance
    /// apart; from memory they read lines far apart in register tiles,
    /// which touch fewer lines at once. Results are the same either way.
    /// The reference ignores it.
    uint64_t src_cached = 0;
    /// The dst_ld - cols * w bytes after each dst row (the last row's
    /// included: rows * dst_ld bytes from dst in all) are the caller's
    /// scratch, which a kernel may overwrite with any bytes. A packed call
    /// (jit_transpose.hpp) of 2 .. P - 1 columns into rows P elements
    /// apart (dst_ld = P * w, P 4 or 8; transpose_packs_gaps) then writes
    /// whole rows of P. The reference ignores it.
    uint64_t dst_gaps = 0;
};

/// transpose_call_args::carry_in / carry_out: the column granule.
constexpr uint64_t transpose_carry_cols = 64;

/// transpose_call_args::pf_cols: the JIT kernels prefetch the lines of the
/// columns this many columns ahead of the ones they load, so that a call's
/// first transpose_prefetch_cols columns are fetched by no prefetch of its
/// own.
constexpr uint64_t transpose_prefetch_cols = 32;

/// dst(r, c) = src(r, c) for every r < rows, c < cols; elem_size 1, 2, 4
/// or 8.
void ref_transpose(const transpose_call_args &a, int elem_size);

} // namespace impl
} // namespace selgraph

#endif
