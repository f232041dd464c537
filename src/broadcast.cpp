// Broadcast folding, done once per compile.
//
// 1. Right-align cond, src_0 and src_1 to dst's rank; an operand's stride is
//    0 along a dim where it is broadcast (select_nd already holds this).
// 2. Drop every dim where dst is 1: no operand moves along it.
// 3. Order the remaining dims by dst's strides, outermost first (as PyTorch's
//    TensorIterator reorders dims before coalescing). dst's strides never
//    tie on a dim larger than 1 (compile rejects overlapping dst strides), so
//    the order is dst's memory order: a channels-last, permuted or padded
//    layout shared by every operand folds exactly like dense row-major.
//    Where that order leaves operands to transpose (step 5), the memory
//    order of each input that is broadcast along no dim is folded too, and
//    the fold that transposes the fewest bytes per element is kept (ties:
//    dst's order): three inputs in NCHW and an NHWC dst fold in NCHW order
//    and transpose dst alone.
// 4. Walk from the innermost dim outwards and merge dim i into the folded
//    dim j inside it when, for every operand, stride[i] == stride[j] * n[j].
//    That holds exactly when the operand is contiguous across the two dims,
//    or broadcast along both (0 == 0 * n): the 3-bit broadcast masks of the
//    two dims are equal and the strides contiguous.
// 5. The innermost folded dim is the kernel's row (dst's contiguous dim);
//    along it each input is a vector (stride = its element size), a scalar
//    (stride 0), transposed (strided along the row but contiguous along an
//    outer dim, which becomes the row dim of a tile, placed right outside
//    the inner dim) or strided (anything else, left to the reference
//    kernel). dst is a vector, or transposed when the fold follows an
//    input's order; then its contiguous dim is the tile's row dim. The
//    outer dims keep their byte strides, 0 where broadcast.
// 6. A short row (under 1 KiB of dst) whose next outer dim failed to
//    merge only because some inputs are one row vector for the whole
//    problem (stride 0 along every outer dim) is widened, where no input
//    is transposed or, with dst transposed, before its tile dim is chosen:
//    `rep` rows become one, the row vectors are read from a buffer holding
//    their row `rep` times (built per execute), so channels-last data with
//    a per-channel operand and few channels runs rows of hundreds of
//    elements, not of C.
// 7. A short row (under 1 KiB of dst) beside transposed inputs, whose next
//    outer dim failed to merge with it only because of them (each
//    transposed input's row dim was moved between the two in step 5), is
//    merged with that dim for every operand but them: the row becomes
//    that dim's size times longer, and each transposed input's lines of it
//    come in pieces of the old row's length, piece_stride bytes apart. The
//    tiles then run the row kernel over the long rows and transpose each
//    input a piece at a time (src/parallel_execute.cpp). A tensor with
//    every dim reversed ([N, C, H, W] stored as [W, H, C, N]) against dst
//    then folds to rows of H * W in pieces of W, not to rows of W.
//    The mirror, where dst is the transposed operand (a fold in the
//    inputs' order) and every input is contiguous across the row and the
//    dim outside the tile dim (or one element for both): the row merges
//    with that dim for the inputs, and dst's lines of the long row come
//    in pieces. Inputs [A, B, C] written to a dst stored [C, B, A] then
//    run rows of B * C rather than of C (a tile per index of B before).
//    Inputs whose rows are padded alike (by under 64 bytes and at most a
//    row) merge through their padding: dst's pieces then begin a pitch
//    apart, and the columns between them are computed, never stored.
//    Step 7 itself the same way, in rows under 64 bytes of dst: where dst
//    and the inputs read along the row are padded alike, the long row runs
//    through their padding, each transposed input's pieces begin a pitch
//    apart in its scratch, and the row kernel runs each long row's pieces
//    as one call's rows, so that no byte of dst's padding is written.
// 8. A tile dim whose lines are short for some transposed input (under
//    512 bytes: 16 images of a batch-innermost tensor) and along which
//    every transposed input continues contiguously into the next outer
//    dim takes that dim in: the tile dim becomes both, in groups of the
//    old tile dim's rows, and each other operand's groups lie that dim's
//    stride apart (select_folded::group, group_stride). A tile then reads
//    lines of hundreds of bytes of each transposed input rather than one
//    64-byte line from every page it touches.
//
// Worked example (attention mask, f32): cond [1,1,256,256], src_0
// [4,16,256,256], src_1 [1] (a 0-D -inf works the same), dst [4,16,256,256].
//   element strides      dims:  4      16     256   256
//     cond                      0      0      256   1
//     src_0                     1048576 65536 256   1
//     src_1                     0      0      0     0
//     dst                       1048576 65536 256   1
//   merge 256 into 256: every operand contiguous (src_1: 0 == 0*256)
//     -> [65536] with cond 1, src_0 1, src_1 0, dst 1
//   merge 16 into 65536: cond 0 != 1*65536, stop -> new folded dim
//   merge 4 into 16: every operand contiguous (cond 0 == 0*16) -> [64]
//   folded: dims [64, 65536], byte strides cond [0, 1], src_0 [262144, 4],
//   src_1 [0, 0], dst [262144, 4]; modes cond vector, src_0 vector, src_1
//   scalar: 64 rows of 65536, the same mask row reused for every row.
#include "broadcast.hpp"

#include <algorithm>
#include <utility>

namespace selgraph {
namespace impl {

namespace {

// The outer dim along which the most inputs that are strided along the row
// are contiguous (ties: more bytes), or -1 when none is.
int pick_tdim(const select_folded &f, const int64_t *esize) {
    const int nd = f.ndims;
    int best = -1, best_n = 0, best_bytes = 0;
    for (int j = 0; j + 1 < nd; ++j) {
        int n = 0, bytes = 0;
        for (int i = 0; i < op_dst; ++i)
            if (f.mode[i] == inner_mode::strided
                && f.strides[i][j] == esize[i]) {
                ++n;
                bytes += static_cast<int>(esize[i]);
            }
        if (n > best_n || (n == best_n && n > 0 && bytes > best_bytes)) {
            best = j;
            best_n = n;
            best_bytes = bytes;
        }
    }
    return best;
}

// Dim d removed (merged into the dim inside it, which holds the product).
void remove_dim(select_folded &f, int d) {
    for (int j = d; j + 1 < f.ndims; ++j) {
        f.dims[j] = f.dims[j + 1];
        for (int i = 0; i < n_operands; ++i)
            f.strides[i][j] = f.strides[i][j + 1];
    }
    --f.ndims;
    if (f.tdim > d)
        --f.tdim;
}

// Step 6 (see the top of the file).
void widen_short_rows(select_folded &f, const int64_t *esize) {
    const int nd = f.ndims;
    if (nd < 2)
        return;
    const int in = nd - 1, od = nd - 2;
    const int64_t n = f.dims[in];
    if (n * esize[op_dst] >= short_row_bytes)
        return;
    uint8_t rep_mask = 0;
    for (int i = 0; i < n_operands; ++i) {
        if (f.strides[i][od] == f.strides[i][in] * n)
            continue; // contiguous across the two dims (or scalar in both)
        bool row_vector = i < op_dst && f.mode[i] == inner_mode::vector;
        for (int j = 0; j < in && row_vector; ++j)
            row_vector = f.strides[i][j] == 0;
        if (!row_vector)
            return;
        rep_mask |= static_cast<uint8_t>(1u << i);
    }
    if (!rep_mask)
        return;
    // The largest divisor of the outer dim that keeps the row within
    // wide_row_elems.
    const int64_t m = f.dims[od];
    int64_t k = 1;
    for (int64_t c = std::min(m, wide_row_elems / n); c >= 2; --c)
        if (m % c == 0) {
            k = c;
            break;
        }
    if (k < 2)
        return;
    f.rep = k;
    f.rep_mask = rep_mask;
    f.dims[in] = n * k;
    f.dims[od] = m / k;
    for (int i = 0; i < n_operands; ++i)
        f.strides[i][od] *= k; // 0 stays 0 for the row vectors
    if (f.dims[od] == 1)
        remove_dim(f, od); // one wide row per outer index
}

// Step 7 and its mirror (see the top of the file), on a fold whose tile
// dim is placed: the transposed operands' lines of the long row come in
// pieces (the inputs', or dst's where it is the one transposed), and
// every other operand is read along it as it is.
void merge_pieces(select_folded &f, const int64_t *esize,
                  const fold_options &o) {
    const int nd = f.ndims;
    if (nd < 3 || f.tdim != nd - 2 || f.rep > 1)
        return;
    const int in = nd - 1, b = nd - 3;
    const int64_t n = f.dims[in];
    const bool dst_tr = f.mode[op_dst] == inner_mode::transposed;
    if (n * esize[op_dst] >= (dst_tr ? dst_piece_row_bytes : short_row_bytes))
        return;
    // The rows of the operands read along the long row (every one but the
    // transposed) lie `pitch` columns apart along that dim: n, or more
    // where they are padded alike, by under a cache line each and at most
    // n columns. The long row then reads through the padding, no line the
    // rows alone would not, and dst gets the pieces alone: beside a
    // transposed dst its transposes store them; beside transposed inputs,
    // in rows under padded_piece_row_bytes, the row kernel runs each long
    // row's pieces as one call's rows (select_folded::gapped_pieces),
    // without streaming stores.
    int64_t pitch = n;
    for (int i = 0; i < n_operands; ++i)
        if (f.mode[i] == inner_mode::vector) {
            pitch = f.strides[i][b] / f.strides[i][in];
            break;
        }
    if (pitch < n || pitch > 2 * n
        || (pitch > n
            && (dst_tr ? !o.padded_dst_pieces
                       : n * esize[op_dst] >= padded_piece_row_bytes)))
        return;
    // Padding: no element of the operand lies between its rows (every
    // other dim's lines begin past the long row, or it is broadcast along
    // them).
    for (int i = 0; i < n_operands && pitch > n; ++i) {
        if (f.mode[i] == inner_mode::transposed)
            continue;
        const int64_t s = f.strides[i][in];
        if ((pitch - n) * s >= 64)
            return;
        for (int d = 0; d < nd; ++d)
            if (d != b && d != in && f.strides[i][d] != 0
                && f.strides[i][d] < (pitch * (f.dims[b] - 1) + n) * s)
                return;
    }
    // A transposed input broadcast along that dim keeps it outside: its
    // tile is then the same for each index of it, transposed once
    // (transposed_bytes, the tiles' scratch_memo). Beside a transposed
    // dst, no input is transposed.
    for (int i = 0; i < n_operands; ++i)
        if (f.mode[i] == inner_mode::transposed
                    ? f.strides[i][b] == 0 || (dst_tr && i != op_dst)
                    : f.strides[i][b] != f.strides[i][in] * pitch)
            return;
    f.piece = n;
    f.piece_pitch = pitch;
    for (int i = 0; i < n_operands; ++i)
        if (f.mode[i] == inner_mode::transposed)
            f.piece_stride[i] = f.strides[i][b];
    f.dims[in] = pitch * (f.dims[b] - 1) + n;
    remove_dim(f, b);
}

// Step 8 (see the top of the file), on a fold whose tile dim is placed.
void merge_row_groups(select_folded &f, const int64_t *esize) {
    const int nd = f.ndims;
    if (nd < 3 || f.tdim != nd - 2 || f.mode[op_dst] != inner_mode::vector)
        return;
    const int td = nd - 2, b = nd - 3;
    const int64_t n = f.dims[td];
    bool short_line = false;
    for (int i = 0; i < op_dst; ++i) {
        if (f.mode[i] != inner_mode::transposed)
            continue;
        if (f.strides[i][b] != f.strides[i][td] * n)
            return;
        short_line = short_line || n * esize[i] < short_line_bytes;
    }
    if (!short_line)
        return;
    f.group = n;
    for (int i = 0; i < n_operands; ++i)
        f.group_stride[i] = f.strides[i][b];
    f.dims[td] = n * f.dims[b];
    remove_dim(f, b);
}

// The dims of `p` larger than 1 (steps 2 and 3) in operand `op`'s memory
// order, outermost first (a stable sort keeps the logical order where
// strides tie); returns their count.
int memory_order(const select_nd &p, int op, int *order) {
    int n = 0;
    for (int d = 0; d < p.ndims; ++d)
        if (p.dims[d] != 1)
            order[n++] = d;
    std::stable_sort(order, order + n, [&](int a, int b) {
        return p.strides[op][a] > p.strides[op][b];
    });
    return n;
}

// Step 4 over the dims in `order` (outermost first), in element strides:
// `p` over those dims, merged where every operand is contiguous across two
// (or broadcast along both); 0 dims where `order` is empty.
select_nd coalesce_in_order(const select_nd &p, const int *order, int n_order) {
    select_nd c;
    c.elem_size = p.elem_size;
    // Innermost first; reversed at the end.
    int n = 0;
    int64_t dims[max_ndims];
    int64_t strides[n_operands][max_ndims];
    for (int k = n_order - 1; k >= 0; --k) {
        const int d = order[k];
        bool merge = n > 0;
        for (int i = 0; i < n_operands && merge; ++i)
            merge = p.strides[i][d] == strides[i][n - 1] * dims[n - 1];
        if (merge) {
            dims[n - 1] *= p.dims[d];
            continue;
        }
        dims[n] = p.dims[d];
        for (int i = 0; i < n_operands; ++i)
            strides[i][n] = p.strides[i][d];
        ++n;
    }
    c.ndims = n;
    for (int j = 0; j < n; ++j) {
        c.dims[j] = dims[n - 1 - j];
        for (int i = 0; i < n_operands; ++i)
            c.strides[i][j] = strides[i][n - 1 - j];
    }
    return c;
}

// Steps 4 to 8 over the dims in `order` (outermost first).
select_folded fold_in_order(const select_nd &p, const int *order, int n_order,
                            const int64_t *esize, const fold_options &o) {
    select_folded f;
    f.elem_size = p.elem_size;
    const select_nd c = coalesce_in_order(p, order, n_order);
    int n = c.ndims;
    if (n == 0) {
        // One element (0-D dst or all dims 1): a row of one element, where
        // "vector" and "scalar" read the same byte range.
        f.dims[0] = 1;
        for (int i = 0; i < n_operands; ++i)
            f.strides[i][0] = esize[i];
        n = 1;
    } else {
        for (int j = 0; j < n; ++j) {
            f.dims[j] = c.dims[j];
            for (int i = 0; i < n_operands; ++i)
                f.strides[i][j] = c.strides[i][j] * esize[i];
        }
    }
    f.ndims = n;
    for (int i = 0; i < n_operands; ++i) {
        const int64_t s = f.strides[i][n - 1];
        f.mode[i] = s == esize[i]             ? inner_mode::vector
                    : (s == 0 && i != op_dst) ? inner_mode::scalar
                                              : inner_mode::strided;
    }

    // Operands strided along the row but contiguous along one outer dim run
    // through transposed tiles: that dim moves right outside the inner dim
    // (the order of the outer dims is only a loop order). A dst strided
    // along the row decides the dim; otherwise the inputs do.
    // A dst transposed against the order (an input's) has its short rows
    // widened first (step 6), and its tile dim is then found among the
    // dims left: inputs stored (X, N, Y, C) with a per-channel cond and a
    // dst stored (X, Y, C, N) fold in the inputs' order to rows of C that
    // only the cond kept from merging with Y (survey case: 0.09 of the
    // dense Select in rows of 6, 0.32 in rows of 42).
    const bool dst_vector = f.mode[op_dst] == inner_mode::vector;
    if (!dst_vector)
        widen_short_rows(f, esize);
    n = f.ndims;
    int tdim = -1;
    if (dst_vector) {
        tdim = pick_tdim(f, esize);
    } else {
        for (int j = 0; j + 1 < n && tdim < 0; ++j)
            if (f.strides[op_dst][j] == esize[op_dst])
                tdim = j;
    }
    if (tdim >= 0) {
        for (int i = 0; i < n_operands; ++i)
            if (f.mode[i] == inner_mode::strided
                && f.strides[i][tdim] == esize[i])
                f.mode[i] = inner_mode::transposed;
        for (int j = tdim; j + 2 < n; ++j) {
            std::swap(f.dims[j], f.dims[j + 1]);
            for (int i = 0; i < n_operands; ++i)
                std::swap(f.strides[i][j], f.strides[i][j + 1]);
        }
        f.tdim = n - 2;
        merge_pieces(f, esize, o);
        merge_row_groups(f, esize);
    }

    if (tdim < 0 && dst_vector)
        widen_short_rows(f, esize);

    for (int j = 0; j < f.ndims; ++j) {
        uint8_t mask = 0;
        for (int i = 0; i < op_dst; ++i)
            if (f.strides[i][j] == 0)
                mask |= 1u << i;
        f.bcast_mask[j] = mask;
    }
    return f;
}

// Bytes per element that go through a transpose from memory; -1 when an
// operand is left strided (the reference kernel runs the plan). An input
// broadcast along every outer dim whose elements fit in 64 KiB counts for
// nothing: its tile is the same for every outer index and is transposed
// from cache. So ViT's scores [32, 12, 197, 197] written with the last two
// dims swapped fold in dst's order (the scores and the [1, 1, 197, 197]
// mask transposed) rather than the scores' (dst transposed): 1.09-1.23x.
// Masks of 256 KiB and 1 MiB gained 1.06-1.07x in f32 but lost 0.89x in
// bf16 (docs/performance.md, L14).
int64_t transposed_bytes(const select_folded &f, const int64_t *esize) {
    const int nd = f.ndims;
    int64_t b = 0;
    for (int i = 0; i < n_operands; ++i) {
        if (f.mode[i] == inner_mode::strided)
            return -1;
        if (f.mode[i] != inner_mode::transposed)
            continue;
        // Pieces (step 7): the merged dim is one the input moves along.
        bool cached = i != op_dst && nd > 2 && !f.piece;
        for (int d = 0; d + 2 < nd && cached; ++d)
            cached = f.strides[i][d] == 0;
        int64_t bytes = esize[i];
        for (int d = nd - 2; d < nd && cached; ++d)
            if (f.strides[i][d] != 0)
                bytes *= f.dims[d];
        if (!cached || bytes > 64 * 1024)
            b += esize[i];
    }
    return b;
}

// Bytes per element of the operands that a fold with nothing to transpose
// walks in short runs: vectors along the row that are contiguous over less
// than short_row_bytes (1 KiB) before an outer dim they move along at
// another stride (an operand whose run ends at a dim it is broadcast along
// reads the same bytes again, from cache). Rows of [B, H, S, D] inputs
// written to a [B, S, H, D] dst fold in dst's order to rows of D read from
// H places per (B, S); in the inputs' order dst alone is written so
// (docs/performance.md, "Short rows in another order").
int64_t scattered_bytes(const select_folded &f, const int64_t *esize) {
    const int nd = f.ndims;
    int64_t b = 0;
    for (int i = 0; i < n_operands; ++i) {
        if (f.mode[i] != inner_mode::vector)
            continue;
        int64_t run = f.dims[nd - 1] * esize[i];
        int d = nd - 2;
        for (; d >= 0 && run < short_row_bytes && f.strides[i][d] == run; --d)
            run *= f.dims[d];
        if (run < short_row_bytes && d >= 0 && f.strides[i][d] != 0)
            b += esize[i];
    }
    return b;
}

} // namespace

select_nd coalesce_select(const select_nd &p) {
    if (p.nelems() == 0)
        return p;
    // Bytes of cache lines an element costs along the row: its own where
    // contiguous, none where broadcast, a line at most where strided.
    const auto walk_bytes = [](const select_nd &c) {
        int64_t b = 0;
        for (int i = 0; i < n_operands && c.ndims > 0; ++i) {
            const int64_t s = c.strides[i][c.ndims - 1];
            b += std::min<int64_t>(s * operand_bytes(i, c.elem_size), 64);
        }
        return b;
    };
    int order[max_ndims];
    const int n_order = memory_order(p, op_dst, order);
    select_nd best = coalesce_in_order(p, order, n_order);
    int64_t best_bytes = walk_bytes(best);
    for (int i = 0; i < op_dst; ++i) {
        memory_order(p, i, order);
        const select_nd c = coalesce_in_order(p, order, n_order);
        const int64_t b = walk_bytes(c);
        if (b < best_bytes) {
            best = c;
            best_bytes = b;
        }
    }
    return best;
}

select_folded fold_select(const select_nd &p, const fold_options &o) {
    const int64_t esize[n_operands] = { 1, p.elem_size, p.elem_size,
                                        p.elem_size };

    if (p.nelems() == 0) {
        // Empty: nothing to fold (and huge dims beside a 0 must not be
        // multiplied). Execute returns before any kernel runs.
        select_folded f;
        f.elem_size = p.elem_size;
        f.ndims = 1;
        f.dims[0] = 0;
        for (int i = 0; i < n_operands; ++i)
            f.mode[i] = inner_mode::vector;
        return f;
    }

    // Step 3: dst's order first. Where that leaves operands to transpose,
    // or to walk in short runs, the order of each input that moves along
    // every dim (no broadcast) is tried too, and the fold that transposes
    // the fewest bytes per element wins; between folds that transpose
    // nothing, the one with the fewest bytes per element in short runs
    // (ties: dst's order). Three inputs laid out one way and dst another
    // then transpose, or scatter, dst alone.
    int order[max_ndims];
    const int n_order = memory_order(p, op_dst, order);
    select_folded best = fold_in_order(p, order, n_order, esize, o);
    int64_t best_cost = transposed_bytes(best, esize);
    // Bytes in short runs of a fold with no tile at all (a cached transposed
    // mask costs no bytes but has tiles), -1 for the others.
    const auto short_runs = [&](const select_folded &f, int64_t cost) {
        return cost == 0 && !f.has_transposed() ? scattered_bytes(f, esize)
                                                : int64_t { -1 };
    };
    int64_t best_scattered = short_runs(best, best_cost);
    for (int i = 0; i < op_dst && (best_cost != 0 || best_scattered > 0); ++i) {
        bool full = true;
        for (int k = 0; k < n_order && full; ++k)
            full = p.strides[i][order[k]] != 0;
        if (!full)
            continue;
        int alt[max_ndims];
        memory_order(p, i, alt);
        if (std::equal(alt, alt + n_order, order))
            continue;
        select_folded f = fold_in_order(p, alt, n_order, esize, o);
        const int64_t cost = transposed_bytes(f, esize);
        const int64_t scattered = short_runs(f, cost);
        if (cost >= 0
            && (best_cost < 0 || cost < best_cost
                || (scattered >= 0 && best_scattered >= 0
                    && scattered < best_scattered))) {
            best = f;
            best_cost = cost;
            best_scattered = scattered;
        }
    }
    return best;
}

int64_t fold_transposed_bytes(const select_folded &f) {
    const int64_t esize[n_operands] = { 1, f.elem_size, f.elem_size,
                                        f.elem_size };
    return transposed_bytes(f, esize);
}

std::string folded2str(const select_folded &f) {
    std::string s;
    for (int j = 0; j < f.ndims; ++j) {
        if (j)
            s += "x";
        s += std::to_string(f.dims[j]);
    }
    s += " bcast=";
    for (int j = 0; j < f.ndims; ++j) {
        if (j)
            s += ":";
        const char names[3] = { 'c', 'a', 'b' };
        for (int i = 0; i < 3; ++i)
            s += (f.bcast_mask[j] >> i) & 1 ? names[i] : '-';
    }
    if (f.piece)
        s += " pieces=" + std::to_string(f.piece);
    if (f.piece_pitch != f.piece)
        s += " pitch=" + std::to_string(f.piece_pitch);
    if (f.group)
        s += " groups=" + std::to_string(f.group);
    s += " inner=";
    const char *opn[n_operands] = { "c", "a", "b", "d" };
    for (int i = 0; i < n_operands; ++i) {
        if (i)
            s += ":";
        s += opn[i];
        s += f.mode[i] == inner_mode::vector       ? "v"
             : f.mode[i] == inner_mode::scalar     ? "s"
             : f.mode[i] == inner_mode::transposed ? "t"
                                                   : "x";
    }
    return s;
}

} // namespace impl
} // namespace selgraph
