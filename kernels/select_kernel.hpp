// The kernel ABI: every JIT kernel is `void kernel(const select_call_args *)`
// and processes `rows` rows of `n` elements; row r of operand i starts at
// ptr_i + r * stride_i bytes. Along a row, each operand is a vector or a
// scalar, as fixed by the kernel's key. One POD struct with 8-byte fields,
// read by the generated code through offsetof (as oneDNN's jit_*_call_s).
#ifndef SELGRAPH_KERNELS_SELECT_KERNEL_HPP
#define SELGRAPH_KERNELS_SELECT_KERNEL_HPP

#include <cstddef>
#include <cstdint>
#include <string>

#include "select_problem.hpp"

namespace selgraph {
namespace impl {

struct select_call_args {
    const void *cond;
    const void *src0;
    const void *src1;
    void *dst;
    uint64_t n;          ///< elements per row, >= 1
    uint64_t rows;       ///< rows, >= 1
    int64_t cond_stride; ///< bytes between rows
    int64_t src0_stride;
    int64_t src1_stride;
    int64_t dst_stride;
    /// Non-temporal kernels: sfence after the last store. 0: the caller
    /// fences once after a run of calls (the tiled runner and the folded
    /// one, per thread), where a fence per call would drain the
    /// write-combining buffers between strips of one tile or rows of
    /// consecutive outer indices.
    uint64_t fence = 1;
    /// AVX2: nonzero finishes a row's elements after its last whole vector
    /// one at a time, not by one more vector overlapping the one before.
    /// The tiled runner sets it: its rows are read from a scratch (or
    /// written to one) that a transposing kernel has just written (or is
    /// about to read) in narrower pieces, and a wide load over the bytes
    /// of several stores still in flight waits for them to retire; rows
    /// of 18 bf16 read from the scratch took the row kernel 1.35x as long
    /// with the overlapping vector (docs/performance.md). A row shorter
    /// than a vector has no whole vector: it goes by two overlapping
    /// 16-, 8- or 4-byte parts either way (rows of 6 f32 or 26 s8 in the
    /// tiles ran 1.5-3x faster than one element at a time).
    uint64_t elem_tail = 0;
    /// kernel_key::row_prefetch: while on row r, each vector input's lines
    /// of row r + pf_rows are prefetched, for the call's rows up to rows -
    /// pf_rows (none beyond the call's last row). Other kernels ignore it.
    uint64_t pf_rows = 0;
};

/// The most columns (channels) a packed transposed-dst kernel takes:
/// AVX-512 (also at most one vector's elements), AVX2.
constexpr int max_packed_dt_cols = 15;
constexpr int max_packed_dt_cols_avx2 = 8;
/// AVX2 by 16-byte lanes: 1- and 2-byte elements into a channels-first
/// dst, 4- and 8-byte ones past max_packed_dt_cols_avx2, and the
/// interleaving direction (a block's vectors, its mask, zero and a
/// broadcast in ymm).
constexpr int max_packed_lanes_avx2 = 13;
/// ... but 1-byte elements into a channels-first dst only up to 10: from
/// 12 channels each 16-byte lane holds all of them, and the kernel (a
/// vpshufb per channel and lane pair, the pairs reloaded from the stack)
/// ran slower than the scratch path (0.51-0.64 against 0.55-0.70 of the
/// dense Select on the 2-vCPU Intel Xeon guest; docs/performance.md).
/// It holds on AMD too, whose Zen cores issue vpshufb on two ports where
/// Intel's issue it on one: on a Zen 3 guest 12 and 13 channels ran
/// 0.19-0.33 of dense through the lanes and 0.44-0.49 through the scratch.
constexpr int max_packed_lanes_avx2_e1_cols = 10;
/// AVX2's interleave of 2-byte elements moves a pixel's quads of 4
/// channels through transposes of 8 rows at a time (no registers held
/// across the rows' groups): every multiple of 4 from 8 up to 28 (from 32
/// rows of 2-byte elements dst's lines are 64 bytes, the block kernel's).
constexpr int max_packed_word_quads_avx2 = 28;
/// AVX2's packed kernel of 1-byte elements into a channels-first dst past
/// max_packed_lanes_avx2_e1_cols moves a pixel's quads of 4 channels as
/// dwords through the stack, up to 63 channels (from 64 the lines are
/// whole, the transposes' tiles).
constexpr int max_packed_byte_quads_avx2 = 63;

enum class kernel_isa : uint8_t { ref = 0, avx2 = 1, avx512_core = 2 };
const char *kernel_isa2str(kernel_isa isa);

/// Identifies a generated kernel: a few bytes, compared and hashed whole.
/// Built by the dispatcher from a folded problem after the src_0/src_1 swap
/// (select(c, a, b) == select(!c, b, a)) that leaves src_1 the only possible
/// scalar source when cond is a vector.
struct kernel_key {
    kernel_isa isa;
    uint8_t elem_size;   ///< 1, 2, 4 or 8 bytes
    uint8_t cond_scalar; ///< cond constant along the row
    uint8_t invert_cond; ///< take src_0 where cond is zero
    uint8_t src0_scalar;
    uint8_t src1_scalar;
    uint8_t nt_stores; ///< non-temporal stores for the aligned body
    uint8_t unroll;    ///< vectors per main-loop iteration
    /// dst is contiguous across the rows rather than along them (a
    /// transposed dst): element (r, c) of dst at dst + c * dst_stride + r *
    /// elem_size, so dst_stride is the bytes between columns. Written by
    /// register transposes (kernels/jit_select_dt.cpp): AVX-512 and AVX2
    /// with 4- and 2-byte elements, cond and src_0 vectors
    /// (dst_transposed_supported); any rows and n. The non-temporal variant
    /// needs dst and dst_stride multiples of 64 bytes. unroll is not used.
    uint8_t dst_transposed = 0;
    /// With dst_transposed: 0, the kernel above, in blocks of 16 columns
    /// by 64 bytes of dst's lines (2-byte elements: 32 x 32); c in
    /// [2, max_packed_dt_cols], rows of exactly c elements whose inputs'
    /// rows lie back to back (stride c times the element bytes) or are
    /// one row for all (stride 0; src_1 scalar: stride 0 only), the
    /// channels of channels-last pixels written into c dst lines
    /// (kernels/jit_select_dt_packed.cpp): AVX-512, 2-, 4- and 8-byte
    /// elements, c at most one vector's elements; AVX2, 4- and 8-byte
    /// elements, c at most max_packed_dt_cols_avx2, and 1- and 2-byte
    /// ones, c at most max_packed_lanes_avx2 (the dispatcher runs AVX2's
    /// for 1-byte elements on AVX-512 CPUs). 4-byte elements of 4, 8 or
    /// 12 channels move as whole 16-byte lanes on both ISAs, in both
    /// directions (dt_rows below too).
    uint8_t dt_cols = 0;
    /// With dst_transposed, the mirror: c in [2, max_packed_dt_cols] rows
    /// (a few channels of channels-first inputs) whose dst holds each
    /// column's c elements back to back (dst_stride c times the element
    /// bytes: a channels-last dst), interleaved by permutes
    /// (kernels/jit_select_dt_packed.cpp): AVX-512 2-, 4- and 8-byte
    /// elements; AVX2 1-, 2-, 4- and 8-byte ones, c at most
    /// max_packed_lanes_avx2; cond and both sources
    /// vectors or one element per row, any row strides. The non-temporal
    /// variant needs a dst that starts a cache line.
    uint8_t dt_rows = 0;
    /// With dst_transposed and neither dt_cols nor dt_rows: each row of a
    /// block prefetches its inputs' lines a fixed distance ahead into L2
    /// (`_pf` in the name; the dispatcher's choice per CPU). With dt_cols
    /// or dt_rows on AVX-512: each block prefetches the input lines of the
    /// block 8 on (the dispatcher's choice per CPU); with dt_rows on AVX2:
    /// each iteration each row's lines 8 iterations on, into L2 (the
    /// dispatcher's choice for the non-temporal variant of 8 rows or
    /// more).
    uint8_t dt_prefetch = 0;
    /// Not dst_transposed, with nt_stores: the vectors of a row also
    /// prefetch (into L1) each vector input's matching line
    /// select_call_args::pf_rows rows on, about once per 64 bytes of it
    /// (AVX2's row ends once per vector, its rows shorter than a vector not
    /// at all; a row copied from one source under a per-row cond, that
    /// source's) (`_pf` in the name). For rows that lie apart, which the
    /// hardware prefetchers followed poorly from DRAM (padded rows;
    /// docs/performance.md); the store policy times it against the plain
    /// non-temporal kernel (store_kind::nt_prefetch).
    uint8_t row_prefetch = 0;
    /// Rows of n elements whose rows lie row_pitch elements apart in every
    /// operand that moves along them (cond's row_pitch bytes), n <
    /// row_pitch: short padded rows shared by all, such as channels-last
    /// pixels of 3 channels padded to 4. The kernel walks a call's rows as
    /// one stream of (rows - 1) * row_pitch + n elements, the inputs' gaps
    /// read with the rows, and stores each vector under the mask of the
    /// lanes that hold row elements (`_g<pitch>_n<row_len>` in the name).
    /// The call's row strides must be those pitches (a scalar src_1: 0);
    /// AVX-512 reads none of them. AVX-512 stores under an opmask, a
    /// pitch of at most a vector's lanes (where it does not divide them,
    /// each vector's mask from a table: the row lanes rotate over
    /// pitch / gcd(pitch, lanes) vectors); AVX2 stores each row in the
    /// pieces of 16, 8, 4, 2 and 1 bytes that its row_len elements make,
    /// a pitch dividing its lanes. Regular stores, cond a vector, src_0 a
    /// vector; 0: every row on its own.
    uint8_t row_pitch = 0;
    /// n, the row length the kernel is generated for; the call's n must
    /// be it. With row_pitch, in [1, row_pitch): its lanes make the store
    /// masks (and AVX2's pieces) constants of the code. Without, in [1,
    /// 32 / elem_size): short rows at any strides (`_n<row_len>` in the
    /// name), each row in one part, or two overlapping ones, of 16, 8 or
    /// 4 bytes that hold two elements or more, else element by element,
    /// with the row strides in registers: rows shorter than 32 bytes that
    /// no dim merges and no pitch streams, such as a slice of the last dim
    /// or pixels of 3 channels in 6. Regular stores, cond a vector, src_0
    /// a vector. 0: any n.
    uint8_t row_len = 0;
    /// src_0's elements lie src0_step elements apart along the row (a
    /// slice with a step, x[..., ::k]); cond and src_1 are scalar along
    /// it: per row, dst's dense row is src_0's row gathered, or src_1's
    /// element (kernels/jit_select_stepped.cpp, `_ax<k>` in the name in
    /// place of `_av`). The staging copy of an input with no stride-1 dim
    /// runs it (src/dispatch.cpp). Regular stores, unroll 1, nothing else
    /// of the key set. 0: src_0 contiguous (or scalar).
    uint8_t src0_step = 0;
    /// The mirror: dst's elements lie dst_step elements apart along the
    /// row, src_0 a dense vector, cond and src_1 scalar along it (`_dx<k>`
    /// after the unroll): per row, src_0's row scattered into dst's
    /// elements, or src_1's element into each; no other byte of dst is
    /// written. A dst with a step is written so from a buffer the row
    /// kernel fills (select_plan::scatter). Not with src0_step.
    uint8_t dst_step = 0;

    bool operator==(const kernel_key &o) const {
        return isa == o.isa && elem_size == o.elem_size
               && cond_scalar == o.cond_scalar && invert_cond == o.invert_cond
               && src0_scalar == o.src0_scalar && src1_scalar == o.src1_scalar
               && nt_stores == o.nt_stores && unroll == o.unroll
               && dst_transposed == o.dst_transposed && dt_cols == o.dt_cols
               && dt_rows == o.dt_rows && dt_prefetch == o.dt_prefetch
               && row_prefetch == o.row_prefetch && row_pitch == o.row_pitch
               && row_len == o.row_len && src0_step == o.src0_step
               && dst_step == o.dst_step;
    }
    bool operator!=(const kernel_key &o) const { return !(*this == o); }
};

struct kernel_key_hash {
    size_t operator()(const kernel_key &k) const {
        uint64_t v = 0;
        v = v * 4 + static_cast<uint64_t>(k.isa);
        v = v * 16 + k.elem_size;
        v = v * 2 + k.cond_scalar;
        v = v * 2 + k.invert_cond;
        v = v * 2 + k.src0_scalar;
        v = v * 2 + k.src1_scalar;
        v = v * 2 + k.nt_stores;
        v = v * 16 + k.unroll;
        v = v * 2 + k.dst_transposed;
        v = v * 16 + k.dt_cols;
        v = v * 16 + k.dt_rows;
        v = v * 2 + k.dt_prefetch;
        v = v * 2 + k.row_prefetch;
        v = v * 128 + k.row_pitch;
        v = v * 128 + k.row_len;
        v = v * 256 + k.src0_step;
        v = v * 256 + k.dst_step;
        return static_cast<size_t>(v * 0x9E3779B97F4A7C15ull);
    }
};

/// "<isa>_e<bytes>_c<v|s>[n]_a<v|s|x<step>>_b<v|s>_<u<unroll>|dt[<cols>]>[_pf][_g<pitch>][_n<len>][_dx<step>][_nt]",
/// for example avx512_core_e4_cv_av_bs_u4_nt: cond vector, src_0 vector,
/// src_1 scalar; `dt` in place of the unroll: dst transposed (dt3: the
/// packed kernel for rows of 3 elements; dti3: for tiles of 3 rows,
/// interleaved); _pf: dt_prefetch, or row_prefetch after an unroll; _g4:
/// row_pitch 4; _n3: row_len 3; _ax2: src0_step 2; _dx2: dst_step 2.
std::string kernel_name(const kernel_key &k);

using select_kernel_fn = void (*)(const select_call_args *);

/// A generated kernel: immutable once built, shared by the cache and by the
/// compiled partitions that use it.
class select_kernel {
public:
    using key_type = kernel_key;
    using fn_type = select_kernel_fn;
    using args_type = select_call_args;
    static std::string name_of(const kernel_key &k) { return kernel_name(k); }

    virtual ~select_kernel() = default;
    virtual select_kernel_fn fn() const = 0;
    virtual const std::string &name() const = 0;
    virtual const kernel_key &key() const = 0;
};

} // namespace impl
} // namespace selgraph

#endif
