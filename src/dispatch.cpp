#include "dispatch.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <immintrin.h>
#include <iterator>
#include <string>
#include <utility>
#include <vector>
#include "broadcast.hpp"
#include "common.hpp"
#include "cpu_isa.hpp"
#include "kernels/jit_select.hpp"

namespace selgraph {
namespace impl {

namespace {

// "+c:<name>" ... "+d:<name>" for the plan's transposing kernels, with
// `dst_tr` as dst's.
std::string transposes_str(const select_plan &plan,
                           const transpose_kernel *dst_tr) {
    const char *names[n_operands] = { "c", "a", "b", "d" };
    std::string s;
    for (int i = 0; i < n_operands; ++i) {
        const transpose_kernel *t = i == op_dst ? dst_tr : plan.transpose[i];
        if (t)
            s += std::string("+") + names[i] + ":" + t->name();
        else if (i < op_dst && plan.expand[i])
            s += std::string("+") + names[i] + ":expand";
        else if (i < op_dst && plan.gather[i])
            s += std::string("+") + names[i] + ":" + plan.gather[i]->name();
        else if (i == op_dst && plan.scatter)
            s += std::string("+d:") + plan.scatter->name();
    }
    return s;
}

// "+stage_c[<copy plan's kernels>]" ... for the staged operands.
std::string staged_str(const select_plan &plan) {
    const char *names[n_operands] = { "c", "a", "b", "d" };
    std::string s;
    for (const auto &st : plan.staged)
        s += std::string("+stage_") + names[st.op] + "[" + st.plan->kernel_str()
             + "]";
    return s;
}

// Operand `i` of a fold without tiles has a step of 2 elements or more
// along the row, its elements at most 64 bytes apart: an input's rows are
// gathered by the stepped kernel (select_plan::gather), dst's scattered
// (select_plan::scatter). Farther apart, each element is a line of its
// own that the next row reads (writes) again: a transposed f64 dst with a
// step of 2 over inputs in rows of 67 ran 0.40x as fast as the plain loop
// gathered so (docs/performance.md), and such inputs are staged (copied in
// their own memory order), such a dst left to the reference kernel, which
// walks memory order. Widened rows (step 6) read only inputs that are
// vectors along the row, never these.
bool stepped_operand(const select_folded &f, int i) {
    const int64_t s = f.strides[i][f.ndims - 1];
    const int64_t w = operand_bytes(i, f.elem_size);
    return f.mode[i] == inner_mode::strided && !f.has_transposed() && s > 0
           && s % w == 0 && s / w >= 2 && s <= 64;
}
bool gathered_input(const select_folded &f, int i) {
    return i < op_dst && stepped_operand(f, i);
}

// Every operand of the fold a vector, a scalar or transposed, or with a
// step: the JIT kernels run it (transposed operands reach the row kernel
// as vectors of a tile, operands with a step as vectors of a buffer).
bool fold_jit_able(const select_folded &f) {
    for (int i = 0; i < n_operands; ++i)
        if (f.mode[i] == inner_mode::strided && !stepped_operand(f, i))
            return false;
    return true;
}

// `f` as the row kernel of its plan sees it: each operand with a step,
// and each expanded input (input_expands), a vector whose rows lie back
// to back (its buffer).
select_folded as_gathered(const select_folded &f) {
    select_folded g = f;
    const int nd = f.ndims;
    for (int i = 0; i < n_operands; ++i) {
        if (!stepped_operand(f, i) && !(i < op_dst && input_expands(f, i)))
            continue;
        const int64_t w = operand_bytes(i, f.elem_size);
        g.mode[i] = inner_mode::vector;
        int64_t acc = w;
        for (int d = nd - 1; d >= 0; --d) {
            g.strides[i][d] = acc;
            acc *= f.dims[d];
        }
    }
    return g;
}

} // namespace

// A row kernel of a cond constant along the row reads one cond byte per
// row and copies the row from the source it picks, branching per row:
// over channels-last pixels of 4 f32 under a per-pixel mask ([16, 4, 56,
// 56] NHWC, cond [16, 1, 56, 56]) that ran 5 ns a row (0.08-0.44 of the
// dense Select for 3 to 16 channels) with a random mask and 1.6 ns with
// one all true. Expanded, the row kernel selects along the rows as from
// any vector cond (docs/performance.md, "A per-row cond over short rows").
// Longer rows than expanded_row_bytes keep the branch, which reads
// only the source it takes. A cond with no stride along the walked dim
// decides whole calls: its branch is taken the same way row after row.
// In tiles (an input transposed) the strips' rows, read as they lie
// (tiled_runner::expand_off), but not beside a transposed dst, which the
// kernels writing it (select_plan::kernel_dt) read from the tensor.
//
// A source of one element per row (a per-pixel value over channels-last
// data) has no branch: the short-row kernels broadcast each row's
// element, a row at a time (0.07-0.5 of the dense Select for 3 to 16
// channels on the Zen 5 guest). Expanded by byte permutes or AVX2's lane
// shuffles it is read as a vector and the rows merge
// (docs/performance.md, "A per-row source expanded by byte permutes");
// expanded one row at a time it ran 1.7-2.6x slower than the short-row
// kernels (the thirty-seventh session). Not in tiles, and not rows of 16
// bytes, which the short-row kernel moves in one 16-byte part each:
// expanded by the permutes, 2 f64, 8 bf16 and 16 s8 took 0.80-1.61x the
// time.
bool input_expands(const select_folded &f, int i) {
    const int nd = f.ndims;
    const int64_t bytes = f.inner() * f.elem_size;
    return nd >= 2 && f.mode[op_dst] != inner_mode::transposed
           && f.mode[i] == inner_mode::scalar && f.strides[i][nd - 2] != 0
           && bytes <= expanded_row_bytes
           && (i == op_cond
               || (!f.has_transposed() && f.inner() >= 2 && bytes != 16));
}

bool expanded_rows_merge(const select_folded &f) {
    const int nd = f.ndims;
    const int64_t n = f.inner();
    for (int i = 0; i < n_operands; ++i) {
        const int64_t s = f.strides[i][nd - 2];
        if (!(i < op_dst && input_expands(f, i))
            && !(f.mode[i] == inner_mode::vector
                 && s == n * operand_bytes(i, f.elem_size))
            && !(f.mode[i] == inner_mode::scalar && s == 0))
            return false;
    }
    return true;
}

namespace {
// expand_rows of 1-byte elements in stores of P bytes (P <= n): the row's first
// ones, then one more ending at its end.
template <int P>
void expand_rows_by(const unsigned char *src, int64_t from_stride,
                    unsigned char *out, int64_t n, int64_t rows) {
    for (int64_t r = 0; r < rows; ++r, src += from_stride, out += n) {
        const uint64_t v = uint64_t { *src } * 0x0101010101010101ull;
        for (int64_t k = 0; k + P < n; k += P)
            std::memcpy(out + k, &v, P);
        std::memcpy(out + n - P, &v, P);
    }
}

constexpr int max_expanded_row = static_cast<int>(expanded_row_bytes);

// expand_rows of elements of W > 1 bytes one element at a time (a copy
// of a known width: one move).
template <int W>
void expand_elems(const unsigned char *src, int64_t from_stride,
                  unsigned char *out, int64_t n, int64_t rows) {
    for (int64_t r = 0; r < rows; ++r, src += from_stride)
        for (int64_t k = 0; k < n; ++k, out += W)
            std::memcpy(out, src, W);
}

// The index vectors of expand_lanes and expand_permuted, for rows of n
// >= 2 elements of w = 2^l bytes, n w at most max_expanded_row bytes
// (every row the plans expand): n vectors each, from first[l][n] on. Of a
// run of R / w rows (R = 32 or 64 bytes of them), vector v (v < n) of out
// takes at byte j byte j % w of the run's row (R v + j) / (n w):
// permutes[k][j] is that byte's offset in the run (R = 64), lanes[k][j]
// its offset from lane_base[k] (R = 32), the 16 bytes from which AVX2
// shuffles within each 16-byte lane; a vector's rows span at most 16
// bytes (checked here).
constexpr int expand_table_vectors() {
    int count = 0;
    for (int w = 1; w <= 8; w *= 2)
        for (int n = 2; n * w <= max_expanded_row; ++n)
            count += n;
    return count;
}
struct expand_tables {
    int16_t first[4][max_expanded_row + 1] = {};
    uint8_t lane_base[expand_table_vectors()] = {};
    alignas(32) uint8_t lanes[expand_table_vectors()][32] = {};
    alignas(64) uint8_t permutes[expand_table_vectors()][64] = {};
    constexpr expand_tables() {
        int k = 0;
        for (int l = 0; l < 4; ++l) {
            const int w = 1 << l;
            for (int n = 2; n * w <= max_expanded_row; ++n) {
                first[l][n] = static_cast<int16_t>(k);
                for (int v = 0; v < n; ++v, ++k) {
                    lane_base[k] = static_cast<uint8_t>(32 * v / (n * w) * w);
                    for (int j = 0; j < 64; ++j) {
                        permutes[k][j] = static_cast<uint8_t>(
                                (64 * v + j) / (n * w) * w + j % w);
                        if (j >= 32)
                            continue;
                        const int b = (32 * v + j) / (n * w) * w + j % w
                                      - lane_base[k];
                        if (b > 15)
                            throw "a vector's rows span more than 16 bytes";
                        lanes[k][j] = static_cast<uint8_t>(b);
                    }
                }
            }
        }
    }
};
constexpr expand_tables expand_idx;

// The row lengths expand_lanes and expand_permuted take: n >= 2 elements
// of 2^l bytes, at most max_expanded_row bytes.
template <int N, int L>
constexpr bool expandable = N >= 2 && (N << L) <= max_expanded_row;

// One run of expand_lanes<N, L>: the rows in the 32 bytes at `from`
// (loads reach lane_base + 16 bytes) into the N vectors at `to`.
template <int N, int L>
__attribute__((target("avx2"), always_inline)) inline void
expand_lane_run(const unsigned char *from, unsigned char *to) {
    constexpr int k = expand_idx.first[L][N];
    for (int v = 0; v < N; ++v)
        _mm256_storeu_si256(
                reinterpret_cast<__m256i *>(to + 32 * v),
                _mm256_shuffle_epi8(
                        _mm256_broadcastsi128_si256(_mm_loadu_si128(
                                reinterpret_cast<const __m128i *>(
                                        from + expand_idx.lane_base[k + v]))),
                        _mm256_load_si256(reinterpret_cast<const __m256i *>(
                                expand_idx.lanes[k + v]))));
}

// expand_rows of rows back to back of N elements of 2^L bytes by AVX2:
// each run of 32 bytes of rows N loads of 16 bytes broadcast to both
// lanes, shuffles and stores of 32 bytes, while a run's loads stay within
// the rows; the rest the same way from a copy of its rows on the stack,
// into a copy stored back by its bytes. One function per row length, its
// loads and shuffles at fixed offsets and its loops unrolled: on the Zen 5
// guest 0.14-0.45x the time of one loop over n for rows of up to 16 bytes,
// 0.65x for rows of 24 and 32 bytes (docs/performance.md, "The expansion
// per row length"). The rest had been run by byte shuffles of 16 rows and
// then a row at a time: the copies ran L30 under the AVX2 cap on the
// 2-vCPU Intel Xeon (s8 rows of 3) 1.29-1.39x as fast ("The expansion's
// last rows").
template <int N, int L>
__attribute__((target("avx2"))) void
expand_lanes(const unsigned char *src, unsigned char *out, int64_t rows) {
    constexpr int k = expand_idx.first[L][N];
    // The bytes a run's loads reach.
    constexpr int reach = [] {
        int r = 32;
        for (int v = 0; v < N; ++v)
            r = std::max(r, expand_idx.lane_base[k + v] + 16);
        return r;
    }();
    const int64_t bytes = rows << L;
    int64_t b = 0;
    for (; b + reach <= bytes; b += 32, src += 32, out += 32 * N)
        expand_lane_run<N, L>(src, out);
    // The rest, under `reach` bytes of rows.
    const int64_t left = bytes - b;
    if (left == 0)
        return;
    alignas(32) unsigned char in[32 + reach] = {};
    alignas(32) unsigned char to[2 * 32 * N];
    std::memcpy(in, src, static_cast<size_t>(left));
    for (int64_t c = 0; c < left; c += 32)
        expand_lane_run<N, L>(in + c, to + N * c);
    std::memcpy(out, to, static_cast<size_t>(left * N));
}

// expand_rows of rows back to back of N elements of 2^L bytes by
// AVX512_VBMI byte permutes: each run of 64 bytes of rows one load and N
// permutes and stores of 64 bytes; the rows after the last whole run the
// same way from a load of just their bytes, the last vector stored under
// a mask. For a cond on the Zen 5 guest 0.26-0.39x the time of byte
// shuffles of 16 rows for rows of 2 to 16 bytes, 0.13-0.19x from 20 to 32
// (docs/performance.md, "A per-row cond expanded by byte permutes"); one
// function per row length, 0.68-0.94x the time of one loop over n ("The
// expansion per row length").
// (The unmasked intrinsic's undefined merge operand trips g++ 12's
// -Wmaybe-uninitialized; an all-ones zeroing mask compiles to the plain
// vpermb.)
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) inline __m512i
permute_by(__m512i x, const uint8_t *idx) {
    return _mm512_maskz_permutexvar_epi8(~__mmask64 { 0 },
                                         _mm512_load_si512(idx), x);
}

template <int N, int L>
__attribute__((target("avx512f,avx512bw,avx512vbmi,bmi2"))) void
expand_permuted(const unsigned char *src, unsigned char *out, int64_t rows) {
    constexpr int k = expand_idx.first[L][N];
    const uint8_t(*const idx)[64] = expand_idx.permutes + k;
    constexpr int64_t run = 64 >> L;
    int64_t r = 0;
    for (; r + run <= rows; r += run, src += 64, out += 64 * N) {
        const __m512i x = _mm512_loadu_si512(src);
        for (int v = 0; v < N; ++v)
            _mm512_storeu_si512(out + 64 * v, permute_by(x, idx[v]));
    }
    if (r == rows)
        return;
    const auto left = static_cast<uint64_t>((rows - r) << L);
    const __m512i x = _mm512_maskz_loadu_epi8(_bzhi_u64(~0ull, left), src);
    int64_t bytes = ((rows - r) * N) << L;
    for (int v = 0; bytes > 0; ++v, bytes -= 64) {
        if (bytes >= 64)
            _mm512_storeu_si512(out + 64 * v, permute_by(x, idx[v]));
        else
            _mm512_mask_storeu_epi8(
                    out + 64 * v,
                    _bzhi_u64(~0ull, static_cast<uint64_t>(bytes)),
                    permute_by(x, idx[v]));
    }
}

// expand_lanes and expand_permuted, by [l][n] (null where not expandable).
using expand_fn = void (*)(const unsigned char *, unsigned char *, int64_t);
struct expand_fns {
    expand_fn lanes[4][max_expanded_row + 1];
    expand_fn permuted[4][max_expanded_row + 1];
};
template <int L, int N>
constexpr void set_expand_fns(expand_fns &t) {
    if constexpr (expandable<N, L>) {
        t.lanes[L][N] = &expand_lanes<N, L>;
        t.permuted[L][N] = &expand_permuted<N, L>;
    }
}
template <int L, int... Ns>
constexpr void set_expand_fns(expand_fns &t,
                              std::integer_sequence<int, Ns...>) {
    (set_expand_fns<L, Ns>(t), ...);
}
constexpr expand_fns make_expand_fns() {
    expand_fns t {};
    constexpr auto ns =
            std::make_integer_sequence<int, max_expanded_row + 1> {};
    set_expand_fns<0>(t, ns);
    set_expand_fns<1>(t, ns);
    set_expand_fns<2>(t, ns);
    set_expand_fns<3>(t, ns);
    return t;
}
constexpr expand_fns expanders = make_expand_fns();

} // namespace

void expand_rows(const void *from, int64_t from_stride, void *to, int64_t n,
                 int64_t rows, int64_t w, bool by_permutes) {
    const auto *src = static_cast<const unsigned char *>(from);
    auto *out = static_cast<unsigned char *>(to);
    const int l = w == 1 ? 0 : w == 2 ? 1 : w == 4 ? 2 : 3;
    const bool runs = from_stride == w && n >= 2 && n * w <= max_expanded_row;
    if (runs)
        (by_permutes ? expanders.permuted : expanders.lanes)[l][n](src, out,
                                                                   rows);
    else if (w == 2)
        expand_elems<2>(src, from_stride, out, n, rows);
    else if (w == 4)
        expand_elems<4>(src, from_stride, out, n, rows);
    else if (w == 8)
        expand_elems<8>(src, from_stride, out, n, rows);
    else if (n >= 8)
        expand_rows_by<8>(src, from_stride, out, n, rows);
    else if (n >= 4)
        expand_rows_by<4>(src, from_stride, out, n, rows);
    else if (n >= 2)
        expand_rows_by<2>(src, from_stride, out, n, rows);
    else
        expand_rows_by<1>(src, from_stride, out, n, rows);
}

namespace {

// A fold the stepped kernel runs (kernel_key::src0_step): cond and one
// source scalar along the row, the other source's elements `step` apart
// along it (2 to 255), dst a vector, nothing transposed and no pieces or
// groups (a strided source never widens rows: step 6 needs every operand
// that does not merge to be a vector). `op`: the stepped source.
bool stepped_fold(const select_folded &f, int &op, int &step) {
    const int in = f.ndims - 1;
    if (f.has_transposed() || f.piece || f.group || f.rep > 1
        || f.mode[op_cond] != inner_mode::scalar
        || f.mode[op_dst] != inner_mode::vector)
        return false;
    for (const int i : { op_src0, op_src1 }) {
        const int other = i == op_src0 ? op_src1 : op_src0;
        const int64_t s = f.strides[i][in];
        if (f.mode[i] == inner_mode::strided
            && f.mode[other] == inner_mode::scalar && s > 0
            && s % f.elem_size == 0 && s / f.elem_size >= 2
            && s / f.elem_size <= 255) {
            op = i;
            step = static_cast<int>(s / f.elem_size);
            return true;
        }
    }
    return false;
}

// The stepped kernel's key (kernel_key::src0_step or dst_step: one of
// `src0_step`, `dst_step` set): cond and src_1 scalar, regular stores.
kernel_key stepped_key(kernel_isa isa, int elem_bytes, int64_t src0_step,
                       int64_t dst_step) {
    kernel_key k {};
    k.isa = isa;
    k.elem_size = static_cast<uint8_t>(elem_bytes);
    k.cond_scalar = 1;
    k.src1_scalar = 1;
    k.unroll = 1;
    k.src0_step = static_cast<uint8_t>(src0_step);
    k.dst_step = static_cast<uint8_t>(dst_step);
    return k;
}

// Whether operand `op` of `p` is contiguous (stride 1) along a dim larger
// than 1.
bool has_unit_stride(const select_nd &p, int op) {
    for (int d = 0; d < p.ndims; ++d)
        if (p.dims[d] > 1 && p.strides[op][d] == 1)
            return true;
    return false;
}

// Element strides of a tensor of `dims`, dense in the memory order of
// `order_strides` (outermost first: larger strides; ties keep the logical
// order, as fold_select orders dims).
void dense_in_order(int ndims, const int64_t *dims,
                    const int64_t *order_strides, int64_t *out) {
    int order[max_ndims];
    for (int d = 0; d < ndims; ++d)
        order[d] = d;
    std::stable_sort(order, order + ndims, [&](int a, int b) {
        return order_strides[a] > order_strides[b];
    });
    int64_t acc = 1;
    for (int k = ndims - 1; k >= 0; --k) {
        out[order[k]] = acc;
        acc *= dims[order[k]];
    }
}

// The copy of input `op` of `p` into its staging buffer: a Select of a true
// 0-D cond, the input as src_0 and a 0-D src_1 over the input's own dims
// (1 where broadcast), into a dst dense in dst's memory order; an input
// with no stride-1 dim (a slice with a step) into a dst dense in its own
// memory order, so that the copy only gathers its rows (the stepped
// kernel) and never transposes them.
select_nd staging_copy(const select_nd &p, int op) {
    select_nd c;
    c.ndims = p.ndims;
    c.elem_size = operand_bytes(op, p.elem_size);
    for (int d = 0; d < p.ndims; ++d) {
        c.dims[d] = p.strides[op][d] == 0 ? 1 : p.dims[d];
        c.strides[op_src0][d] = p.strides[op][d];
    }
    dense_in_order(p.ndims, c.dims,
                   has_unit_stride(p, op) ? p.strides[op_dst] : p.strides[op],
                   c.strides[op_dst]);
    return c;
}

} // namespace

std::string select_plan::kernel_str() const {
    if (!kernel)
        return "ref_nd";
    if (copy_by_transpose)
        return transpose[op_src0]->name();
    std::string s = kernel_nt ? kernel->name() + "|" + kernel_nt->name()
                              : kernel->name();
    if (kernel_nt_pf)
        s += "|" + kernel_nt_pf->name();
    s += transposes_str(*this, transpose[op_dst]);
    if (transpose_dst_nt)
        s += "|" + transpose_dst_nt->name();
    if (kernel_dt)
        s += "+dt:" + kernel_dt->name()
             + (kernel_dt_nt ? "|" + kernel_dt_nt->name() : std::string());
    return s + staged_str(*this);
}

std::string select_plan::kernel_str(const executed &e) const {
    if (!e.kernel)
        return "ref_nd";
    if (e.kernel->key().dst_transposed)
        return e.kernel->name() + staged_str(*this);
    return e.kernel->name()
           + transposes_str(*this, e.nt && transpose_dst_nt ? transpose_dst_nt
                                                            : transpose[op_dst])
           + staged_str(*this);
}

size_t select_touched_bytes(const select_nd &p) {
    if (p.nelems() == 0)
        return 0;
    size_t bytes[n_operands];
    for (int i = 0; i < n_operands; ++i) {
        int64_t elems = 1;
        for (int d = 0; d < p.ndims; ++d)
            if (p.strides[i][d] != 0)
                elems *= p.dims[d];
        bytes[i] = static_cast<size_t>(elems)
                   * static_cast<size_t>(operand_bytes(i, p.elem_size));
    }
    int inner = p.ndims - 1; // innermost dim where dst moves
    while (inner >= 0 && p.dims[inner] == 1)
        --inner;
    const bool cond_per_row = inner >= 0 && p.strides[op_cond][inner] == 0;
    const size_t srcs = cond_per_row ? std::max(bytes[op_src0], bytes[op_src1])
                                     : bytes[op_src0] + bytes[op_src1];
    return bytes[op_cond] + srcs + bytes[op_dst];
}

cpu_tuning tuning_of(cpu_kind k) {
    cpu_tuning t;
    switch (k) {
        case cpu_kind::amd_zen4:
            // docs/performance.md: "AVX2 transposes of 2- and 4-byte inputs
            // on Zen 4", "Transposes of a few lines", "A transposed dst of
            // 2-byte elements in one pass, and its rows prefetched". Of
            // Zen 5's later rules ("Zen 5's rules on Zen 4"): AVX2's nt
            // transposes of dst lines a multiple of 256 bytes apart ran L24
            // 1.07-1.13x as fast, and AVX-512's byte carry L23 1.05-1.08x;
            // the packed kernels' prefetch ran L18 from DRAM 1.44-1.47x as
            // long, and is not taken. AVX2's packed kernel of 12 and 13
            // f32 channels ran 1.06-1.2x as fast as AVX-512's, from the L3
            // and from DRAM (L18), and tied on tensors of a few MB ("AVX2's
            // packed kernel for 12 and 13 channels"); it keeps 13 since
            // AVX-512's moves whole lanes for 12 ("Whole lanes for 4, 8
            // and 12 channels").
            t.ymm_input_transposes_words = true;
            t.ymm_input_transposes_dwords = true;
            t.ymm_dst_nt_transposes_four_lines = true;
            t.zmm_byte_carry = true;
            t.split_permutes = true;
            t.dt_words = true;
            t.dt_prefetch_words = true;
            t.dt_prefetch_dwords = true;
            t.ymm_packed_dt_dwords = true;
            t.ymm_packed_dt_words = true;
            t.dst_rows_per_thread = false;
            break;
        case cpu_kind::amd_zen5:
            // docs/performance.md, "AMD EPYC Zen 5, 2 vCPUs": Zen 4's
            // rules one by one. Its 4-byte input transposes ran faster;
            // 2-byte ones, the packed blocks' shorter limits and the
            // prefetching dst blocks ran slower. Its 2-byte dst blocks ran
            // faster from the caches but slower from DRAM, where dst's nt
            // transpose won: taken since the store tuner chooses between
            // them ("Four ways of storing a transposed dst"). The
            // panel split of a transposed dst ran faster there too (L12
            // from DRAM at 2 threads). The packed kernels of many channels
            // ran 1.7-5x longer from DRAM without their prefetch ("The
            // packed kernel's inputs prefetched"). dst's nt transposes of
            // lines a multiple of 4 KiB apart ran 1.39-1.59x as fast with
            // AVX2's kernels ("dst lines a multiple of 4 KiB apart"), and
            // of lines a multiple of 256 bytes apart, where AVX2's streams
            // four lines of each, 1.08-1.43x ("dst lines a multiple of 256
            // bytes apart"); so did 2-byte inputs whose lines crowd one L1
            // set, 1.07-1.23x
            // but L11 from DRAM 0.99x ("2-byte inputs whose lines crowd one
            // L1 set"). AVX-512's carried byte transposes ran s8 dsts whose
            // lines do not start cache lines 1.0-1.38x as fast as AVX2's
            // ("AVX-512's byte carry"). Zen 4's AVX2 packed kernels of
            // 2-byte elements (11 to 15 dst lines, or 8 and 12 rows
            // interleaved) ran L18 bf16 in 0.71-0.88x the time, from the
            // caches and from DRAM, at 1 and 2 threads, and 8 to 14
            // channels of [16, C, H, H] (H 56, 112) either way 0.73-0.9x
            // ("Zen 4's later rules on Zen 5").
            t.ymm_input_transposes_dwords = true;
            t.ymm_input_transposes_crowded_words = true;
            t.ymm_dst_nt_transposes_four_lines = true;
            t.zmm_byte_carry = true;
            t.dt_words = true;
            t.dt_prefetch_packed = true;
            t.ymm_packed_dt_words = true;
            t.dst_rows_per_thread = false;
            break;
        case cpu_kind::amd:
            // Zen 3 (AVX2 only; docs/performance.md, "A transposed dst's
            // panels at 2 threads on AMD"); later families, and Zen 4 and
            // 5 whose AVX-512 the OS or hypervisor hides, unmeasured.
            t.dst_rows_per_thread = false;
            break;
        case cpu_kind::other:
            // Intel, and every CPU of another vendor. Measured on the
            // 16-vCPU Intel Xeon (family 6 model 207) alone ("Zen 4's and
            // Zen 5's rules on Intel", docs/performance.md): the 2-byte
            // dst blocks without their row prefetch ran L5, L13, L15 and
            // L20 bf16 in 0.71-0.94x the time at 1 thread (L12 level) and
            // L5 in 0.77x at 16, and AVX-512's byte carry ran L23 in
            // 0.79x at 1 thread. Zen's AVX2 transposes of 2- and 4-byte
            // inputs, the row prefetches and AVX2's nt transposes of dst
            // lines 256 bytes apart ran level or slower there, and are not
            // taken. On the 2-vCPU Intel Xeon (the same model) a transposed
            // dst's short rows merged through the inputs' padding ran
            // 0.69-0.93x as fast as the one-pass block kernel over the
            // rows (bf16 rows of 16 to 121 elements; Zen 4 and 5 1.08-1.09x
            // at 1 thread: "Padded dst pieces against the block kernel").
            t.zmm_byte_carry = true;
            t.dt_words = true;
            t.dt_over_padded_dst_pieces = true;
            break;
    }
    return t;
}

namespace {
struct tuning_rule {
    const char *name;
    bool cpu_tuning::*field;
};
constexpr tuning_rule tuning_rules[] = {
    { "ymm_input_transposes_words", &cpu_tuning::ymm_input_transposes_words },
    { "ymm_input_transposes_dwords", &cpu_tuning::ymm_input_transposes_dwords },
    { "ymm_input_transposes_crowded_words",
      &cpu_tuning::ymm_input_transposes_crowded_words },
    { "ymm_dst_nt_transposes_four_lines",
      &cpu_tuning::ymm_dst_nt_transposes_four_lines },
    { "zmm_byte_carry", &cpu_tuning::zmm_byte_carry },
    { "split_permutes", &cpu_tuning::split_permutes },
    { "dt_words", &cpu_tuning::dt_words },
    { "dt_prefetch_words", &cpu_tuning::dt_prefetch_words },
    { "dt_prefetch_dwords", &cpu_tuning::dt_prefetch_dwords },
    { "dt_prefetch_packed", &cpu_tuning::dt_prefetch_packed },
    { "ymm_packed_dt_dwords", &cpu_tuning::ymm_packed_dt_dwords },
    { "ymm_packed_dt_words", &cpu_tuning::ymm_packed_dt_words },
    { "dst_rows_per_thread", &cpu_tuning::dst_rows_per_thread },
    { "dt_over_padded_dst_pieces", &cpu_tuning::dt_over_padded_dst_pieces },
};
static_assert(sizeof(cpu_tuning)
                      == sizeof(tuning_rules) / sizeof(tuning_rules[0])
                                 * sizeof(bool),
              "every field of cpu_tuning has its name in tuning_rules");
} // namespace

bool apply_cpu_tuning(const char *spec, cpu_tuning &t, std::string &why) {
    const std::pair<const char *, cpu_kind> kinds[] = {
        { "intel", cpu_kind::other },   { "other", cpu_kind::other },
        { "amd", cpu_kind::amd },       { "zen4", cpu_kind::amd_zen4 },
        { "zen5", cpu_kind::amd_zen5 },
    };
    const std::vector<std::string> items = comma_items(spec ? spec : "");
    cpu_tuning out = t;
    for (size_t i = 0; i < items.size(); ++i) {
        const std::string &v = items[i];
        const auto kind = std::find_if(
                std::begin(kinds), std::end(kinds),
                [&](const auto &k) { return i == 0 && v == k.first; });
        if (kind != std::end(kinds)) {
            out = tuning_of(kind->second);
            continue;
        }
        const size_t eq = v.find('=');
        const std::string name = v.substr(0, eq);
        const std::string val =
                eq == std::string::npos ? "1" : v.substr(eq + 1);
        const auto rule = std::find_if(
                std::begin(tuning_rules), std::end(tuning_rules),
                [&](const tuning_rule &r) { return name == r.name; });
        if (rule == std::end(tuning_rules) || (val != "0" && val != "1")) {
            why = "'" + v + "' is neither a CPU kind (first item: intel, amd, "
                  + "zen4, zen5) nor a rule set to 0 or 1";
            return false;
        }
        out.*(rule->field) = val == "1";
    }
    t = out;
    return true;
}

const cpu_tuning &this_cpu_tuning() {
    static const cpu_tuning t = [] {
        cpu_tuning own = tuning_of(this_cpu_kind());
        const char *env = std::getenv("SELGRAPH_CPU_TUNING");
        std::string why;
        if (env && *env && !apply_cpu_tuning(env, own, why))
            std::fprintf(stderr,
                         "selgraph: SELGRAPH_CPU_TUNING=%s ignored: %s\n", env,
                         why.c_str());
        return own;
    }();
    return t;
}

kernel_isa transpose_kernel_isa(kernel_isa isa, int operand, int elem_bytes,
                                int64_t rows, int64_t lines, bool may_stream,
                                int64_t ld, bool nt, const cpu_tuning &t) {
    if (isa == kernel_isa::avx512_core && operand != op_dst && elem_bytes > 1
        && rows * elem_bytes >= 32 && rows * elem_bytes < 64)
        return kernel_isa::avx2;
    const bool nt_dst = operand == op_dst && nt;
    const bool carried = nt_dst && ld % 64 != 0;
    // AVX-512's byte kernel carries only along 64 columns or more (`rows`,
    // the chain's granule) and in its whole register tiles of 64 lines.
    if (carried && elem_bytes == 1 && isa == kernel_isa::avx512_core
        && !(t.zmm_byte_carry && cpu_has_avx512_vbmi() && rows >= 64
             && lines >= 64))
        return kernel_isa::avx2;
    if (t.ymm_dst_nt_transposes_four_lines && nt_dst && ld % 256 == 0
        && isa == kernel_isa::avx512_core)
        return kernel_isa::avx2;
    // An AVX-512 register tile reads 16 lines of the source.
    const bool ymm_input =
            (elem_bytes == 2
             && (t.ymm_input_transposes_words
                 || (t.ymm_input_transposes_crowded_words
                     && rows_crowd_l1_sets(ld, 16))))
            || (elem_bytes == 4 && t.ymm_input_transposes_dwords);
    if (ymm_input && isa == kernel_isa::avx512_core && operand != op_dst
        && !may_stream && lines >= 8)
        return kernel_isa::avx2;
    return isa;
}

bool rows_lie_apart(const select_folded &f) {
    const int nd = f.ndims;
    if (nd < 2 || f.has_transposed()
        || f.dims[nd - 2] <= static_cast<int64_t>(row_prefetch_rows)
        || f.inner() * f.elem_size > 4096)
        return false;
    for (int i = 0; i < op_dst; ++i) {
        const int64_t row = f.inner() * operand_bytes(i, f.elem_size);
        const int64_t s = f.strides[i][nd - 2];
        if (f.mode[i] == inner_mode::vector && s != 0 && s != row)
            return true;
    }
    return false;
}

int transpose_packed_lines(kernel_isa isa, int elem_bytes, bool nt,
                           const cpu_tuning &t) {
    if (isa != kernel_isa::avx512_core)
        return 8;
    if (t.split_permutes)
        return elem_bytes == 1 ? 5 : 6;
    if (elem_bytes <= 2)
        return 7;
    if (nt)
        return elem_bytes == 4 ? 5 : 2;
    return 8;
}

transpose_key tuned_transpose_key(kernel_isa isa, int elem_bytes, bool nt) {
    return { isa, static_cast<uint8_t>(elem_bytes),
             static_cast<uint8_t>(nt ? 1 : 0),
             static_cast<uint8_t>(transpose_packed_lines(isa, elem_bytes, nt,
                                                         this_cpu_tuning())) };
}

void transpose_block(const transpose_kernel &k, const transpose_call_args &a,
                     int64_t w) {
    const auto src_ld = a.src_ld;
    const auto cols = static_cast<int64_t>(a.cols);
    // Whole register tiles, and dst pieces that keep 64-byte alignment.
    const int64_t g = std::max<int64_t>(16, 64 / w);
    const int64_t chunk = std::max<int64_t>(
            g, transpose_chunk_bytes / std::max<int64_t>(src_ld, 1) / g * g);
    if (k.key().isa != kernel_isa::avx2 || a.pf_next_bytes || a.carry
        || src_ld != static_cast<int64_t>(a.rows) * w || cols <= 2 * chunk) {
        k.fn()(&a);
        return;
    }
    const char *const src = static_cast<const char *>(a.src);
    char *const dst = static_cast<char *>(a.dst);
    for (int64_t c = 0, n = 0; c < cols; c += n) {
        transpose_call_args u = a;
        // The last call takes the columns short of a chunk too.
        n = cols - c < 2 * chunk ? cols - c : chunk;
        const int64_t next = std::min(chunk, cols - c - n);
        u.src = src + c * src_ld;
        u.dst = dst + c * w;
        u.cols = static_cast<uint64_t>(n);
        u.dst_gaps = 0; // the gaps of a chunk's rows are the next columns
        u.pf_cols = a.pf_cols > static_cast<uint64_t>(c + n)
                            ? a.pf_cols - static_cast<uint64_t>(c)
                            : static_cast<uint64_t>(n);
        u.pf_next = next > 0 ? src + (c + n) * src_ld : nullptr;
        u.pf_next_bytes = next > 0 ? static_cast<uint64_t>(next * src_ld) : 0;
        // One fence, after the last call, where the caller wants one.
        u.fence = a.fence && c + n == cols ? 1 : 0;
        k.fn()(&u);
    }
}

namespace {

// kernel_key::row_len (and row_pitch) for `f` into `key`, where a kernel
// generated for one row length takes it: the rows of a fold with cond and
// dst vectors along them (or cond transposed: read from the tile's
// scratch), two rows or more, n elements shorter than a vector
// (row_len_supported). A fold with transposed inputs (not dst) takes the
// short rows below where its tiles' rows do not lie back to back (padded
// rows, row groups): channels-last pixels of 3 channels padded to 4 over
// an NCHW input ran the generic kernel a row at a time at 0.07-0.23 of the
// dense Select (docs/performance.md, "Short rows in tiles"). Where every
// operand that moves along the rows lies at one pitch P > n (in elements;
// cond in bytes) of at most a vector (AVX2: dividing its lanes), the
// padded short rows' stream (row_pitch); else one row at a time (short
// rows). The stream won wherever both ran (docs/performance.md, "Short
// rows at any strides").
// Channels-last pixels of 3 channels padded to 4 ran at 0.03-0.2 of the
// dense Select a row at a time in the row loop (docs/performance.md,
// "Padded short rows").
// In tiles (`tr`: each transposed input's kernel) the stream too, where
// every transposed input's kernel writes its scratch rows at that pitch
// as packed blocks (transpose_packs_gaps; no pieces): the scratch then
// lies at the pitch of the operands beside it.
void set_row_len(const select_folded &f, const transpose_kernel *const *tr,
                 kernel_key &key) {
    const int nd = f.ndims;
    // A transposed input reaches the kernel as a vector along the row,
    // read from its tile's scratch.
    const bool cond_along = f.mode[op_cond] == inner_mode::vector
                            || f.mode[op_cond] == inner_mode::transposed;
    // `key` for rows of n elements: the padded short rows' stream at
    // `pitch` where the kernel takes it (0: none), else short rows where
    // it takes them.
    const auto take_rows = [&key](int64_t n, int64_t pitch) {
        kernel_key k = key;
        k.row_len = static_cast<uint8_t>(n);
        k.row_pitch =
                static_cast<uint8_t>(pitch > 0 && pitch < 256 ? pitch : 0);
        if (k.row_pitch && row_len_supported(k)) {
            key = k;
            return;
        }
        k.row_pitch = 0;
        if (row_len_supported(k))
            key = k;
    };
    // Pieces a pitch apart beside transposed inputs: each row's pieces are
    // one call's rows, pitch elements apart in every operand that moves
    // along them (a transposed input's scratch too; tiled_runner::
    // run_rows).
    if (f.gapped_pieces()) {
        if (cond_along && f.piece < 64)
            take_rows(f.piece, f.piece_pitch);
        return;
    }
    if (nd < 2 || !cond_along || f.mode[op_dst] != inner_mode::vector
        || f.dims[nd - 2] < 2 || f.inner() >= 64)
        return;
    const int64_t n = f.inner();
    int64_t pitch = 0;
    // Tiles: every operand's rows back to back (a transposed input's in
    // its scratch, n elements apart), one row for all, or 0-D.
    bool flat_tiles = !f.group;
    for (int i = 0; i < n_operands; ++i) {
        const int64_t s = f.strides[i][nd - 2];
        const int64_t w = operand_bytes(i, f.elem_size);
        if (f.mode[i] == inner_mode::transposed)
            continue;
        flat_tiles =
                flat_tiles
                && (s == 0 || (f.mode[i] == inner_mode::vector && s == n * w));
        if (f.mode[i] == inner_mode::scalar && s == 0)
            continue; // a 0-D (or per-call) scalar source
        if (pitch < 0)
            continue;
        if (f.mode[i] != inner_mode::vector || s <= 0 || s % w != 0
            || (pitch > 0 && s / w != pitch))
            pitch = -1;
        else
            pitch = s / w;
    }
    if (f.has_transposed()) {
        // Flat tiles run each strip as one long row (tiled_runner::wide);
        // otherwise the stream where the scratch can take the pitch, else
        // short rows, whatever the strides.
        if (flat_tiles)
            return;
        bool padded = pitch > n && !f.piece;
        for (int i = 0; i < op_dst && padded; ++i)
            padded = f.mode[i] != inner_mode::transposed
                     || (tr[i] && transpose_packs_gaps(tr[i]->key(), n, pitch));
        take_rows(n, padded ? pitch : 0);
        return;
    }
    take_rows(n, pitch > n && pitch <= 64 ? pitch : 0);
}

// The plan of `p` folded as `folded`, without staging.
select_plan plan_fold(const select_nd &p, const select_folded &folded,
                      size_t working_set) {
    select_plan plan;
    plan.folded = folded;
    const kernel_isa isa = max_kernel_isa();
    int step_op = op_src0, step = 0;
    const bool stepped =
            isa != kernel_isa::ref && stepped_fold(plan.folded, step_op, step);
    // The kernels are chosen for the fold as the row kernel reads it:
    // gathered inputs and an expanded cond from their buffers.
    const select_folded f = as_gathered(plan.folded);
    if (isa == kernel_isa::ref || (!fold_jit_able(plan.folded) && !stepped)) {
        plan.ref = coalesce_select(p);
        plan.cache_hit = true;
        return plan;
    }
    auto &cache = kernel_cache::global();
    bool hit = true;
    auto get = [&](const kernel_key &k) {
        bool h = false;
        kernel_ptr kp = cache.get_or_create(
                k, [&] { return create_jit_select_kernel(k); }, &h);
        hit = hit && h;
        return kp;
    };
    if (stepped) {
        // One kernel, regular stores: a staging copy's (its plan is made
        // with no working set), or a Select of a per-row or 0-D cond.
        kernel_key key = stepped_key(isa, f.elem_size, step, 0);
        // select(c, a, b) == select(!c, b, a): the stepped source in the
        // src_0 slot.
        if (step_op == op_src1) {
            plan.swap = true;
            key.invert_cond = 1;
        }
        plan.kernel = get(key);
        plan.working_set = working_set;
        plan.isa = isa;
        plan.cache_hit = hit;
        return plan;
    }

    bool expands = false;
    for (int i = 0; i < op_dst; ++i) {
        plan.expand[i] = input_expands(plan.folded, i);
        expands = expands || plan.expand[i];
    }
    plan.expand_merged = expands && expanded_rows_merge(plan.folded);
    plan.expand_by_permutes =
            expands && isa == kernel_isa::avx512_core && cpu_has_avx512_vbmi();
    kernel_key key {};
    key.isa = isa;
    key.elem_size = static_cast<uint8_t>(f.elem_size);
    key.cond_scalar = f.mode[op_cond] == inner_mode::scalar;
    key.src0_scalar = f.mode[op_src0] == inner_mode::scalar;
    key.src1_scalar = f.mode[op_src1] == inner_mode::scalar;
    // select(c, a, b) == select(!c, b, a): with a vector cond, keep a
    // scalar source in the src_1 slot, halving the variants.
    if (!key.cond_scalar && key.src0_scalar && !key.src1_scalar) {
        plan.swap = true;
        key.invert_cond = 1;
        key.src0_scalar = 0;
        key.src1_scalar = 1;
    }
    key.unroll = 4;
    const bool may_stream = tiles_may_stream(f);
    const cpu_tuning &tuning = this_cpu_tuning();
    for (int i = 0; i < n_operands; ++i)
        if (f.mode[i] == inner_mode::transposed) {
            const int w = operand_bytes(i, f.elem_size);
            plan.transpose[i] = get_transpose_kernel(tuned_transpose_key(
                    transpose_kernel_isa(
                            isa, i, w, f.dims[f.ndims - 2],
                            f.piece ? f.piece : f.dims[f.ndims - 1], may_stream,
                            f.strides[i][f.ndims - 1], false, tuning),
                    w, false));
        }
    // Merged rows reach the row kernel as one row per call.
    if (!plan.expand_merged)
        set_row_len(f, plan.transpose, key);

    plan.kernel = get(key);
    for (int i = 0; i < op_dst; ++i)
        if (gathered_input(plan.folded, i)) {
            // A true cond (the runner's) and its own elements: src_0's slot.
            const int w = operand_bytes(i, f.elem_size);
            plan.gather[i] = get(stepped_key(
                    isa, w, plan.folded.strides[i][f.ndims - 1] / w, 0));
        }
    // dst written from a buffer the row kernel fills: the copy of a true
    // cond into dst's elements.
    if (stepped_operand(plan.folded, op_dst))
        plan.scatter = get(stepped_key(isa, f.elem_size, 0,
                                       plan.folded.strides[op_dst][f.ndims - 1]
                                               / f.elem_size));
    plan.working_set = working_set;
    const nt_policy policy = nt_stores_policy();
    // A transposed dst and nothing else transposed: the kernel that writes
    // it itself, where one exists and the tiles hold whole blocks of 64
    // bytes of each dst column by 16 columns (three-channel rows, L16, ran
    // 0.68x the packed transposes in 16 x 3 blocks). Its nt variant only where
    // dst's columns lie whole cache lines apart, each 64-byte piece one line
    // streamed whole; on other columns ([2047, 2047], 197-element lines)
    // non-temporal stores are the dst transpose's, which carries partial lines
    // from strip to strip (tiled_runner::dst_carry), and the store policy times
    // the plan's kinds (select_plan::store_kinds).
    //
    // Rows of 2 to 15 elements (the channels of channels-last pixels into
    // a channels-first dst, L16) take the packed kernel instead, where the
    // ISA has one for the element size and the row (AVX2: 2-, 4- and
    // 8-byte elements up to 13, 1-byte ones up to 10) and each input's rows lie
    // back to back or are one row for all (a per-channel cond or source; a
    // scalar src_1 only as one element for all): its c interleaved vectors
    // per block of pixels are gathered into the c dst lines by permutes.
    kernel_key kdt = key;
    kdt.dst_transposed = 1;
    kdt.unroll = 0;
    const int nd = f.ndims;
    // Not over dst's pieces: the kernels write whole lines of columns.
    bool dt = nd >= 2 && f.mode[op_dst] == inner_mode::transposed && !f.piece;
    for (int i = 0; i < op_dst; ++i)
        dt = dt && f.mode[i] != inner_mode::transposed;
    // Rows of a few elements first, then tiles of a few rows; 1-byte
    // elements up to 63 columns where the rows are not few (AVX2's dwords
    // through the stack).
    const bool few_rows =
            nd >= 2
            && (f.dims[nd - 2] < 16
                || (f.elem_size == 2 && f.dims[nd - 2] % 4 == 0
                    && f.dims[nd - 2] <= max_packed_word_quads_avx2));
    if (dt
        && (f.dims[nd - 1] < 16
            || (f.elem_size == 1 && !few_rows
                && f.dims[nd - 1] <= max_packed_byte_quads_avx2))) {
        const int64_t cols = f.dims[nd - 1];
        for (int i = 0; i < op_dst; ++i) {
            const int64_t s = f.strides[i][nd - 2];
            dt = dt
                 && (s == 0
                     || (f.mode[i] == inner_mode::vector
                         && s == cols * operand_bytes(i, f.elem_size)));
        }
        kdt.dt_cols = static_cast<uint8_t>(cols);
    } else if (dt && few_rows) {
        // The mirror: tiles of 2 to 15 rows (a few channels of
        // channels-first inputs into a channels-last dst) whose dst holds
        // each column's elements back to back, interleaved by permutes;
        // 2-byte elements up to 28 rows, a multiple of 4, by AVX2's quads
        // (on every CPU: AVX-512's kernel stops at 15, and the scratch
        // path ran 16 and 24 rows at 0.36-0.41 of the dense Select on Zen
        // 4).
        const int64_t rows = f.dims[nd - 2];
        dt = f.strides[op_dst][nd - 1] == rows * f.elem_size;
        kdt.dt_rows = static_cast<uint8_t>(rows);
    }
    // 1-byte elements: AVX-512 has no byte permute across lanes without
    // AVX512_VBMI, so AVX-512 CPUs run AVX2's packed kernel by 16-byte
    // lanes.
    if ((kdt.dt_cols || kdt.dt_rows) && f.elem_size == 1
        && kdt.isa == kernel_isa::avx512_core)
        kdt.isa = kernel_isa::avx2;
    if (kdt.dt_rows > max_packed_dt_cols && kdt.isa == kernel_isa::avx512_core)
        kdt.isa = kernel_isa::avx2;
    // 4-byte elements into 13 dst lines: AVX2's packed kernel where the
    // CPU's tuning says so (cpu_tuning::ymm_packed_dt_dwords). Not 12:
    // AVX-512's gathers whole lanes where the lines are a multiple of 4.
    if (kdt.dt_cols >= 12 && kdt.dt_cols <= max_packed_lanes_avx2
        && kdt.dt_cols % 4 != 0 && f.elem_size == 4
        && kdt.isa == kernel_isa::avx512_core && tuning.ymm_packed_dt_dwords)
        kdt.isa = kernel_isa::avx2;
    // 2-byte elements into 11 to 15 dst lines, or interleaving 8 or 12
    // rows: AVX2's quadwords where the CPU's tuning says so
    // (cpu_tuning::ymm_packed_dt_words).
    if ((kdt.dt_cols >= 11 || kdt.dt_rows == 8 || kdt.dt_rows == 12)
        && f.elem_size == 2 && kdt.isa == kernel_isa::avx512_core
        && tuning.ymm_packed_dt_words)
        kdt.isa = kernel_isa::avx2;
    // The packed kernels' input prefetch, per CPU (cpu_tuning).
    if ((kdt.dt_cols || kdt.dt_rows) && kdt.isa == kernel_isa::avx512_core)
        kdt.dt_prefetch = tuning.dt_prefetch_packed ? 1 : 0;
    // The blocks' 2-byte elements and row prefetch, per CPU (cpu_tuning).
    if (!kdt.dt_cols && !kdt.dt_rows) {
        kdt.dt_prefetch = (f.elem_size == 2 ? tuning.dt_prefetch_words
                                            : tuning.dt_prefetch_dwords)
                                  ? 1
                                  : 0;
        dt = dt && (f.elem_size == 4 || tuning.dt_words);
    }
    dt = dt
         && (kdt.dt_cols || kdt.dt_rows || f.dims[nd - 2] * f.elem_size >= 64)
         && dst_transposed_supported(kdt);
    if (dt)
        plan.kernel_dt = get(kdt);
    // A dst with a step is stored by the stepped kernel, from a buffer in
    // L1: regular stores only.
    if (!plan.scatter
        && (policy == nt_policy::always
            || (policy == nt_policy::auto_
                && working_set >= nt_candidate_bytes()))) {
        // A transposed dst is stored by its transpose from the tile's
        // scratch, where the row kernel's stores stay in cache: the
        // transpose has the nt variant.
        if (f.mode[op_dst] == inner_mode::transposed) {
            // dst's rows do not start cache lines: strips chain through
            // the carry (tiled_runner::dst_carry), and the kernel writing
            // dst itself streams only where each column is whole lines.
            const bool off_lines = f.strides[op_dst][nd - 1] % 64 != 0;
            plan.transpose_dst_nt = get_transpose_kernel(tuned_transpose_key(
                    transpose_kernel_isa(
                            isa, op_dst, f.elem_size, f.dims[nd - 2],
                            f.piece ? f.piece : f.dims[nd - 1], false,
                            f.strides[op_dst][nd - 1], true, tuning),
                    f.elem_size, true));
            if (dt && (kdt.dt_rows || !off_lines)) {
                kdt.nt_stores = 1;
                // AVX2's interleave of 8 rows or more, c streams per input
                // read at once: beyond the caches, its rows prefetched.
                if (kdt.isa == kernel_isa::avx2 && kdt.dt_rows >= 8)
                    kdt.dt_prefetch = 1;
                plan.kernel_dt_nt = get(kdt);
            }
        } else if (!key.row_len && !f.gapped_pieces()) {
            // Rows shorter than a vector store under masks or in parts,
            // and pieces a pitch apart under a line each: no streaming
            // stores.
            kernel_key knt = key;
            knt.nt_stores = 1;
            plan.kernel_nt = get(knt);
            if (policy == nt_policy::auto_ && rows_lie_apart(f)) {
                knt.row_prefetch = 1;
                plan.kernel_nt_pf = get(knt);
            }
        }
        // auto: measured per partition; always: no tuner, nt stores.
        if (policy == nt_policy::auto_)
            plan.tuner = std::make_shared<store_tuner>(plan.store_kinds());
    }
    plan.isa = isa;
    plan.cache_hit = hit;
    return plan;
}

// The plan of `p` as it folds, without staging. A transposed dst's short
// rows merged through padding (step 7's mirror) keep their fold where the
// CPU's tuning says so and the one-pass block kernel takes that fold
// (cpu_tuning::dt_over_padded_dst_pieces).
select_plan plan_unstaged(const select_nd &p, size_t working_set) {
    const select_folded f = fold_select(p);
    if (f.piece && f.piece_pitch > f.piece
        && f.mode[op_dst] == inner_mode::transposed
        && this_cpu_tuning().dt_over_padded_dst_pieces) {
        fold_options o;
        o.padded_dst_pieces = false;
        select_plan rows = plan_fold(p, fold_select(p, o), working_set);
        if (rows.kernel_dt)
            return rows;
    }
    return plan_fold(p, f, working_set);
}

// `p` with the inputs in `mask` read from their staged copies: dense in
// dst's memory order over their own dims (stride 0 kept where broadcast).
select_nd staged_problem(const select_nd &p, unsigned mask) {
    select_nd q = p;
    for (int i = 0; i < op_dst; ++i) {
        if (!((mask >> i) & 1))
            continue;
        const select_nd c = staging_copy(p, i);
        for (int d = 0; d < p.ndims; ++d)
            q.strides[i][d] = p.strides[i][d] == 0 ? 0 : c.strides[op_dst][d];
    }
    return q;
}

// The inputs (bit i: operand i) to stage for a non-empty `p`, 0 for none.
// `beat` negative (`p` does not fold JIT-able as it is): among the inputs
// contiguous (stride 1) along some dim, the set of the fewest bytes (then
// the lowest mask) whose copies, dense in dst's memory order, make every
// operand of the fold a vector, a scalar or transposed. Otherwise (`p`
// folds to a plan that transposes `beat` bytes per element): among small
// inputs, together at most a sixteenth of dst's bytes, the set whose
// copies' fold runs a JIT kernel and transposes the fewest bytes per
// element, fewer than `beat` (then the fewest bytes). A cond [1, H, W, 1]
// whose rows of one element are padded has no stride-1 dim, so the fold
// in dst's order leaves it strided and the inputs' order transposes
// two operands where staging it leaves one: [10, 221, 87, 10] f64 ran
// 1.65x as fast ("A small input staged to transpose fewer bytes").
unsigned staged_inputs(const select_nd &p, int64_t beat) {
    // Inputs whose copy runs a JIT plan: contiguous along a dim larger
    // than 1 (the copy's dst is dense, so its fold transposes the input at
    // most), or with a step along its fastest dim (the copy, in the
    // input's own order, gathers its rows).
    unsigned stageable = 0;
    int64_t bytes[op_dst] = {};
    for (int i = 0; i < op_dst; ++i) {
        int64_t elems = 1;
        // The smallest stride along a dim larger than 1: 1, or an input
        // with a step whose copy (in its own order) the stepped kernel
        // runs (kernel_key::src0_step).
        int64_t least = 0;
        for (int d = 0; d < p.ndims; ++d)
            if (p.strides[i][d] != 0) {
                elems *= p.dims[d];
                if (p.dims[d] > 1 && (!least || p.strides[i][d] < least))
                    least = p.strides[i][d];
            }
        bytes[i] = elems * operand_bytes(i, p.elem_size);
        if (least >= 1 && least <= 255)
            stageable |= 1u << i;
    }
    const int64_t dst_bytes = p.nelems() * p.elem_size;
    unsigned best = 0;
    int64_t best_bytes = 0, best_cost = beat;
    for (unsigned mask = 1; mask < (1u << op_dst); ++mask) {
        if ((mask & stageable) != mask)
            continue;
        int64_t b = 0;
        for (int i = 0; i < op_dst; ++i)
            if ((mask >> i) & 1)
                b += bytes[i];
        if (beat >= 0 ? 16 * b > dst_bytes : best && b >= best_bytes)
            continue;
        const select_folded f = fold_select(staged_problem(p, mask));
        if (!fold_jit_able(f))
            continue;
        if (beat >= 0) {
            const int64_t cost = fold_transposed_bytes(f);
            if (cost < 0 || cost > best_cost
                || (cost == best_cost && (!best || b >= best_bytes)))
                continue;
            best_cost = cost;
        }
        best = mask;
        best_bytes = b;
    }
    return best;
}

// A staging copy's plan (dst = src_0, cond and src_1 0-D) whose fold has
// src_0 transposed and dst contiguous along the row: its tiles can
// transpose src_0 straight into dst (select_plan::copy_by_transpose).
bool copies_by_transpose(const select_plan &plan) {
    const select_folded &f = plan.folded;
    // cond and src_1 0-D: the copy's own shape, checked so that no other
    // Select ever becomes a copy.
    bool zero_d = true;
    for (int d = 0; d < f.ndims; ++d)
        zero_d = zero_d && f.strides[op_cond][d] == 0
                 && f.strides[op_src1][d] == 0;
    return plan.kernel && !plan.swap && f.ndims >= 2 && zero_d
           && f.mode[op_src0] == inner_mode::transposed
           && f.mode[op_dst] != inner_mode::transposed
           && f.strides[op_dst][f.ndims - 1] == f.elem_size;
}

// The plan of `p` with inputs staged where that alone lets a kernel run,
// or where staging small inputs lets the fold transpose fewer bytes
// (staged_inputs).
select_plan plan_staging_inputs(const select_nd &p, size_t working_set) {
    select_plan plan = plan_unstaged(p, working_set);
    // The reference cap or nothing to do: no staging.
    if (max_kernel_isa() == kernel_isa::ref || p.nelems() == 0)
        return plan;
    // A kernel that transposes nothing: no staging.
    const int64_t beat = plan.kernel ? fold_transposed_bytes(plan.folded) : -1;
    if (plan.kernel && beat <= 0)
        return plan;
    const unsigned mask = staged_inputs(p, beat);
    if (!mask)
        return plan;
    // The copies' fold runs a kernel (staged_inputs checked it); were it
    // not to, the plan without staging runs the reference over `p`.
    select_plan staged = plan_unstaged(staged_problem(p, mask), working_set);
    if (!staged.kernel)
        return plan;
    plan = std::move(staged);
    for (int i = 0; i < op_dst; ++i) {
        if (!((mask >> i) & 1))
            continue;
        select_plan::staged_operand s;
        s.op = i;
        s.copy = staging_copy(p, i);
        select_plan copy = plan_unstaged(s.copy, 0);
        copy.copy_by_transpose = copies_by_transpose(copy);
        s.plan = std::make_shared<const select_plan>(std::move(copy));
        s.offset = plan.staged_bytes;
        plan.staged_bytes +=
                (s.copy.nelems() * s.copy.elem_size + 63) / 64 * 64;
        plan.cache_hit = plan.cache_hit && s.plan->cache_hit;
        plan.staged.push_back(std::move(s));
    }
    return plan;
}

} // namespace

select_plan plan_select(const select_nd &p, size_t working_set) {
    select_plan plan = plan_staging_inputs(p, working_set);
    if (plan.kernel || max_kernel_isa() == kernel_isa::ref || p.nelems() == 0
        || has_unit_stride(p, op_dst))
        return plan;
    // dst with a step (no stride-1 dim) that no fold takes as it is: the
    // kernels write a buffer dense in dst's memory order, and a copy plan
    // writes dst from it (select_plan::staged_operand), where both run a
    // kernel. From DRAM 1.8-4.3x as fast as the reference kernel on Zen 4
    // ([4096, 4096] f32, [2048, 2048] bf16); from the L3 a tie at 1 thread
    // and 0.88x at 2 ([1024, 1024] f32; docs/performance.md, "A staged
    // dst").
    select_plan::staged_operand s;
    s.op = op_dst;
    s.copy.ndims = p.ndims;
    s.copy.elem_size = p.elem_size;
    select_nd q = p;
    dense_in_order(p.ndims, p.dims, p.strides[op_dst], q.strides[op_dst]);
    for (int d = 0; d < p.ndims; ++d) {
        s.copy.dims[d] = p.dims[d];
        s.copy.strides[op_src0][d] = q.strides[op_dst][d];
        s.copy.strides[op_dst][d] = p.strides[op_dst][d];
    }
    select_plan staged = plan_staging_inputs(q, working_set);
    select_plan copy = plan_unstaged(s.copy, 0);
    if (!staged.kernel || !copy.kernel)
        return plan;
    plan = std::move(staged);
    s.plan = std::make_shared<const select_plan>(std::move(copy));
    s.offset = plan.staged_bytes;
    plan.staged_bytes += (q.nelems() * q.elem_size + 63) / 64 * 64;
    plan.cache_hit = plan.cache_hit && s.plan->cache_hit;
    plan.staged.push_back(std::move(s));
    return plan;
}

} // namespace impl
} // namespace selgraph
