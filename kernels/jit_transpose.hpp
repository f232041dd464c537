// The transpose kernel ABI: every kernel is
// `void kernel(const transpose_call_args *)` and copies a tile of
// rows x cols elements of w bytes from src, contiguous along r (one line of
// `rows` elements per column c, lines src_ld bytes apart), to dst,
// contiguous along c (one row of `cols` elements per r, rows dst_ld bytes
// apart). It writes exactly those elements, no byte besides, and reads
// them; an AVX2 call of fewer than 32 / w rows also reads bytes between
// them (its lines' ends, gaps between lines), never before the first line
// nor past the last line's last row. It may also prefetch (a hint that never
// faults) lines of the columns [cols, pf_cols) at the same rows, and the bytes
// [pf_next, pf_next + pf_next_bytes) in address order, which the caller vouches
// for. Raw bits move: NaN payloads survive. No alignment is assumed; src_ld and
// dst_ld are any positive byte counts (multiples of w). The kernels run in
// register tiles (kernels/jit_transpose.cpp), wide ones of vlen / w columns
// where a tile's source lines stay in L1 (close together, or spread over
// its sets in a source the caller marks src_cached); a call of a few lines
// contiguous on one side (src_ld = rows * w or dst_ld = cols * w) runs as
// permuted vector blocks instead, and so does a call of a few columns
// into padded dst rows (transpose_packs_gaps, transpose_packs_kept_gaps,
// transpose_packs_rows_apart). AVX-512 keeps every
// element on the vector path (masked partial tiles, or one row per 16-byte
// lane for calls of at most a lane of rows); AVX2 does where R is at
// least 32 / w and C at least 8 (tails as overlapping full tiles), and
// for fewer rows in the column blocks whose whole-vector loads end within
// the source's span, the rest element by element.
#ifndef SELGRAPH_KERNELS_JIT_TRANSPOSE_HPP
#define SELGRAPH_KERNELS_JIT_TRANSPOSE_HPP

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "ref_transpose.hpp"
#include "select_kernel.hpp"

namespace selgraph {
namespace impl {

struct transpose_key {
    kernel_isa isa;
    uint8_t elem_size; ///< 1, 2, 4 or 8 bytes
    /// Non-temporal stores: where dst and dst_ld are multiples of 64 bytes,
    /// whole column blocks of 64 bytes of dst rows (more where a register
    /// tile is wider) are transposed into a staging block in L1 and streamed
    /// to dst line by line; the rest is stored as by the regular kernel.
    uint8_t nt_stores = 0;
    /// The most lines (rows or columns) of a call that runs as packed
    /// blocks (jit_transpose.cpp); fewer than 2: none. At most 8 (more is
    /// an unsupported key); calls of more lines than a register tile holds
    /// run register tiles. The dispatcher picks it per CPU
    /// (transpose_packed_lines, src/dispatch.hpp); any value gives the same
    /// results.
    uint8_t packed_lines = 8;
};

/// "<isa>_tr_e<bytes>[_nt]", for example avx512_core_tr_e4. packed_lines
/// is a per-CPU tuning, as an unroll would be, and is not named.
std::string transpose_kernel_name(const transpose_key &k);

using transpose_kernel_fn = void (*)(const transpose_call_args *);

/// The rows (dst rows) of one register tile of the kernel for `k`: a
/// vector's elements (32 or 64 bytes). A non-temporal kernel carries a
/// row's partial lines (transpose_call_args::carry) only for the rows of
/// its whole register tiles.
constexpr int transpose_tile_rows(const transpose_key &k) {
    return (k.isa == kernel_isa::avx512_core ? 64 : 32) / k.elem_size;
}

/// The most columns of a call that runs as packed blocks on `k` (fewer than
/// 2: none): packed_lines, at most 8 and fewer than a register tile's
/// columns (AVX-512 16, AVX2 8).
constexpr int transpose_packed_cols(const transpose_key &k) {
    const int kc = k.isa == kernel_isa::avx512_core ? 16 : 8;
    return std::min({ int(k.packed_lines), 8, kc - 1 });
}

/// Whether a call of `cols` columns into dst rows `pitch` elements apart
/// with transpose_call_args::dst_gaps runs as packed blocks on `k`: a
/// regular JIT kernel, pitch 4 or 8, 2 <= cols < pitch, cols at most
/// transpose_packed_cols(k). Such a scratch of short rows padded to the
/// pitch of the operands read beside it (channels-last pixels of 3
/// channels padded to 4) otherwise ran as masked register tiles, slower
/// than the packed blocks into rows back to back (docs/performance.md).
constexpr bool transpose_packs_gaps(const transpose_key &k, int64_t cols,
                                    int64_t pitch) {
    return k.isa != kernel_isa::ref && !k.nt_stores
           && (pitch == 4 || pitch == 8) && cols >= 2 && cols < pitch
           && cols <= transpose_packed_cols(k);
}

/// Whether a call of `cols` columns into dst rows `pitch` elements apart
/// whose gaps are not the caller's (dst_ld = pitch * w, no
/// transpose_call_args::dst_gaps) runs as packed blocks on `k`: AVX-512
/// (masked stores), pitch 4 or 8, 2 <= cols < pitch, cols at most
/// transpose_packed_cols(k); the non-temporal kernels too, whose packed
/// stores are regular. The blocks store each vector under the mask of the
/// lanes that hold row elements, the gaps kept: a transposed dst of
/// channels-last pixels of 3 channels padded to 4 (NCHW inputs into such
/// a dst) otherwise ran as masked register tiles, a row at a time
/// (docs/performance.md).
constexpr bool transpose_packs_kept_gaps(const transpose_key &k, int64_t cols,
                                         int64_t pitch) {
    return k.isa == kernel_isa::avx512_core && (pitch == 4 || pitch == 8)
           && cols >= 2 && cols < pitch && cols <= transpose_packed_cols(k);
}

/// The lanes P (4 or 8) that a packed block gives each of the rows of
/// `cols` (at most 8) columns it stores a row at a time
/// (transpose_packs_rows_apart): each row lies in P lanes of one vector.
constexpr int transpose_rows_apart_pitch(int64_t cols) {
    return cols <= 4 ? 4 : 8;
}

/// Whether a call of `cols` columns into dst rows at any other dst_ld of
/// at least cols * w bytes (not cols * w, nor pitch * w with
/// transpose_packs_gaps or transpose_packs_kept_gaps) runs as packed
/// blocks on `k`, each row stored on its own: AVX-512 under the mask of
/// its elements, for 4- and 8-byte elements (whose rows of 4 or 8 lanes
/// are whole 16-, 32- or 64-byte parts of a vector); AVX2 in pieces of 8,
/// 4, 2 and 1 bytes, every element size, rows of 4 or 8 lanes within a
/// vector; 2 <= cols <= transpose_packed_cols(k). A transposed dst of a
/// few channels into pixels padded to 4 (L32), a channel slice of a
/// channels-last tensor or pixels padded past 8 elements otherwise ran as
/// masked register tiles on AVX-512 and element by element on AVX2
/// (docs/performance.md).
constexpr bool transpose_packs_rows_apart(const transpose_key &k,
                                          int64_t cols) {
    const bool avx512 = k.isa == kernel_isa::avx512_core;
    return ((avx512 && (k.elem_size == 4 || k.elem_size == 8))
            || (k.isa == kernel_isa::avx2
                && transpose_rows_apart_pitch(cols) * k.elem_size <= 32))
           && cols >= 2 && cols <= transpose_packed_cols(k);
}

/// A generated transpose kernel: immutable once built.
class transpose_kernel {
public:
    using key_type = transpose_key;
    using fn_type = transpose_kernel_fn;
    using args_type = transpose_call_args;
    static std::string name_of(const transpose_key &k) {
        return transpose_kernel_name(k);
    }

    virtual ~transpose_kernel() = default;
    virtual transpose_kernel_fn fn() const = 0;
    virtual const std::string &name() const = 0;
    virtual const transpose_key &key() const = 0;
};

/// Generates the Xbyak kernel for `key` (isa avx2 or avx512_core). The code
/// pages are made read+execute, never writable and executable at once.
/// Unsupported keys and generation failures throw selgraph::error.
std::shared_ptr<const transpose_kernel>
create_jit_transpose_kernel(const transpose_key &key);

/// The process-wide kernel for `key`, generated once (thread-safe), alive
/// until exit; null for isa ref. Throws as create_jit_transpose_kernel.
const transpose_kernel *get_transpose_kernel(const transpose_key &key);

} // namespace impl
} // namespace selgraph

#endif
