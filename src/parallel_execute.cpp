// Execution of a plan: the folded problem is a grid of rows (all outer dims
// flattened) by `inner` elements. Threads get balanced, contiguous ranges of
// (row, chunk) items; chunks are multiples of 64 elements, so each thread's
// cond bytes and dst bytes start on a cache line relative to the tensors'
// bases and threads never share a dst cache line. Each thread hands the
// kernel whole runs of rows along the innermost outer dim.
//
// A plan with transposed operands runs in tiles of R rows (the folded dim
// tdim, along which those operands are contiguous) by C columns, whole
// rows where they fit (plan_tiles): each transposed input's tile is first
// transposed into a per-thread scratch buffer (about 1 MiB, twice that
// with a staged dst), then the row kernel runs over the tile with that
// operand read from the scratch; a transposed dst is written by the row
// kernel into the scratch and transposed from there into dst, or, where
// the tile's dst is one block that the non-temporal transposing kernel
// cannot store by whole lines, into a staging copy of that block, copied
// out whole (copy_block). A staging copy whose input is transposed
// (select_plan::copy_by_transpose) is transposed straight into its buffer:
// no scratch, no row kernel.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include <immintrin.h>
#include <omp.h>

#include "common.hpp"
#include "cpu_isa.hpp"
#include "dispatch.hpp"
#include "select_schema.hpp"
#include "kernels/jit_select.hpp"
#include "kernels/ref_select.hpp"
#include "verbose.hpp"

namespace selgraph {
namespace impl {

namespace {

// Below this many bytes per thread a parallel region costs more than it
// saves.
constexpr int64_t min_bytes_per_thread = 64 * 1024;
constexpr int64_t chunk_align = 64; // elements
constexpr int64_t items_per_thread = 8;
// A transposed dst's pieces (select_folded::piece) over more rows than a
// piece of them fits the tiles' scratch: each tile reads at least this
// many bytes of each source's row (docs/performance.md, "Tiles of dst's
// pieces over many rows"; on Intel, "The pieces' bounds on Intel").
constexpr int64_t piece_run_bytes = 256;

// The cond of a copy: a true byte, whose src_0 (the copied operand) every
// element takes (staged inputs' copy plans, the stepped kernels' gathers
// and scatters).
const uint8_t true_cond = 1;

// A stepped kernel's call (kernel_key::src0_step or dst_step) copying
// `rows` rows of `n` elements from `from` to `to`, rows the given byte
// strides apart: its true cond takes src_0 throughout, and src_1 is never
// read.
void copy_rows(select_kernel_fn k, const void *from, int64_t from_stride,
               void *to, int64_t to_stride, uint64_t n, uint64_t rows) {
    select_call_args c;
    c.cond = &true_cond;
    c.src0 = from;
    c.src1 = from;
    c.dst = to;
    c.n = n;
    c.rows = rows;
    c.cond_stride = 0;
    c.src0_stride = from_stride;
    c.src1_stride = 0;
    c.dst_stride = to_stride;
    k(&c);
}

struct folded_runner {
    const select_folded &f;
    select_kernel_fn fn;
    const char *base[n_operands];
    const int64_t *stride[n_operands]; // per folded dim, bytes
    uint64_t pf_rows; // select_call_args::pf_rows (kernel_key::row_prefetch)
    bool nt;          // the kernel stores non-temporally
    // Per slot, the stepped kernel that gathers the input's rows of each
    // call into a buffer the row kernel reads (select_plan::gather); null:
    // the row kernel reads the input itself.
    select_kernel_fn gather[op_dst];
    // The stepped kernel that writes each call's rows into dst's elements
    // from a buffer the row kernel writes (select_plan::scatter); null: the
    // row kernel writes dst itself.
    select_kernel_fn scatter;
    // Per slot, select_plan::expand: each call's elements of the input are
    // first repeated along their rows into a buffer the row kernel reads;
    // `merge` (select_plan::expand_merged): a call of whole rows runs them
    // as one; `permutes`: select_plan::expand_by_permutes.
    bool expand[op_dst];
    bool merge;
    bool permutes;

    // Rows [r0, r1), columns [c0, c1).
    void run(int64_t r0, int64_t r1, int64_t c0, int64_t c1) const {
        if (!gather[0] && !gather[1] && !gather[2] && !scatter && !expand[0]
            && !expand[1] && !expand[2]) {
            calls(r0, r1, c0, c1, nullptr, true);
            return;
        }
        // Calls of at most gather_chunk_bytes of each operand in a buffer
        // (by columns, or by rows where a row holds fewer), their buffers
        // in L1; one fence after the last. An expanded cond alone: 4096
        // elements a call, against 1024 f32 ones, took [16, 4, 56, 56]
        // f32 under a per-pixel cond in 0.67x the time.
        alignas(64) char buf[n_operands * gather_chunk_bytes];
        const int64_t w =
                gather[1] || gather[2] || scatter || expand[1] || expand[2]
                        ? f.elem_size
                        : 1;
        const int64_t per = gather_chunk_bytes / w;
        const int64_t cols = c1 - c0;
        if (cols > per) {
            for (int64_t r = r0; r < r1; ++r)
                for (int64_t c = c0; c < c1; c += per)
                    calls(r, r + 1, c, std::min(c + per, c1), buf, false);
        } else {
            const int64_t rows = per / cols;
            for (int64_t r = r0; r < r1; r += rows)
                calls(r, std::min(r + rows, r1), c0, c1, buf, false);
        }
        if (nt)
            _mm_sfence();
    }

    // The row kernel's calls over rows [r0, r1), columns [c0, c1), each
    // gathered input first copied into `buf` (gather_chunk_bytes each);
    // `fence`: the non-temporal stores are fenced here, else by the caller.
    void calls(int64_t r0, int64_t r1, int64_t c0, int64_t c1, char *buf,
               bool fence) const {
        const int nd = f.ndims;
        // Merged rows: whole rows only.
        const bool merged = merge && c0 == 0 && c1 == f.dims[nd - 1];
        select_call_args a;
        a.n = static_cast<uint64_t>(c1 - c0);
        a.pf_rows = pf_rows;
        int64_t col_off[n_operands];
        for (int i = 0; i < n_operands; ++i)
            col_off[i] = c0 * stride[i][nd - 1];
        if (nd == 1) {
            set_ptrs(a, col_off);
            a.rows = 1;
            a.cond_stride = a.src0_stride = a.src1_stride = a.dst_stride = 0;
            gather_rows(a, buf);
            a.fence = fence ? 1 : 0;
            call(a, buf);
            return;
        }
        const int od = nd - 2; // the outer dim the kernel walks
        // More than one call: the non-temporal stores are fenced once after
        // the last of them rather than per call (select_call_args::fence).
        const bool many = r0 / f.dims[od] != (r1 - 1) / f.dims[od];
        a.fence = fence && !many ? 1 : 0;
        a.cond_stride = stride[op_cond][od];
        a.src0_stride = stride[op_src0][od];
        a.src1_stride = stride[op_src1][od];
        a.dst_stride = stride[op_dst][od];
        for (int64_t r = r0; r < r1;) {
            int64_t off[n_operands];
            int64_t rem = r / f.dims[od];
            const int64_t idx = r % f.dims[od];
            for (int i = 0; i < n_operands; ++i)
                off[i] = col_off[i] + idx * stride[i][od];
            for (int d = od - 1; d >= 0; --d) {
                const int64_t di = rem % f.dims[d];
                rem /= f.dims[d];
                for (int i = 0; i < n_operands; ++i)
                    off[i] += di * stride[i][d];
            }
            const int64_t len = std::min(r1 - r, f.dims[od] - idx);
            set_ptrs(a, off);
            a.n = static_cast<uint64_t>(c1 - c0);
            a.rows = static_cast<uint64_t>(len);
            gather_rows(a, buf);
            if (merged) {
                a.n *= a.rows;
                a.rows = 1;
            }
            call(a, buf);
            r += len;
        }
        if (many && nt && fence)
            _mm_sfence();
    }

    // Each gathered input of call `a`: its rows copied back to back into
    // its part of `buf`, where `a` then reads them; an expanded input's
    // elements repeated along its rows.
    void gather_rows(select_call_args &a, char *buf) const {
        const void **ptr[op_dst] = { &a.cond, &a.src0, &a.src1 };
        int64_t *row_stride[op_dst] = { &a.cond_stride, &a.src0_stride,
                                        &a.src1_stride };
        for (int i = 0; i < op_dst; ++i) {
            if (!expand[i] && !gather[i])
                continue; // (buf may be null)
            char *const to = buf + i * gather_chunk_bytes;
            if (expand[i]) {
                const auto n = static_cast<int64_t>(a.n);
                const int64_t w = operand_bytes(i, f.elem_size);
                expand_rows(*ptr[i], stride[i][f.ndims - 2], to, n,
                            static_cast<int64_t>(a.rows), w, permutes);
                *ptr[i] = to;
                *row_stride[i] = n * w;
            }
            if (!gather[i])
                continue;
            const int64_t to_stride =
                    static_cast<int64_t>(a.n) * operand_bytes(i, f.elem_size);
            copy_rows(gather[i], *ptr[i],
                      f.ndims >= 2 ? stride[i][f.ndims - 2] : 0, to, to_stride,
                      a.n, a.rows);
            *ptr[i] = to;
            *row_stride[i] = to_stride;
        }
    }

    // The row kernel's call `a`; with a scatter, into dst's part of `buf`
    // first, then from there into dst's elements.
    void call(select_call_args &a, char *buf) const {
        if (!scatter) {
            fn(&a);
            return;
        }
        void *const to = a.dst;
        const int64_t to_stride = a.dst_stride;
        a.dst = buf + op_dst * gather_chunk_bytes;
        a.dst_stride = static_cast<int64_t>(a.n) * f.elem_size;
        fn(&a);
        copy_rows(scatter, a.dst, a.dst_stride, to, to_stride, a.n, a.rows);
        a.dst = to;
        a.dst_stride = to_stride;
    }

    void set_ptrs(select_call_args &a, const int64_t *off) const {
        a.cond = base[op_cond] + off[op_cond];
        a.src0 = base[op_src0] + off[op_src0];
        a.src1 = base[op_src1] + off[op_src1];
        a.dst = const_cast<char *>(base[op_dst]) + off[op_dst];
    }
};

// Writes the `bytes` of `row` k times back to back at buf: the buffer a
// row vector of a widened row is read from.
void repeat_row(char *buf, const void *row, int64_t bytes, int64_t k) {
    for (int64_t i = 0; i < k; ++i)
        std::memcpy(buf + i * bytes, row, static_cast<size_t>(bytes));
}

// Blocks of the next tile's inputs to prefetch (into L2), at most one of
// each: spread over dst's transposes, one per band, or over a copy's
// lines (copy_block), in address order.
struct prefetch_blocks {
    const char *at[op_dst] = {};
    int64_t bytes[op_dst] = {};
    int n = 0;
};

// Copies n bytes from src to dst, which lie at the same offset within a
// cache line: with `nt`, the lines wholly inside [dst, dst + n) by
// non-temporal stores and the partial lines at either end by regular ones,
// so that a line shared with a neighbouring block (maybe another thread's)
// is only ever written by regular stores, and the lines of `pf` (with
// `nt` only) prefetched over them. The caller fences.
void copy_block(char *dst, const char *src, int64_t n, bool nt,
                const prefetch_blocks *pf = nullptr) {
    if (!nt) {
        std::memcpy(dst, src, static_cast<size_t>(n));
        return;
    }
    const auto mis =
            static_cast<int64_t>(reinterpret_cast<uintptr_t>(dst) % 64);
    const int64_t head = std::min<int64_t>(n, (64 - mis) % 64);
    std::memcpy(dst, src, static_cast<size_t>(head));
    // Bresenham's spread: `lines` prefetches over `steps` copied lines.
    int64_t lines = 0;
    for (int k = 0; pf && k < pf->n; ++k)
        lines += (pf->bytes[k] + 63) / 64;
    const int64_t steps = std::max<int64_t>(1, (n - head) / 64);
    int64_t acc = 0, line = 0;
    int blk = 0;
    int64_t i = head;
    for (; i + 64 <= n; i += 64) {
        const auto *s = reinterpret_cast<const __m128i *>(src + i);
        auto *d = reinterpret_cast<__m128i *>(dst + i);
        _mm_stream_si128(d, _mm_load_si128(s));
        _mm_stream_si128(d + 1, _mm_load_si128(s + 1));
        _mm_stream_si128(d + 2, _mm_load_si128(s + 2));
        _mm_stream_si128(d + 3, _mm_load_si128(s + 3));
        for (acc += lines; acc >= steps && blk < pf->n; acc -= steps) {
            _mm_prefetch(pf->at[blk] + line * 64, _MM_HINT_T2);
            if (++line * 64 >= pf->bytes[blk]) {
                ++blk;
                line = 0;
            }
        }
    }
    std::memcpy(dst + i, src + i, static_cast<size_t>(n - i));
}

// This thread's buffer of kind `Tag`, at least `bytes` long and 64-byte
// aligned, kept for its next execute (one per kind: the tiles' scratch, the
// staged inputs).
template <typename Tag>
char *thread_buffer(int64_t bytes) {
    thread_local std::unique_ptr<char[]> buf;
    thread_local int64_t size = 0;
    if (size < bytes + 64) {
        buf.reset();
        buf.reset(new char[static_cast<size_t>(bytes + 64)]);
        size = bytes + 64;
    }
    const auto p = reinterpret_cast<uintptr_t>(buf.get());
    return buf.get() + ((64 - p % 64) % 64);
}

// Tiles of a plan with transposed operands (f.tdim == f.ndims - 2).
struct tiled_runner {
    const select_folded &f;
    select_kernel_fn fn;
    const char *base[n_operands];
    // Per slot (the kernel's cond, src_0, src_1, dst after the role swap):
    // the operand's byte strides per folded dim, the bytes between its
    // pieces (select_folded::piece_stride) and between its row groups
    // (select_folded::group_stride).
    const int64_t *stride[n_operands];
    int64_t piece_stride[n_operands];
    int64_t group_stride[n_operands];
    const transpose_kernel *tr[n_operands]; // null: not transposed
    int64_t esize[n_operands];
    int64_t ld[n_operands] = {}; // scratch row stride per transposed operand
    // A padded short rows' stream (kernel_key::row_pitch): the transposed
    // inputs' scratch rows lie at that pitch too, their gaps written by
    // the packed transposes (transpose_call_args::dst_gaps).
    bool gaps = false;
    int64_t tile_rows = 1, tile_cols = 1, strip = 1, scratch = 0;
    // A transposed dst is written in bands of dst_band of its rows (the
    // tile's columns) per call of its transposing kernel; 0: one call.
    int64_t dst_band = 0;
    int64_t n_rb = 1, n_cb = 1, outer = 1;
    bool stream = false;
    bool cols_first = false; // tile_shape::cols_first
    // Every operand's rows of a strip lie back to back (whole rows of
    // contiguous operands, a scratch without padding) or the operand is
    // one element for all (stride 0): the row kernel runs `wide` rows of
    // the strip as one row of wide x columns elements, so one tail and one
    // misaligned start per `wide` rows rather than per row (rows of 49 or
    // 197 elements ran the row kernel at half the dense Select's speed).
    // Without row vectors, wide is the whole strip.
    int64_t wide = 1;
    // Row vectors: inputs that are one row for every row of a tile (a
    // per-channel operand over channels-last data whose other operands
    // are transposed against dst). Where rows are short, each is read
    // from its row repeated `wide` times (rep_off: in the scratch, up to
    // 1024 elements), as broadcast.cpp's widened rows are, and the rest
    // of the strip runs as above; rows of 3 to 64 channels otherwise ran
    // the row kernel one short row at a time.
    uint8_t rep_mask = 0;
    int64_t rep_off[op_dst] = {};
    // A transposed dst staged (dst_block_staged): the tile's dst block is
    // transposed by stage_tr into a staging copy at the end of the
    // scratch (stage_off), then copied into dst, non-temporally where
    // stage_nt.
    const transpose_kernel *stage_tr = nullptr;
    bool stage_nt = false;
    int64_t stage_off = 0;
    // Tiles that do not stream: the next tile's blocks of the inputs that
    // prefetch_block_bytes names, where all of them fit pf_budget, are
    // prefetched (into L2) in address order over this tile's transposes.
    // With a transposed dst, the inputs read as they are, over dst's
    // transposes, one input per band (a staged dst streamed out: over its
    // copy, copy_block): on the Intel guest with a per-core
    // bandwidth cap, L15 bf16 ran 1.05-1.09x, L16 1.02-1.05x, the other
    // transposed-dst cases unchanged; blocks of 1 MB each (L12's, L13's
    // panels) without the budget ran 0.72-0.77x. Otherwise the transposed
    // inputs whose tiles span all rows of contiguous matrices (lines off
    // the cache lines: [16, 64, 56, 56] with H and W swapped, ViT's [197,
    // 197] scores), over their own transposes, as streamed tiles do: on
    // Zen 4 L17 ran 0.6-0.95x the time, L9 and L14 bf16 0.7-0.9x
    // (docs/performance.md).
    bool pf_blocks = false;
    static constexpr int64_t pf_budget = 256 * 1024;
    // A transposed dst stored non-temporally whose rows do not start cache
    // lines ([2047, 2047]: rows 8188 bytes apart): the dst transposes of
    // consecutive strips of the same dst rows form a chain through a carry
    // of 64 bytes per row (transpose_call_args::carry), so that every line
    // is streamed whole, once; regular stores of each piece, or streamed
    // pieces with their partial lines stored apart, read every dst line
    // back and write it in two halves (docs/performance.md).
    bool dst_carry = false;
    // A transposed dst written by the kernel itself (select_plan::
    // kernel_dt): dt_fn, the variant the store kind picked, in place of the
    // row kernel and dst's transpose (tr[op_dst] is then null), and
    // dt_regular for calls whose dst does not start a cache line, which
    // the non-temporal variant needs.
    select_kernel_fn dt_fn = nullptr, dt_regular = nullptr;
    // A staging copy (select_plan::copy_by_transpose): src_0, the one
    // transposed operand, is transposed straight into dst, which it equals;
    // no scratch, no row kernel.
    bool copy_direct = false;
    // select_plan::expand (cond): each strip's cond bytes are repeated along
    // its rows into the scratch at expand_off (-1: none), which the row
    // kernel reads as a vector, its rows back to back;
    // select_plan::expand_by_permutes.
    int64_t expand_off = -1;
    bool expand_permutes = false;
    // Pieces a pitch apart (select_folded::gapped_pieces): each operand's
    // bytes from one piece to the next in the row kernel's calls (run_rows):
    // a pitch of its elements (a transposed input's scratch, an expanded
    // cond's bytes, a vector) or 0 (a scalar).
    bool gapped = false;
    int64_t piece_step[n_operands] = {};

    // `atr`: each transposed operand's kernel (for dst, the one the store
    // kind picked); `dst_regular`: dst's regular transposing kernel, and
    // `nt` whether non-temporal stores were picked; `dt`, `dt_reg`: the
    // kernels writing a transposed dst (the picked variant and the regular
    // one), or null: they replace dst's transpose.
    tiled_runner(const select_folded &af, select_kernel_fn afn,
                 const char *const *abase, const int *slot_op,
                 const transpose_kernel *const *atr,
                 const transpose_kernel *dst_regular, bool nt, int nthreads,
                 const select_kernel *dt = nullptr,
                 const select_kernel *dt_reg = nullptr, bool copy = false,
                 bool row_len = false, int row_pitch = 0, bool expand = false,
                 bool expand_by_permutes = false)
        : f(af)
        , fn(afn)
        , copy_direct(copy)
        , expand_permutes(expand_by_permutes) {
        for (int i = 0; i < n_operands; ++i) {
            base[i] = abase[i];
            stride[i] = f.strides[slot_op[i]];
            piece_stride[i] = f.piece_stride[slot_op[i]];
            group_stride[i] = f.group_stride[slot_op[i]];
            tr[i] = atr[i];
            esize[i] = operand_bytes(i, f.elem_size);
        }
        const tile_shape ts = plan_tiles(
                f, nthreads, dt && (dt->key().dt_cols || dt->key().dt_rows),
                this_cpu_tuning().dst_rows_per_thread);
        tile_rows = ts.rows;
        // A kernel generated for one row length (kernel_key::row_len, rows
        // under 64 elements) is only ever called with whole rows of it:
        // tiles span the row (plan_tiles gives such rows whole anyway),
        // and the rows of a strip are never widened into one (below).
        // Pieces a pitch apart (select_folded::gapped_pieces) are the
        // kernel's rows: tiles span whole pieces, in whole pitches (the
        // last tile ends with the row, at a piece's end).
        const int64_t pitch = f.piece_pitch;
        tile_cols = f.gapped_pieces() ? std::max(pitch, ts.cols / pitch * pitch)
                    : row_len         ? f.dims[f.ndims - 1]
                                      : ts.cols;
        strip = ts.strip > 0 ? ts.strip : ts.rows;
        stream = ts.stream;
        cols_first = ts.cols_first;
        const int nd = f.ndims;
        const int64_t rows = f.dims[nd - 2], inner = f.dims[nd - 1];
        // The kernel writing dst itself (any rows and columns: both ISAs'
        // have tails); otherwise dst's transpose from the scratch. Its nt
        // variant only where dst starts a cache line: the calls' dsts lie
        // whole lines from it (run_dt still checks each).
        if (dt && dt_reg) {
            dt_regular = dt_reg->fn();
            dt_fn = reinterpret_cast<uintptr_t>(base[op_dst]) % 64 == 0
                            ? dt->fn()
                            : dt_regular;
            tr[op_dst] = nullptr;
        }
        // (Pieces a pitch apart take the stream along each long row
        // instead: their scratch rows are the tile's columns.)
        gaps = row_pitch > 0 && !f.gapped_pieces();
        // A transposed input's scratch rows start cache lines where its
        // kernel stores whole 64-byte vectors into them
        // (input_scratch_whole_lines); the strip then runs row by row.
        for (int i = 0; i < n_operands; ++i) {
            if (!tr[i] || copy_direct)
                continue;
            const int64_t row_bytes = tile_cols * esize[i];
            ld[i] = gaps ? row_pitch * esize[i]
                         : scratch_pitch(
                                 row_bytes, strip,
                                 i < op_dst
                                         && input_scratch_whole_lines(
                                                 tr[i]->key(), row_bytes));
            scratch += (strip * ld[i] + 63) / 64 * 64;
        }
        // One call's column block stores a piece into each of its dst
        // rows before the next block completes their lines: where dst's
        // rows crowd a few L1 sets ([2047, 2047] dst transposed: rows 8188
        // bytes apart), in bands of 128 rows those lines wait in L2 rather
        // than beyond it; where they span many pages, in bands of 1 MiB of
        // them every page a band stores into stays in the TLB over its
        // blocks (transposed_dst_band; docs/performance.md).
        // dst's pieces (select_folded::piece) are stored a piece per call,
        // each its own columns' lines: no bands, staging or carry.
        const bool dst_pieces = tr[op_dst] && f.piece;
        if (tr[op_dst] && !dst_pieces)
            dst_band = transposed_dst_band(stride[op_dst][nd - 1], tile_cols);
        if (tr[op_dst] && !dst_pieces && tile_rows == rows
            && dst_block_staged(f)) {
            stage_tr = dst_regular;
            stage_nt = nt;
            stage_off = scratch;
            scratch += tile_rows * tile_cols * esize[op_dst] + 64;
        }
        dst_carry = tr[op_dst] && nt && !stage_tr && !dst_pieces
                    && ((reinterpret_cast<uintptr_t>(base[op_dst])
                         | static_cast<uintptr_t>(stride[op_dst][nd - 1]))
                        % 64) != 0;
        // Decided once: only where a whole tile's input blocks fit.
        if (!stream) {
            int64_t sum = 0;
            for (int i = 0; i < op_dst; ++i)
                sum += prefetch_block_bytes(i, tile_rows, tile_cols);
            pf_blocks = sum > 0 && sum <= pf_budget;
        }
        if (expand) {
            expand_off = scratch;
            scratch += (strip * tile_cols + 63) / 64 * 64;
        }
        n_rb = (rows + tile_rows - 1) / tile_rows;
        n_cb = (inner + tile_cols - 1) / tile_cols;
        for (int d = 0; d + 2 < nd; ++d)
            outer *= f.dims[d];
        // Row groups: rows lie back to back only within a group.
        bool flat = n_cb == 1 && !f.group;
        uint8_t row_vectors = 0;
        for (int i = 0; i < n_operands && flat; ++i) {
            const bool expanded = i == op_cond && expand;
            const int64_t rs = tr[i]      ? ld[i]
                               : expanded ? tile_cols
                                          : stride[i][nd - 2];
            const bool scalar = !tr[i] && !expanded && stride[i][nd - 1] == 0;
            if (i < op_dst && !tr[i] && !scalar && rs == 0)
                row_vectors |= static_cast<uint8_t>(1u << i);
            else
                flat = rs == (scalar ? 0 : inner * esize[i]);
        }
        if (row_len || f.gapped_pieces())
            flat = false;
        if (flat && !row_vectors)
            wide = strip;
        if (flat && row_vectors && inner * esize[op_dst] < short_row_bytes
            && std::min(strip, wide_row_elems / inner) >= 2) {
            wide = std::min(strip, wide_row_elems / inner);
            rep_mask = row_vectors;
            for (int i = 0; i < op_dst; ++i)
                if ((rep_mask >> i) & 1) {
                    rep_off[i] = scratch;
                    scratch += (wide * inner * esize[i] + 63) / 64 * 64;
                }
        }
        gapped = f.gapped_pieces();
        for (int i = 0; i < n_operands && gapped; ++i)
            piece_step[i] =
                    tr[i] || (i == op_cond && expand) || stride[i][nd - 1] != 0
                            ? f.piece_pitch * esize[i]
                            : 0;
    }

    int64_t items() const { return outer * n_rb * n_cb; }

    // This thread's scratch, kept for the next execute.
    char *thread_scratch() const {
        return thread_buffer<struct tile_scratch_tag>(scratch);
    }
    // The bytes of a tile of `nr` x `nc` of input `i` where they are one
    // contiguous block that pf_blocks prefetches; 0 otherwise. With a
    // transposed dst, an input read as it is (whole rows back to back);
    // otherwise a transposed input (whole columns back to back: all rows
    // of its matrices).
    int64_t prefetch_block_bytes(int i, int64_t nr, int64_t nc) const {
        const int nd = f.ndims;
        const int64_t sr = stride[i][nd - 2], sc = stride[i][nd - 1];
        const int64_t w = esize[i];
        if (tr[op_dst])
            return !tr[i] && sc == w && sr == nc * w ? nr * sr : 0;
        return tr[i] && !f.piece && sr == w && sc == nr * w ? nc * sc : 0;
    }
    // This thread's carry slots, one per column of a tile (dst_carry).
    char *thread_carry() const {
        return dst_carry ? thread_buffer<struct dst_carry_tag>(tile_cols * 64)
                         : nullptr;
    }

    // A tile: its first column, its rows and columns and every operand's
    // byte offset. Tiles are numbered in (outer, row block, column block)
    // order, or (outer, column block, row block) with cols_first.
    struct tile {
        int64_t r0, c0, nr, nc;
        int64_t off[n_operands];
    };
    // A tile's place: its row block, column block and index along each
    // outer dim. A thread finds its first tile's place by divisions and
    // steps from tile to tile without any: in survey cases of a few hundred
    // elements per tile, that took 4-12% off the cycles spent outside the
    // kernels (docs/performance.md, "Where a tiny tile's cycles go").
    struct tile_pos {
        int64_t rb = 0, cb = 0;
        int64_t o[max_ndims] = {};
    };
    tile_pos pos_at(int64_t it) const {
        tile_pos p;
        int64_t o = it / (n_rb * n_cb);
        const int64_t rem = it % (n_rb * n_cb);
        p.rb = cols_first ? rem % n_rb : rem / n_cb;
        p.cb = cols_first ? rem / n_rb : rem % n_cb;
        for (int d = f.ndims - 3; d >= 0; --d) {
            p.o[d] = o % f.dims[d];
            o /= f.dims[d];
        }
        return p;
    }
    // p moved to the next tile (past the last one: back to the first).
    void step(tile_pos &p) const {
        int64_t &fast = cols_first ? p.rb : p.cb;
        int64_t &slow = cols_first ? p.cb : p.rb;
        if (++fast < (cols_first ? n_rb : n_cb))
            return;
        fast = 0;
        if (++slow < (cols_first ? n_cb : n_rb))
            return;
        slow = 0;
        for (int d = f.ndims - 3; d >= 0; --d) {
            if (++p.o[d] < f.dims[d])
                return;
            p.o[d] = 0;
        }
    }
    // Column c's byte offset in operand i: a transposed operand's columns
    // come in pieces where the fold has them (select_folded::piece).
    int64_t col_offset(int i, int64_t c) const {
        const int64_t s = stride[i][f.ndims - 1];
        return f.piece && tr[i] ? c / f.piece_pitch * piece_stride[i]
                                          + c % f.piece_pitch * s
                                : c * s;
    }
    // Row r's byte offset in operand i: rows come in groups where the fold
    // has them (select_folded::group).
    int64_t row_offset(int i, int64_t r) const {
        const int64_t s = stride[i][f.ndims - 2];
        return f.group ? r / f.group * group_stride[i] + r % f.group * s
                       : r * s;
    }
    // Operand i's row r (of the folded tile dim) in tile `tl`.
    const char *row_at(const tile &tl, int i, int64_t r) const {
        return base[i] + tl.off[i] + row_offset(i, r) - row_offset(i, tl.r0);
    }
    // The rows from row r on, of `left`, that lie in r's row group (all of
    // them without groups): rows lie back to back only within a group.
    int64_t group_share(int64_t r, int64_t left) const {
        return f.group ? std::min(left, f.group - r % f.group) : left;
    }
    // The tile at `p`, into `t`: filled in place, never copied whole (a
    // tile copied right after it was written field by field stalled each
    // turn on its store forwarding).
    void tile_of(const tile_pos &p, tile &t) const {
        const int nd = f.ndims;
        const int td = nd - 2, in = nd - 1;
        const int64_t r0 = p.rb * tile_rows, c0 = p.cb * tile_cols;
        t.r0 = r0;
        t.c0 = c0;
        t.nr = std::min(tile_rows, f.dims[td] - r0);
        t.nc = std::min(tile_cols, f.dims[in] - c0);
        for (int i = 0; i < n_operands; ++i) {
            int64_t off = row_offset(i, r0) + col_offset(i, c0);
            for (int d = 0; d < td; ++d)
                off += p.o[d] * stride[i][d];
            t.off[i] = off;
        }
    }

    // What a thread's scratch holds from the strips before, within one
    // run: the row each repeated buffer holds (null: none yet), and the
    // block each transposed input's scratch holds, so that a block read
    // again (an input broadcast along the outer dims: the [1, 1, 197, 197]
    // mask of L14 under [32, 12, 197, 197] scores, a tile per matrix) is
    // transposed once per thread rather than once per tile.
    struct scratch_memo {
        const char *rep_src[op_dst] = {};
        struct block {
            const void *src = nullptr;
            int64_t rows = 0, cols = 0, phase = 0;
        } tr[op_dst];
    };

    // Whether tile `b`'s dst rows continue tile `a`'s: the same columns,
    // its rows right after a's.
    bool continues(const tile &a, const tile &b) const {
        const int td = f.ndims - 2;
        return a.c0 == b.c0 && a.nc == b.nc
               && b.off[op_dst] == a.off[op_dst] + a.nr * stride[op_dst][td];
    }

    // Tiles [i0, i1).
    void run(int64_t i0, int64_t i1) const {
        char *const scr = thread_scratch();
        char *const carry = thread_carry();
        scratch_memo memo;
        // dst_carry: the carry slots hold the last strip's tails.
        bool carried = false;
        tile_pos pos = pos_at(i0);
        tile tiles[2];
        int cur = 0;
        tile_of(pos, tiles[0]);
        for (int64_t it = i0; it < i1; ++it, cur ^= 1) {
            // The next tile of this thread (where there is one), for its
            // prefetch and the carry chain; then the tile of the next turn.
            const bool has_next = it + 1 < i1;
            step(pos);
            const tile &tl = tiles[cur];
            if (has_next)
                tile_of(pos, tiles[cur ^ 1]);
            const tile &tn = has_next ? tiles[cur ^ 1] : tl;
            // Streaming: the next tile's block of each transposed input,
            // its lines prefetched in address order over this tile's strips.
            const char *next[n_operands] = {};
            int64_t next_bytes[n_operands] = {};
            if (stream && has_next) {
                for (int i = 0; i < op_dst; ++i)
                    if (tr[i]) {
                        next[i] = base[i] + tn.off[i];
                        next_bytes[i] = tn.nc * stride[i][f.ndims - 1];
                    }
            } else if (pf_blocks && has_next) {
                // The next tile's contiguous input blocks (pf_blocks).
                int64_t sum = 0;
                for (int i = 0; i < op_dst; ++i)
                    if (const int64_t b =
                                prefetch_block_bytes(i, tn.nr, tn.nc)) {
                        next[i] = base[i] + tn.off[i];
                        next_bytes[i] = b;
                        sum += b;
                    }
                if (sum > pf_budget)
                    for (int i = 0; i < op_dst; ++i)
                        next[i] = nullptr;
            }
            const int64_t n_strips = (tl.nr + strip - 1) / strip;
            // The rows of the strip after the last one, where the next
            // tile continues this one's dst rows (0: none).
            const int64_t after = dst_carry && has_next && continues(tl, tn)
                                          ? std::min(strip, tn.nr)
                                          : 0;
            for (int64_t s = 0; s < n_strips; ++s) {
                const int64_t nr = std::min(strip, tl.nr - s * strip);
                const int64_t nr_next =
                        s + 1 < n_strips
                                ? std::min(strip, tl.nr - (s + 1) * strip)
                                : after;
                const auto gc = static_cast<int64_t>(transpose_carry_cols);
                const bool carry_out =
                        dst_carry && nr % gc == 0 && nr_next >= gc;
                run_strip(tl, s, scr, next, next_bytes, n_strips, memo, carry,
                          carried, carry_out);
                carried = carry_out;
            }
        }
        // The kernels' non-temporal stores, fenced once here rather than
        // per call (select_call_args::fence).
        _mm_sfence();
    }

    // Rows [r0, r0 + nr) of tile `tl` by the kernel that writes the
    // transposed dst itself.
    void run_dt(const tile &tl, int64_t r0, int64_t nr) const {
        const int nd = f.ndims;
        const int td = nd - 2, in = nd - 1;
        const void *ptr[n_operands];
        for (int i = 0; i < n_operands; ++i)
            ptr[i] = base[i] + tl.off[i] + r0 * stride[i][td];
        select_call_args a;
        a.cond = ptr[op_cond];
        a.src0 = ptr[op_src0];
        a.src1 = ptr[op_src1];
        a.dst = const_cast<void *>(ptr[op_dst]);
        a.n = static_cast<uint64_t>(tl.nc);
        a.rows = static_cast<uint64_t>(nr);
        a.cond_stride = stride[op_cond][td];
        a.src0_stride = stride[op_src0][td];
        a.src1_stride = stride[op_src1][td];
        a.dst_stride = stride[op_dst][in];
        a.fence = 0;
        (reinterpret_cast<uintptr_t>(a.dst) % 64 == 0 ? dt_fn : dt_regular)(&a);
    }

    // Rows [0, nr) of transposed input i from `src` (its tile's columns
    // [c0, c0 + nc) at those rows) into `sp` (rows dst_ld bytes apart), a
    // piece at a time (select_folded::piece). Each call's own prefetch
    // stays in its piece, so before it the first transpose_prefetch_cols
    // columns of the next piece are prefetched at these rows (into L2, as
    // the kernels' own): without that, those columns of every piece were
    // read on demand, and L22 f32 (pieces of 56) took 1.14-1.19x the time
    // (medians of four rounds, both ISAs; docs/performance.md).
    // Pieces a pitch apart (select_folded::gapped_pieces) leave the
    // scratch's columns between them unwritten: the row kernel stores
    // nothing from them (the padded rows' stream reads them under its
    // masks' gaps).
    void transpose_pieces(int i, int64_t c0, const void *src, int64_t nr,
                          int64_t nc, char *sp, int64_t dst_ld) const {
        const int64_t n = f.piece, pitch = f.piece_pitch;
        const int64_t src_ld = stride[i][f.ndims - 1];
        const auto line_bytes = static_cast<uintptr_t>(nr * esize[i]);
        const int64_t off0 = col_offset(i, c0);
        // The first piece column at or after c.
        const auto piece_col = [&](int64_t c) {
            return c % pitch < n ? c : c + pitch - c % pitch;
        };
        for (int64_t c = piece_col(c0); c < c0 + nc;) {
            const int64_t k = std::min(n - c % pitch, c0 + nc - c);
            const int64_t cn = piece_col(c + k);
            const char *const p =
                    static_cast<const char *>(src) + col_offset(i, c) - off0;
            const char *const np =
                    static_cast<const char *>(src) + col_offset(i, cn) - off0;
            const int64_t ahead = std::min<int64_t>(
                    { static_cast<int64_t>(transpose_prefetch_cols), n,
                      c0 + nc - cn });
            for (int64_t j = 0; j < ahead; ++j) {
                const auto at = reinterpret_cast<uintptr_t>(np + j * src_ld);
                for (uintptr_t l = at & ~uintptr_t(63); l < at + line_bytes;
                     l += 64)
                    _mm_prefetch(reinterpret_cast<const char *>(l),
                                 _MM_HINT_T2);
            }
            transpose_call_args t;
            t.src = p;
            t.dst = sp + (c - c0) * esize[i];
            t.rows = static_cast<uint64_t>(nr);
            t.cols = static_cast<uint64_t>(k);
            t.src_ld = src_ld;
            t.dst_ld = dst_ld;
            t.fence = 0;
            t.pf_cols = static_cast<uint64_t>(k);
            transpose_block(*tr[i], t, esize[i]);
            c = cn;
        }
    }

    // Rows [0, nr) of transposed input i's share of strip `s` of tile `tl`
    // from `src` into `to` (rows to_ld bytes apart): in pieces where the
    // fold has them, else as one call that prefetches the operand's
    // columns past the tile's (where the tiles do not stream) and the
    // strip's share of `next`, the next tile's block of `next_bytes`.
    void transpose_input(int i, const tile &tl, int64_t s, int64_t n_strips,
                         const char *next, int64_t next_bytes, const void *src,
                         int64_t nr, char *to, int64_t to_ld) const {
        const int in = f.ndims - 1;
        if (f.piece) {
            transpose_pieces(i, tl.c0, src, nr, tl.nc, to, to_ld);
            return;
        }
        transpose_call_args t;
        t.src = src;
        t.dst = to;
        t.rows = static_cast<uint64_t>(nr);
        t.cols = static_cast<uint64_t>(tl.nc);
        t.src_ld = stride[i][in];
        t.dst_ld = to_ld;
        t.fence = 0;
        t.dst_gaps = gaps ? 1 : 0;
        if (!stream) {
            // The operand's columns from c0 on, at these rows. Streamed
            // tiles prefetch none (pf_cols 0): the tile before prefetched
            // this one's block (pf_next).
            t.pf_cols = static_cast<uint64_t>(f.dims[in] - tl.c0);
        }
        if (next) {
            // This strip's share of the next tile's block, in lines
            // (streamed tiles, pf_blocks).
            const auto [b0, b1] = strip_share(next_bytes, s, n_strips);
            t.pf_next = next + b0;
            t.pf_next_bytes = static_cast<uint64_t>(b1 - b0);
        }
        transpose_block(*tr[i], t, esize[i]);
    }

    // Strip `s`'s share, of `n` strips, of a prefetched block of `bytes`:
    // [b0, b1), whole lines.
    static std::pair<int64_t, int64_t> strip_share(int64_t bytes, int64_t s,
                                                   int64_t n) {
        const int64_t lines = (bytes + 63) / 64;
        return { std::min(lines * s / n * 64, bytes),
                 std::min(lines * (s + 1) / n * 64, bytes) };
    }

    // The row kernel over `a`'s rows of the tile's columns (a.n of them).
    // With pieces a pitch apart (`gapped`; `wide` is 1, and the tile spans
    // whole pieces), each row's pieces are the rows of a call, piece_step
    // apart, so that dst's columns between them, which are no one's, are
    // never stored.
    void run_rows(const select_call_args &a) const {
        if (!gapped) {
            fn(&a);
            return;
        }
        select_call_args b = a;
        b.n = static_cast<uint64_t>(f.piece);
        b.rows = (a.n - b.n) / static_cast<uint64_t>(f.piece_pitch) + 1;
        b.cond_stride = piece_step[op_cond];
        b.src0_stride = piece_step[op_src0];
        b.src1_stride = piece_step[op_src1];
        b.dst_stride = piece_step[op_dst];
        for (int64_t r = 0; r < static_cast<int64_t>(a.rows); ++r) {
            b.cond = static_cast<const char *>(a.cond) + r * a.cond_stride;
            b.src0 = static_cast<const char *>(a.src0) + r * a.src0_stride;
            b.src1 = static_cast<const char *>(a.src1) + r * a.src1_stride;
            b.dst = static_cast<char *>(a.dst) + r * a.dst_stride;
            fn(&b);
        }
    }

    // Strip `s` of tile `tl`: its rows [s * strip, ...) by all its
    // columns; with streaming, share s of the next tile's prefetch.
    // With `carry` (dst_carry): the dst transposes continue the carry of
    // the strip before (carry_in) and leave theirs to the next (carry_out).
    void run_strip(const tile &tl, int64_t s, char *scr,
                   const char *const *next, const int64_t *next_bytes,
                   int64_t n_strips, scratch_memo &memo, char *carry,
                   bool carry_in, bool carry_out) const {
        const int nd = f.ndims;
        const int td = nd - 2, in = nd - 1;
        const int64_t r0 = s * strip;
        const int64_t nr = std::min(strip, tl.nr - r0), nc = tl.nc;
        if (dt_fn) {
            run_dt(tl, r0, nr);
            return;
        }
        const void *ptr[n_operands];
        int64_t row_stride[n_operands];
        char *sp = scr;
        if (copy_direct) {
            // One transpose per row group's share of the strip.
            for (int64_t r = 0; r < nr;) {
                const int64_t at = tl.r0 + r0 + r;
                const int64_t k = group_share(at, nr - r);
                transpose_input(op_src0, tl, s, n_strips,
                                r == 0 ? next[op_src0] : nullptr,
                                next_bytes[op_src0], row_at(tl, op_src0, at), k,
                                const_cast<char *>(row_at(tl, op_dst, at)),
                                stride[op_dst][td]);
                r += k;
            }
            return;
        }
        for (int i = 0; i < n_operands; ++i) {
            ptr[i] = row_at(tl, i, tl.r0 + r0);
            row_stride[i] = stride[i][td];
        }
        for (int i = 0; i < op_dst; ++i) {
            if (!tr[i])
                continue;
            scratch_memo::block &held = memo.tr[i];
            // Pieces: the same start may begin another sequence of them.
            const int64_t phase = f.piece ? tl.c0 % f.piece_pitch : 0;
            if (held.src != ptr[i] || held.rows != nr || held.cols != nc
                || held.phase != phase) {
                held = { ptr[i], nr, nc, phase };
                transpose_input(i, tl, s, n_strips, next[i], next_bytes[i],
                                ptr[i], nr, sp, ld[i]);
            }
            ptr[i] = sp;
            row_stride[i] = ld[i];
            sp += (strip * ld[i] + 63) / 64 * 64;
        }
        if (tr[op_dst]) {
            ptr[op_dst] = sp;
            row_stride[op_dst] = ld[op_dst];
        }
        if (expand_off >= 0) {
            // The strip's cond bytes along its rows, a row group's share at
            // a time.
            char *const buf = scr + expand_off;
            for (int64_t r = 0; r < nr;) {
                const int64_t at = tl.r0 + r0 + r;
                const int64_t k = group_share(at, nr - r);
                expand_rows(row_at(tl, op_cond, at), stride[op_cond][td],
                            buf + r * nc, nc, k, 1, expand_permutes);
                r += k;
            }
            ptr[op_cond] = buf;
            row_stride[op_cond] = nc;
        }
        for (int i = 0; i < op_dst; ++i) {
            if (!((rep_mask >> i) & 1))
                continue;
            const char *const row = static_cast<const char *>(ptr[i]);
            char *const buf = scr + rep_off[i];
            if (memo.rep_src[i] != row) {
                repeat_row(buf, row, nc * esize[i], wide);
                memo.rep_src[i] = row;
            }
            ptr[i] = buf;
        }
        // Rows [0, nr) as nr / wide rows of wide x nc elements, then the
        // rows left as one row; a repeated row vector is read from the
        // start of its buffer each time (stride 0).
        const int64_t full = nr / wide, left = nr % wide;
        int64_t step[n_operands];
        for (int i = 0; i < n_operands; ++i)
            step[i] = (rep_mask >> i) & 1 ? 0 : row_stride[i] * wide;
        select_call_args a;
        a.cond = ptr[op_cond];
        a.src0 = ptr[op_src0];
        a.src1 = ptr[op_src1];
        a.dst = const_cast<void *>(ptr[op_dst]);
        a.cond_stride = step[op_cond];
        a.src0_stride = step[op_src0];
        a.src1_stride = step[op_src1];
        a.dst_stride = step[op_dst];
        a.fence = 0;
        a.elem_tail = 1;
        if (f.group) {
            // Row groups (wide is 1): one call per group's share of the
            // strip, each operand read as it is at its own group.
            for (int64_t r = 0; r < nr;) {
                const int64_t at = tl.r0 + r0 + r;
                const int64_t k = group_share(at, nr - r);
                const char *q[n_operands];
                for (int i = 0; i < n_operands; ++i)
                    q[i] = tr[i] || (i == op_cond && expand_off >= 0)
                                   ? static_cast<const char *>(ptr[i])
                                             + r * row_stride[i]
                                   : row_at(tl, i, at);
                a.cond = q[op_cond];
                a.src0 = q[op_src0];
                a.src1 = q[op_src1];
                a.dst = const_cast<char *>(q[op_dst]);
                a.n = static_cast<uint64_t>(nc);
                a.rows = static_cast<uint64_t>(k);
                run_rows(a);
                r += k;
            }
        } else if (full > 0) {
            a.n = static_cast<uint64_t>(wide * nc);
            a.rows = static_cast<uint64_t>(full);
            run_rows(a);
        }
        if (left > 0) {
            a.cond = static_cast<const char *>(a.cond) + full * step[op_cond];
            a.src0 = static_cast<const char *>(a.src0) + full * step[op_src0];
            a.src1 = static_cast<const char *>(a.src1) + full * step[op_src1];
            a.dst = static_cast<char *>(a.dst) + full * step[op_dst];
            a.n = static_cast<uint64_t>(left * nc);
            a.rows = 1;
            run_rows(a);
        }
        if (tr[op_dst]) {
            // The scratch strip, rows x columns, into dst, contiguous
            // along the rows: the same transpose with the roles of rows
            // and columns swapped, in bands of dst rows (dst_band).
            char *const blk = const_cast<char *>(base[op_dst]) + tl.off[op_dst];
            // Staged: into the staging copy of the tile's dst block, placed
            // at the block's offset within a cache line.
            char *const stage =
                    stage_tr ? scr + stage_off
                                       + (reinterpret_cast<uintptr_t>(blk)
                                          - reinterpret_cast<uintptr_t>(
                                                  scr + stage_off))
                                                 % 64
                             : nullptr;
            char *const d0 = (stage ? stage : blk) + r0 * stride[op_dst][td];
            const transpose_kernel *const dtr = stage ? stage_tr : tr[op_dst];
            transpose_call_args t;
            t.cols = static_cast<uint64_t>(nr);
            t.src_ld = ld[op_dst];
            t.dst_ld = stride[op_dst][in];
            t.pf_cols = 0; // the scratch: no prefetch
            t.src_cached = 1;
            t.fence = 0;
            // This strip's share of each prefetched input block, one
            // input per band of the transpose; where the strip ends a
            // staged tile that is streamed out, over that copy instead,
            // whose non-temporal stores leave the reads idle (L15 bf16 on
            // Zen 4: 1.06-1.14x as fast at 1 and 2 threads, f32 a tie;
            // docs/performance.md, "The next tile's inputs over a staged
            // dst's copy").
            prefetch_blocks pf;
            for (int i = 0; i < op_dst; ++i)
                if (next[i] && !tr[i]) {
                    const auto [b0, b1] =
                            strip_share(next_bytes[i], s, n_strips);
                    pf.at[pf.n] = next[i] + b0;
                    pf.bytes[pf.n++] = b1 - b0;
                }
            const bool pf_by_copy = stage && stage_nt && r0 + nr == tl.nr;
            const int n_pf = pf_by_copy ? 0 : pf.n;
            // Bands of a multiple of 32 rows with a carry (64 for AVX-512's
            // byte kernel), so that each of a band's rows is in a whole
            // register tile of the kernel (then carried) in every strip or
            // in none.
            const int64_t bq =
                    carry ? std::max(32, transpose_tile_rows(dtr->key())) : 16;
            int64_t band = dst_band > 0 ? dst_band : nc;
            if (n_pf > 1)
                band = std::min(band, std::max<int64_t>(bq, (nc / n_pf + bq - 1)
                                                                    / bq * bq));
            t.carry_in = carry_in;
            t.carry_out = carry_out;
            int k = 0;
            if (f.piece) {
                // A call per piece (or a piece's share of the tile), into
                // its own dst lines; the columns past a piece's end up to
                // the next (the inputs' padding) are no one's.
                const int64_t c0 = tl.c0;
                for (int64_t c = c0; c < c0 + nc;) {
                    const int64_t at = c % f.piece_pitch;
                    if (at >= f.piece) {
                        c += f.piece_pitch - at;
                        continue;
                    }
                    const int64_t m = std::min(f.piece - at, c0 + nc - c);
                    t.src = sp + (c - c0) * esize[op_dst];
                    t.dst = d0 + col_offset(op_dst, c) - col_offset(op_dst, c0);
                    t.rows = static_cast<uint64_t>(m);
                    t.pf_next = k < n_pf ? pf.at[k] : nullptr;
                    t.pf_next_bytes =
                            k < n_pf ? static_cast<uint64_t>(pf.bytes[k]) : 0;
                    ++k;
                    dtr->fn()(&t);
                    c += m;
                }
                return;
            }
            for (int64_t b0 = 0; b0 < nc; b0 += band) {
                t.src = sp + b0 * esize[op_dst];
                t.dst = d0 + b0 * stride[op_dst][in];
                t.rows = static_cast<uint64_t>(std::min(band, nc - b0));
                t.carry = carry ? carry + b0 * 64 : nullptr;
                t.pf_next = k < n_pf ? pf.at[k] : nullptr;
                t.pf_next_bytes =
                        k < n_pf ? static_cast<uint64_t>(pf.bytes[k]) : 0;
                ++k;
                dtr->fn()(&t);
            }
            if (stage && r0 + nr == tl.nr)
                copy_block(blk, stage, nc * stride[op_dst][in], stage_nt,
                           pf_by_copy ? &pf : nullptr);
        }
    }
};

// Streaming (plan_tiles): tiles of all rows and all columns whose blocks
// together fit stream_budget, so that the next tile's, prefetched in
// address order, fit beside them in a 1 MiB L2.
constexpr int64_t stream_budget = 256 * 1024;

// The transposed operands of a folded problem with ndims >= 2: their
// element bytes; `blocks`: each is an input whose lines hold the whole
// tile dim back to back, so that a tile of all rows and all columns is one
// contiguous block of it; `aligned`: every line's stride is a multiple of
// 64 bytes (its lines start cache lines where the tensor does).
// `panel_floor`: the fewest rows a panel may have, 128 bytes (two cache
// lines) of each transposed input's lines and 64 bytes (one whole line) of
// a transposed dst's, at least 16.
struct transposed_operands {
    int64_t w_min = 8, w_max = 0, w_sum = 0, panel_floor = 16;
    bool blocks = true, aligned = true;
    // A transposed input broadcast along every outer dim (there being
    // some): each tile of all rows reads the same block of it.
    bool repeated = false;

    explicit transposed_operands(const select_folded &f) {
        const int nd = f.ndims;
        const int64_t rows = f.dims[nd - 2];
        for (int i = 0; i < n_operands; ++i)
            if (f.mode[i] == inner_mode::transposed) {
                const int64_t w = operand_bytes(i, f.elem_size);
                w_min = std::min(w_min, w);
                w_max = std::max(w_max, w);
                w_sum += w;
                panel_floor =
                        std::max(panel_floor, (i == op_dst ? 64 : 128) / w);
                blocks = blocks && i != op_dst && !f.piece
                         && f.strides[i][nd - 2] == w
                         && f.strides[i][nd - 1] == rows * w;
                aligned = aligned && f.strides[i][nd - 1] % 64 == 0;
                bool outer_bcast = i != op_dst && nd > 2;
                for (int d = 0; d + 2 < nd; ++d)
                    outer_bcast = outer_bcast && f.strides[i][d] == 0;
                repeated = repeated || outer_bcast;
            }
        w_sum = std::max<int64_t>(w_sum, 1);
    }

    // Streaming's shape condition: the blocks fit stream_budget together,
    // and each line is read in one strip or cut at cache lines. A strip
    // reads 64 bytes of the narrowest operand's lines; where a line does
    // not start a cache line, each strip loads two lines of cache per line
    // and the next strip loads one of them again, long evicted from L1
    // (lines of 788 and 800 bytes: 0.26-0.42 of the dense Select, against
    // 0.36-0.51 in panels; docs/performance.md).
    bool may_stream(const select_folded &f) const {
        const int nd = f.ndims;
        const int64_t rows = f.dims[nd - 2];
        return blocks && (aligned || rows * w_min <= 64)
               && rows * f.dims[nd - 1] <= stream_budget / w_sum;
    }
};

} // namespace

bool tiles_may_stream(const select_folded &f) {
    return f.ndims >= 2 && transposed_operands(f).may_stream(f);
}

// A transposed dst whose lines lie back to back (a tile of all rows is one
// block of dst) at a pitch that is not a multiple of 64 bytes, so that the
// non-temporal transposing kernel cannot store its lines whole ([32, 12,
// 197, 197] with the last two dims swapped: lines of 788 bytes). Written
// through a staging copy of the block and copied out whole, such a dst ran
// 1.30-1.38x faster at 1 thread (docs/performance.md, L15).
bool dst_block_staged(const select_folded &f) {
    const int nd = f.ndims;
    if (nd < 2 || f.mode[op_dst] != inner_mode::transposed)
        return false;
    const int64_t w = f.elem_size;
    const int64_t pitch = f.strides[op_dst][nd - 1];
    return f.strides[op_dst][nd - 2] == w && pitch == f.dims[nd - 2] * w
           && pitch % 64 != 0;
}

// Every L1D of the x86 servers we target has 64 sets of 64-byte lines, so
// a line's set is its address bits 6-11: rows whose stride is a multiple of
// 4 KiB or within a few bytes of one ([2047, 2047] f32: 8188 bytes) all
// fall into one or two sets, and the transposing kernel's partial row
// pieces are evicted before the next column block completes them (the
// kernel alone ran 1.2-2.9x slower on such strides than on padded ones;
// 8 rows to a set cost nothing measurable, docs/performance.md). Rows stay
// back to back where they spread (a strip can then run as one row). The
// count covers the first 128 rows, a panel's of 2- to 8-byte operands: the
// rows one column block of the transposing kernel stores into before the
// next column block completes their lines. Rows shorter than a line that
// start in the same line count once (rows of 6 or 12 bytes: a few channels
// of a transposed dst): they share it rather than compete for a set.
bool rows_crowd_l1_sets(int64_t pitch, int64_t rows) {
    int count[64] = {};
    int64_t last = -1;
    for (int64_t r = 0; r < std::min<int64_t>(rows, 128); ++r) {
        const int64_t line = r * pitch / 64;
        if (line != last && ++count[line % 64] > 8)
            return true;
        last = line;
    }
    return false;
}

int64_t transposed_dst_band(int64_t pitch, int64_t rows) {
    int64_t band = std::max<int64_t>(64, transposed_dst_band_bytes
                                                 / std::max<int64_t>(pitch, 1)
                                                 / 64 * 64);
    if (rows_crowd_l1_sets(pitch, 128))
        band = std::min<int64_t>(band, 128);
    return band < rows ? band : 0;
}

int64_t scratch_pitch(int64_t bytes, int64_t rows, bool whole_lines) {
    if (!rows_crowd_l1_sets(bytes, rows) && (!whole_lines || bytes % 64 == 0))
        return bytes;
    int64_t pitch = (bytes + 63) / 64 * 64;
    while (rows_crowd_l1_sets(pitch, rows))
        pitch += 64;
    return pitch;
}

tile_shape plan_tiles(const select_folded &f, int nthreads, bool packed_dt,
                      bool dst_rows_per_thread) {
    // Measured on the layout benchmarks (docs/design.md, layouts in
    // docs/performance.md). Streaming tiles first (below). Panels: tiles that
    // span the whole inner dim, so that the operands read as they are stream
    // along whole rows (one run where they are dense), of min_rows rows (128;
    // 64 when only 1-byte operands are transposed) or, where no transposed
    // operand is wider than 2 bytes or the panel has at most 16 columns, up
    // to 256 rows (512 bytes of each line of a 2-byte operand per panel, as
    // of a 4-byte one) where they fit
    // panel_budget, fewer (halving) while the panels would leave the
    // busiest thread over 1.25x the mean. Where fewer than min_rows rows
    // fit (wide rows), narrower panels, down to panel_floor rows, where
    // they balance the threads. A transposed dst: panels of half the budget
    // (at least 4 lines of each dst row where its transposes run in bands)
    // in whole carry granules, or column blocks of one granule's rows where
    // no such panel fits (below). Where no panel fits: tiles of
    // min_rows rows by as many columns as fit tile_budget, in row panels.
    // A transposed input's panels and tiles, and a transposed dst's column
    // blocks, are made even where the threads' shares of their elements
    // would not be (`shared_tiles`).
    constexpr int64_t panel_budget = 1024 * 1024;
    constexpr int64_t tile_budget = 128 * 1024;
    const int nd = f.ndims;
    if (nd < 2)
        return { 1, f.dims[0] };
    const int64_t rows = f.dims[nd - 2], inner = f.dims[nd - 1];
    const transposed_operands t(f);
    int64_t outer = 1;
    for (int d = 0; d + 2 < nd; ++d)
        outer *= f.dims[d];
    const int64_t nthr = std::max(nthreads, 1);
    // `items` tiles leave the busiest thread at most 1.25x the mean.
    const auto balanced = [nthr](int64_t items) {
        const int64_t most = (items + nthr - 1) / nthr;
        return 4 * most * nthr <= 5 * items;
    };
    // `v` halved (in multiples of `g`, down to `least`) while `items(v)`
    // tiles would leave the busiest thread over 1.25x the mean.
    const auto halve_to_balance = [&](int64_t v, int64_t least, int64_t g,
                                      auto items) {
        while (v > least && !balanced(items(v)))
            v = std::max(least, v / 2 / g * g);
        return v;
    };
    // Panels of `r` rows (rounded down to a multiple of `g` where fewer
    // than all), halved down to `least` until they balance; 0 where none
    // do.
    const auto balanced_rows = [&](int64_t r, int64_t least, int64_t g) {
        if (r < rows)
            r = r / g * g;
        const auto items = [&](int64_t v) {
            return outer * ((rows + v - 1) / v);
        };
        r = halve_to_balance(r, least, g, items);
        return balanced(items(r)) ? r : int64_t(0);
    };
    // Threads take the tiles by count, in contiguous ranges (rows first,
    // or columns first), so the balance above holds for the tiles and not
    // always for their elements: a last block of a few rows or columns is
    // a tile like the others, and 5 column blocks leave one of 4 threads
    // two. [131, 35778] bf16 with src_1 transposed, in tiles of 128 and 3
    // rows at 2 threads, left one thread 128 of the 131 rows and ran 1.27x
    // faster than 1 thread (docs/performance.md). `shared_tiles` keeps
    // tiles of r x c where the threads' shares of their elements leave the
    // busiest at most 1.25x the mean. Otherwise it makes the row blocks
    // (in multiples of `rg`; 0: rows kept) and the column blocks (of 16) as
    // even as that allows, no more blocks and none larger; where that
    // still leaves a thread more, tiles narrower than the row take the
    // fewest more column blocks (none wider), columns first, and panels
    // finer row blocks, each the other after (below).
    const auto shares_balanced = [&](int64_t tr, int64_t tc, bool cf) {
        const int64_t n_rb = (rows + tr - 1) / tr;
        const int64_t n_cb = (inner + tc - 1) / tc;
        // The elements of the first i tiles.
        const auto before = [&](int64_t i) {
            const int64_t o = i / (n_rb * n_cb), k = i % (n_rb * n_cb);
            if (cf) {
                const int64_t cb = k / n_rb, rb = k % n_rb;
                return o * rows * inner + cb * tc * rows
                       + std::min(tc, inner - cb * tc) * rb * tr;
            }
            const int64_t rb = k / n_cb, cb = k % n_cb;
            return (o * rows + rb * tr) * inner
                   + std::min(tr, rows - rb * tr) * cb * tc;
        };
        const int64_t items = outer * n_rb * n_cb;
        const int64_t team = std::min(nthr, items);
        int64_t most = 0;
        for (int64_t th = 0; th < team; ++th)
            most = std::max(most, before(items * (th + 1) / team)
                                          - before(items * th / team));
        return 4 * most * team <= 5 * outer * rows * inner;
    };
    const auto shared_tiles = [&](int64_t r, int64_t c, int64_t rg,
                                  bool cf = false) -> tile_shape {
        if (shares_balanced(r, c, cf))
            return { r, c, 0, false, cf };
        const auto even = [](int64_t v, int64_t n, int64_t g) {
            const int64_t blocks = (n + v - 1) / v;
            return std::min(v, ((n + blocks - 1) / blocks + g - 1) / g * g);
        };
        const int64_t r0 = r;
        if (rg > 0)
            r = even(r0, rows, rg);
        c = even(c, inner, 16);
        if (shares_balanced(r, c, cf))
            return { r, c, 0, false, cf };
        // The fewest more column blocks (none wider) that share the
        // elements, each thread's in whole column blocks (columns first):
        // of 16 columns, else of any.
        const auto more_cols = [&](tile_shape &out) {
            const int64_t n_cb = (inner + c - 1) / c;
            for (int64_t g : { 16, 1 })
                for (int64_t n = n_cb + 1; n <= n_cb + 2 * nthr; ++n) {
                    const int64_t cn = ((inner + n - 1) / n + g - 1) / g * g;
                    if (cn < c && shares_balanced(r, cn, true)) {
                        out = { r, cn, 0, false, true };
                        return true;
                    }
                }
            return false;
        };
        // The row blocks in the coarsest of 8, 4, 2 and 1 rows below rg
        // that shares the elements.
        const auto finer_rows = [&](tile_shape &out) {
            for (int64_t g = std::min<int64_t>(rg / 2, 8); g >= 1; g /= 2) {
                const int64_t rn = even(r0, rows, g);
                if (shares_balanced(rn, c, cf)) {
                    out = { rn, c, 0, false, cf };
                    return true;
                }
            }
            return false;
        };
        // Tiles narrower than the row take more column blocks first;
        // panels, which read whole rows (faster than tiles, design.md),
        // finer row blocks first; the even blocks where neither shares.
        tile_shape out { r, c, 0, false, cf };
        if (c < inner) {
            if (!more_cols(out))
                finer_rows(out);
        } else if (!finer_rows(out)) {
            more_cols(out);
        }
        return out;
    };
    // The packed transposed-dst kernel reads no scratch: tiles of all rows
    // (every pixel of an image) where they balance the threads, else of
    // fewer rows (halving, in multiples of 64), so that each call runs
    // long.
    if (packed_dt)
        if (const int64_t b = balanced_rows(rows, 64, 64))
            return { b, inner };
    // Streaming: where the transposed inputs' blocks fit stream_budget
    // (tiles_may_stream) and the tiles balance the threads, each tile runs
    // in strips of one AVX-512 register tile's rows (64 bytes of the
    // narrowest transposed operand; the scratch holds one strip), while the
    // transposing kernels prefetch the next tile.
    if (t.may_stream(f) && balanced(outer))
        return { rows, inner, std::min(rows, 64 / t.w_min), true };
    const int64_t min_rows =
            std::min(rows, t.w_max >= 2 ? int64_t(128) : int64_t(64));
    const int64_t max_rows = t.w_max > 2 ? 128 : 256;
    const int64_t fit = panel_budget / (inner * t.w_sum);
    // A staged dst (dst_block_staged) is copied out a tile's block at a
    // time: panels of all rows where they fit and balance the threads.
    if (dst_block_staged(f) && fit >= rows && balanced(outer))
        return { rows, inner };
    // A transposed input broadcast along the outer dims (L14's mask
    // [1, 1, 197, 197] under [32, 12, 197, 197] scores): tiles of all rows
    // where they fit and balance the threads, so that a thread transposes
    // that input once (scratch_memo) rather than once per tile (L14 f32:
    // 1.11-1.26x over panels of 128 rows; docs/performance.md).
    if (t.repeated && fit >= rows && balanced(outer))
        return { rows, inner };
    // dst's pieces (select_folded::piece), stored a piece per transpose
    // call and never carried: tiles whose scratch fits piece_budget (about
    // an L1), of all rows where a piece of them fits it (each call then
    // stores a whole line of the tile dim into each of its dst lines,
    // right after the previous piece's), else of even row blocks that do
    // (a block of a few rows left over stored each line in two calls
    // apart), by as many whole pieces as fit. Survey cases on the Zen 5
    // guest: [154, 145, 23] f64 with dst reversed ran at 55 GB/s in half
    // the panel budget, 77-83 in 64 KiB (docs/performance.md, "A
    // transposed dst in pieces"). Where those blocks would take pieces
    // shorter than piece_run_bytes of a source, the columns come first:
    // row blocks of one pitch read each input row a few bytes at a time,
    // lines thousands of bytes apart (s8 rows of 10 over 5283 rows ran at
    // 1 GB/s in blocks of 896 rows, 6.6-7.5 in blocks of 256 bytes; "Tiles
    // of dst's pieces over many rows").
    if (f.mode[op_dst] == inner_mode::transposed && f.piece) {
        constexpr int64_t piece_budget = 64 * 1024;
        const int64_t p = f.piece_pitch;
        const int64_t fit_rows =
                std::max<int64_t>(16, piece_budget / (p * t.w_sum));
        // Too many rows for a piece of them, and pieces shorter than
        // piece_run_bytes of a source: the columns first, as many whole
        // pieces as make that run, then the rows that fit beside them.
        const int64_t run = (piece_run_bytes / f.elem_size + p - 1) / p * p;
        if (fit_rows < rows && p < run) {
            const int64_t cols = std::min(inner, run);
            const int64_t r = piece_budget / (cols * t.w_sum) / 16 * 16;
            return shared_tiles(std::min(rows, std::max<int64_t>(16, r)), cols,
                                16);
        }
        const int64_t n_rb = (rows + fit_rows - 1) / fit_rows;
        const int64_t r =
                n_rb == 1 ? rows
                          : std::min(rows,
                                     ((rows + n_rb - 1) / n_rb + 15) / 16 * 16);
        const int64_t cols = std::min(
                inner, std::max(p, piece_budget / (r * t.w_sum) / p * p));
        return shared_tiles(r, cols, 16);
    }
    // A transposed dst: the row kernel writes a panel into the scratch
    // while it streams the inputs through L2, and only then do the
    // transposes read the panel back, so its panels take half the budget
    // (at 1 MiB, [2047, 2047] ran 1.15-1.2x slower on the Intel guest).
    // And a multiple of transpose_carry_cols rows, at least that many where
    // they fit the whole budget: the carry chain (dst_carry) runs only
    // across strips of whole granules, and a dst without it stores every
    // line in pieces ([3000, 3000] f32 in panels of 80 rows: 1.55x the
    // time of 64, each with its faster store kind; docs/performance.md).
    const auto gc = static_cast<int64_t>(transpose_carry_cols);
    if (f.mode[op_dst] == inner_mode::transposed && rows >= gc) {
        // Rows too wide for a panel of one granule: tiles of one granule
        // by as many columns as fit half the budget (fewer, halving, while
        // they would leave the busiest thread over 1.25x the mean), a
        // column block's tiles in row order, so that the carry chain runs
        // from tile to tile down each column block. Narrow panels (32 or
        // 16 rows, no carry) ran 1.3-1.8x longer ([699, 5623] and [1024,
        // 8192] f32, [1024, 16384] and [3, 200, 10000] bf16;
        // docs/performance.md).
        if (fit < gc) {
            const int64_t n_rb = (rows + gc - 1) / gc;
            const int64_t fit_cols = panel_budget / 2 / (gc * t.w_sum);
            const int64_t cols = halve_to_balance(
                    std::min(inner, std::max<int64_t>(16, fit_cols / 16 * 16)),
                    16, 16, [&](int64_t c) {
                        return outer * n_rb * ((inner + c - 1) / c);
                    });
            return shared_tiles(gc, cols, 0, true);
        }
        // Where its transposes run in bands (transposed_dst_band), a
        // panel stores each page's lines during one band: at least 4
        // lines of each dst row (256 rows of 1-byte elements, 128 of
        // 2-byte ones) where they fit the whole budget. In bands, [4001,
        // 4096] s8 with dst transposed ran 1.1-1.15x as long in panels of
        // 128 rows, bf16 1.02-1.07x in panels of 64 (docs/performance.md,
        // "A transposed dst in bands of pages").
        const int64_t half = panel_budget / 2 / (inner * t.w_sum);
        const int64_t four_lines =
                transposed_dst_band(f.strides[op_dst][nd - 1], inner) > 0
                        ? std::min<int64_t>(fit, 4 * 64 / f.elem_size)
                        : 0;
        int64_t r = std::min(
                { rows, max_rows, std::max({ gc, half, four_lines }) });
        if (r < rows)
            r = r / gc * gc;
        // Fewer matrices than threads: each thread its own dst rows (the
        // columns in one block per thread, tiles in column order, where
        // those blocks balance the threads), or the panels split among the
        // threads, which then store into the same dst rows. On an Intel
        // Xeon (2 threads, AVX-512) [2047, 2047] ran 2.07x one thread's
        // speed with the dst rows split, 1.29x with the panels. On AMD
        // (`dst_rows_per_thread` false) the panels took 0.53-0.89x the
        // column blocks' time from DRAM on Zen 4 (L12, L20, L23, both
        // ISAs; L20 f32 from the L3 1.02-1.20x) and 0.53-0.93x on Zen 3, so
        // there the column blocks serve only where the panels do not
        // balance the threads, their elements too: on Zen 4 at 2 threads,
        // panels of 64 and 36 rows ([100, 8209] s8) took 2.3x the column
        // blocks' time, of 256 and 44 ([300, 2047] s8) 1.5x, of 128 and
        // 69 ([197, 3000] bf16) 1.7x. With 3 or more matrices ([3, 2047,
        // 2047], [5, 600, 600]) the column blocks ran 0.9-1.0x the panels,
        // and 17 columns in blocks of 16 and 1 left one thread all the
        // work (docs/performance.md).
        const int64_t cols = ((inner + nthr - 1) / nthr + 15) / 16 * 16;
        const bool col_blocks =
                nthr > 1 && outer < nthr && 4 * cols * nthr <= 5 * inner;
        const int64_t b = balanced_rows(r, gc, gc);
        if (col_blocks
            && (dst_rows_per_thread || !b || !shares_balanced(b, inner, false)))
            return shared_tiles(r, cols, 0, true);
        if (b)
            return { b, inner };
    }
    if (fit >= std::min(min_rows, t.panel_floor)) {
        // The most rows that fit, fewer (halving, down to min_rows) while
        // the panels would leave the busiest thread over 1.25x the mean.
        // Panels of at most 16 columns take up to 256 rows whatever their
        // width: their transposes read no more lines than a register tile
        // holds, and each panel costs a transpose call and a row kernel
        // call. L28 f32 ([16, 224, 224, 3], src_0 channels-first, a
        // panel per image row) ran 1.18-1.21x as fast with AVX-512 in
        // panels of all 224 rows as of 128 and 96 on Zen 5, at 1 and 2
        // threads; under the AVX2 cap 0.98-1.09x (docs/performance.md,
        // "Few columns in panels of 256 rows").
        const int64_t r =
                std::min({ rows, fit, inner <= 16 ? int64_t(256) : max_rows });
        if (const int64_t b = balanced_rows(r, min_rows, 16))
            return shared_tiles(b, inner, 16);
    }
    const int64_t cols = tile_budget / (min_rows * t.w_sum) / 16 * 16;
    return shared_tiles(min_rows, std::min(inner, std::max<int64_t>(16, cols)),
                        16);
}

int plan_threads(const select_plan &plan, int nthreads) {
    const select_folded &f = plan.folded;
    const int64_t nelems = f.rows() * f.inner();
    const int64_t bytes = nelems > INT64_MAX / 32
                                  ? INT64_MAX
                                  : nelems * (1 + 3 * f.elem_size);
    return static_cast<int>(std::min<int64_t>(
            std::max(nthreads, 1),
            std::max<int64_t>(1, bytes / min_bytes_per_thread)));
}

namespace {
// Runs the JIT kernel of `plan` over `nthr` threads, storing dst the way
// `stores` says; returns the row kernel that ran.
const select_kernel *run_plan(const select_plan &plan, const void *cond,
                              const void *src0, const void *src1, void *dst,
                              int nthr, store_kind stores) {
    const bool nt = stores_nt(stores);
    const select_folded &f = plan.folded;
    const int64_t inner = f.inner();
    const int64_t rows = f.rows();
    // Widened short rows (broadcast.cpp, step 6): each row-vector input is
    // read from its row repeated f.rep times, at most 1024 elements.
    alignas(64) char rep_buf[op_dst][wide_row_elems * 8];
    if (f.rep > 1) {
        const void **in[op_dst] = { &cond, &src0, &src1 };
        for (int i = 0; i < op_dst; ++i) {
            if (!((f.rep_mask >> i) & 1))
                continue;
            repeat_row(rep_buf[i], *in[i],
                       inner / f.rep * operand_bytes(i, f.elem_size), f.rep);
            *in[i] = rep_buf[i];
        }
    }
    // The kernel's src_0 and src_1 slots hold the user's operands swapped
    // where the plan says so.
    const int a = plan.swap ? op_src1 : op_src0;
    const int b = plan.swap ? op_src0 : op_src1;
    const char *const base[n_operands] = {
        static_cast<const char *>(cond),
        static_cast<const char *>(plan.swap ? src1 : src0),
        static_cast<const char *>(plan.swap ? src0 : src1),
        static_cast<const char *>(dst)
    };
    // The operand in each of the kernel's slots.
    const int slot_op[n_operands] = { op_cond, a, b, op_dst };
    const int64_t *const strides[n_operands] = { f.strides[slot_op[0]],
                                                 f.strides[slot_op[1]],
                                                 f.strides[slot_op[2]],
                                                 f.strides[slot_op[3]] };
    // nt: the kernel that stores dst, the row kernel or dst's transpose,
    // stores non-temporally; nt_prefetch: the row kernel that also
    // prefetches rows ahead.
    const bool row_nt = nt && plan.kernel_nt;
    const select_kernel *used =
            stores == store_kind::nt_prefetch && plan.kernel_nt_pf
                    ? plan.kernel_nt_pf.get()
            : row_nt ? plan.kernel_nt.get()
                     : plan.kernel.get();
    const select_kernel_fn fn = used->fn();

    if (f.has_transposed()) {
        // A transposed dst written by the kernel itself, where the plan
        // has one for the store kind picked (no nt variant on columns off
        // the cache lines: dst's nt transpose then stores it), or dst's
        // transpose from the scratch where the kind says so.
        const bool by_transpose = stores == store_kind::nt_transpose
                                  || stores == store_kind::regular_transpose;
        const select_kernel *dt = by_transpose ? nullptr
                                  : nt         ? plan.kernel_dt_nt.get()
                                               : plan.kernel_dt.get();
        const transpose_kernel *const tr[n_operands] = {
            plan.transpose[op_cond], plan.transpose[a], plan.transpose[b],
            nt && plan.transpose_dst_nt ? plan.transpose_dst_nt
                                        : plan.transpose[op_dst]
        };
        const tiled_runner runner(
                f, fn, base, slot_op, tr, plan.transpose[op_dst], nt, nthr, dt,
                plan.kernel_dt.get(), plan.copy_by_transpose,
                used->key().row_len != 0, used->key().row_pitch,
                plan.expand[op_cond], plan.expand_by_permutes);
        if (runner.dt_fn)
            used = runner.dt_fn == runner.dt_regular ? plan.kernel_dt.get()
                                                     : dt;
        const int64_t items = runner.items();
        const int team = static_cast<int>(std::min<int64_t>(nthr, items));
        if (team <= 1) {
            runner.run(0, items);
            return used;
        }
#pragma omp parallel num_threads(team)
        {
            const int64_t t = omp_get_thread_num();
            const int64_t n = omp_get_num_threads();
            runner.run(items * t / n, items * (t + 1) / n);
        }
        return used;
    }

    const folded_runner runner {
        f,
        fn,
        { base[0], base[1], base[2], base[3] },
        { strides[0], strides[1], strides[2], strides[3] },
        used->key().row_prefetch ? row_prefetch_rows : 0,
        used->key().nt_stores != 0,
        { plan.gather[slot_op[0]] ? plan.gather[slot_op[0]]->fn() : nullptr,
          plan.gather[slot_op[1]] ? plan.gather[slot_op[1]]->fn() : nullptr,
          plan.gather[slot_op[2]] ? plan.gather[slot_op[2]]->fn() : nullptr },
        plan.scatter ? plan.scatter->fn() : nullptr,
        { plan.expand[slot_op[0]], plan.expand[slot_op[1]],
          plan.expand[slot_op[2]] },
        plan.expand_merged,
        plan.expand_by_permutes
    };
    if (nthr <= 1) {
        runner.run(0, rows, 0, inner);
        return used;
    }
    // Split rows into chunks only when there are too few rows to balance.
    // A row under chunk_align elements stays whole: the kernels generated
    // for one row length (kernel_key::row_len, rows under 64 elements)
    // are only ever called with it.
    static_assert(chunk_align >= 64, "row_len kernels get whole rows");
    int64_t csz = inner, cpr = 1;
    if (rows < items_per_thread * nthr) {
        const int64_t want = (items_per_thread * nthr + rows - 1) / rows;
        csz = (inner + want - 1) / want;
        csz = (csz + chunk_align - 1) / chunk_align * chunk_align;
        if (csz >= inner)
            csz = inner;
        cpr = (inner + csz - 1) / csz;
    }
    const int64_t items = rows * cpr;
#pragma omp parallel num_threads(static_cast <int>(nthr))
    {
        const int64_t t = omp_get_thread_num();
        const int64_t team = omp_get_num_threads();
        const int64_t i0 = items * t / team;
        const int64_t i1 = items * (t + 1) / team;
        if (cpr == 1) {
            if (i0 < i1)
                runner.run(i0, i1, 0, inner);
        } else {
            for (int64_t it = i0; it < i1;) {
                const int64_t r = it / cpr;
                const int64_t k0 = it % cpr;
                const int64_t k1 = std::min(cpr, k0 + (i1 - it));
                runner.run(r, r + 1, k0 * csz, std::min(k1 * csz, inner));
                it += k1 - k0;
            }
        }
    }
    return used;
}

} // namespace

namespace {

// The store kind of one execute on `team` threads, and the tuner's ticket
// when the policy times it.
store_kind pick_stores(const select_plan &plan, int team, const void *dst,
                       store_override stores, int &ticket) {
    ticket = -1;
    // store_override names each store_kind, one past it.
    using ov = store_override;
    using sk = store_kind;
    static_assert(static_cast<int>(ov::regular_transpose)
                          == 1 + static_cast<int>(sk::regular_transpose),
                  "store_override names each store_kind");
    static_assert(static_cast<int>(ov::nt_prefetch) == n_store_kinds,
                  "store_override names each store_kind");
    const unsigned kinds = plan.store_kinds();
    // A forced kind the plan lacks: the same stores by its own kernel.
    const auto forced = [&](store_kind k, store_kind instead) {
        return kinds & store_kind_bit(k) ? k : instead;
    };
    if (stores == store_override::regular_transpose)
        return forced(store_kind::regular_transpose, store_kind::regular);
    // The non-temporal kernels align dst to vectors themselves, from any
    // element-aligned dst (a transpose falls back to regular stores where
    // dst is not aligned to 64 bytes).
    if (!plan.has_nt()
        || reinterpret_cast<uintptr_t>(dst)
                           % static_cast<unsigned>(plan.folded.elem_size)
                   != 0
        || stores == store_override::regular)
        return store_kind::regular;
    if (stores == store_override::nt_transpose)
        return forced(store_kind::nt_transpose, store_kind::nt);
    if (stores == store_override::nt_prefetch)
        return forced(store_kind::nt_prefetch, store_kind::nt);
    if (stores == store_override::nt || !plan.tuner)
        return store_kind::nt;
    return plan.tuner->start(team, ticket);
}

} // namespace

executed execute_plan(const select_plan &plan, const select_nd &p,
                      const void *cond, const void *src0, const void *src1,
                      void *dst, int nthreads, store_override stores) {
    if (p.nelems() == 0)
        return {};
    if (nthreads <= 0)
        nthreads = omp_get_max_threads();
    if (!plan.kernel) {
        ref_select(plan.ref, cond, src0, src1, dst, nthreads);
        return {};
    }
    // A staged dst (last in plan.staged): the kernels write the buffer,
    // and its copy plan then writes dst from it.
    const select_plan::staged_operand *dst_copy = nullptr;
    void *user_dst = dst;
    if (!plan.staged.empty()) {
        // The staged inputs first, each copied by its own plan (a true 0-D
        // cond picks its src_0, the input; its 0-D src_1 reads the input's
        // first element, never used), then read from the copies.
        // Before any byte of dst is written: a buffer that cannot be had
        // fails the execute whole.
        char *buf = nullptr;
        try {
            buf = thread_buffer<struct staged_inputs_tag>(plan.staged_bytes);
        } catch (const std::bad_alloc &) {
            std::string ports;
            for (const auto &st : plan.staged)
                ports += std::string(ports.empty() ? "" : ", ")
                         + select_port_names[st.op];
            fail(status::out_of_memory, "Select: no memory for the ",
                 plan.staged_bytes, "-byte staging copy of ", ports,
                 " (operands in three or more dim orders, or dst with a "
                 "step)");
        }
        const void *in[op_dst] = { cond, src0, src1 };
        for (const auto &st : plan.staged) {
            char *const to = buf + st.offset;
            if (st.op == op_dst) {
                dst_copy = &st;
                dst = to;
                continue;
            }
            (void)execute_plan(*st.plan, st.copy, &true_cond, in[st.op],
                               in[st.op], to, nthreads);
            in[st.op] = to;
        }
        cond = in[op_cond];
        src0 = in[op_src0];
        src1 = in[op_src1];
    }
    const int nthr = plan_threads(plan, nthreads);
    int ticket = -1;
    const store_kind kind = pick_stores(plan, nthr, dst, stores, ticket);
    const auto t0 = ticket >= 0 ? std::chrono::steady_clock::now()
                                : std::chrono::steady_clock::time_point();
    const select_kernel *used =
            run_plan(plan, cond, src0, src1, dst, nthr, kind);
    if (ticket >= 0
        && plan.tuner->finish(ticket,
                              std::chrono::duration<double>(
                                      std::chrono::steady_clock::now() - t0)
                                      .count())
        && verbose_level() >= 2) {
        std::string times;
        for (int k = 0; k < n_store_kinds; ++k) {
            const auto kind_k = static_cast<store_kind>(k);
            if (plan.tuner->kinds() & store_kind_bit(kind_k))
                times +=
                        std::string(times.empty() ? "" : " ")
                        + store_kind_name(kind_k) + ":"
                        + std::to_string(plan.tuner->last_window(kind_k) * 1e3);
        }
        verbose_print(std::string("selgraph_verbose,tune,cpu,select,")
                      + plan.kernel_str() + ",threads:" + std::to_string(nthr)
                      + "," + times
                      + ",stores:" + store_kind_name(plan.tuner->current()));
    }
    if (dst_copy)
        (void)execute_plan(*dst_copy->plan, dst_copy->copy, &true_cond, dst,
                           dst, user_dst, nthreads);
    return { used, stores_nt(kind) };
}

} // namespace impl
} // namespace selgraph
