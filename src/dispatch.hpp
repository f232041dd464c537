// The one dispatch point: folded problem + ISA cap -> kernel (or the
// reference kernel), through the kernel cache.
#ifndef SELGRAPH_SRC_DISPATCH_HPP
#define SELGRAPH_SRC_DISPATCH_HPP

#include <memory>
#include <string>
#include <vector>

#include "cpu_isa.hpp"
#include "kernel_cache.hpp"
#include "kernels/jit_transpose.hpp"
#include "kernels/select_problem.hpp"
#include "store_policy.hpp"

namespace selgraph {
namespace impl {

/// The dispatcher's choices that measured differently on different CPUs
/// (docs/performance.md has each measurement; cpu_kind, cpu_isa.hpp, names
/// the CPUs). Every other rule holds on every CPU measured. The benchmarks
/// time a rule on a CPU it was not measured on through SELGRAPH_CPU_TUNING
/// (apply_cpu_tuning, below).
struct cpu_tuning {
    /// transpose_kernel_isa: an AVX-512 plan's inputs of 2 and of 4 bytes
    /// whose tiles never stream are transposed by the AVX2 kernels.
    bool ymm_input_transposes_words = false;
    bool ymm_input_transposes_dwords = false;
    /// transpose_kernel_isa: an AVX-512 plan's inputs of 2 bytes whose
    /// tiles never stream and whose lines crowd one L1 set over a register
    /// tile (rows_crowd_l1_sets over 16 lines) are transposed by the AVX2
    /// kernels.
    bool ymm_input_transposes_crowded_words = false;
    /// transpose_kernel_isa: an AVX-512 plan's non-temporal dst transpose
    /// whose dst lines lie a multiple of 256 bytes apart (where AVX2's
    /// kernel streams four lines of each) is AVX2's, every element size.
    bool ymm_dst_nt_transposes_four_lines = false;
    /// transpose_kernel_isa: an AVX-512 plan's non-temporal transpose of a
    /// 1-byte dst whose lines do not start cache lines stays AVX-512's,
    /// whose carry joins each row's partial lines by AVX512_VBMI's byte
    /// permutes, where the CPU has them; otherwise it is AVX2's.
    bool zmm_byte_carry = false;
    /// transpose_packed_lines: 512-bit permutes take two passes, and
    /// AVX-512's packed blocks stop at fewer lines.
    bool split_permutes = false;
    /// A transposed dst of 2-byte elements is written in one pass by the
    /// block kernel (kernel_key::dst_transposed; AVX-512's or AVX2's), where
    /// its other conditions hold (plan_unstaged); 4-byte ones are on every
    /// CPU.
    bool dt_words = false;
    /// The block kernel's rows prefetch their inputs ahead
    /// (kernel_key::dt_prefetch), for 2-byte and for 4-byte elements.
    bool dt_prefetch_words = false;
    bool dt_prefetch_dwords = false;
    /// AVX-512's packed kernels (kernel_key::dt_cols, dt_rows) prefetch
    /// their inputs' blocks ahead (kernel_key::dt_prefetch).
    bool dt_prefetch_packed = false;
    /// An AVX-512 plan's packed kernel of 4-byte elements into 13 dst
    /// lines (kernel_key::dt_cols; channels-last pixels into a
    /// channels-first dst) is AVX2's (12 lines, a multiple of 4, take
    /// AVX-512's, which moves whole 16-byte lanes there).
    bool ymm_packed_dt_dwords = false;
    /// An AVX-512 plan's packed kernel of 2-byte elements into 11 to 15
    /// dst lines (kernel_key::dt_cols), or interleaving 8 or 12 rows
    /// (dt_rows), is AVX2's, which moves each pixel's quads of 4 channels
    /// as quadwords.
    bool ymm_packed_dt_words = false;
    /// plan_tiles: a transposed dst of fewer matrices than threads is
    /// split by its rows even where panels would balance the threads.
    bool dst_rows_per_thread = true;
    /// plan_unstaged: a transposed dst's short rows that step 7's mirror
    /// would merge through the inputs' padding keep their fold where the
    /// one-pass block kernel (kernel_key::dst_transposed) takes it.
    bool dt_over_padded_dst_pieces = false;
};

/// The tuning of a CPU of kind `k`: an Intel Xeon's (the one first
/// measured) but where a CPU of that kind measured otherwise.
cpu_tuning tuning_of(cpu_kind k);

/// Applies `spec`, a comma-separated list, to `t`: a first item naming a
/// CPU kind replaces `t` by that kind's tuning (`intel` or `other`, `amd`,
/// `zen4`, `zen5`); every other item sets one rule, by its field's name in
/// cpu_tuning: `name` or `name=1` takes it, `name=0` drops it. So a rule
/// measured on one CPU can be timed on another in the same binary
/// (SELGRAPH_CPU_TUNING=ymm_input_transposes_dwords), or one CPU's whole
/// table against this one's (SELGRAPH_CPU_TUNING=zen4). Returns false, `t`
/// unchanged and `why` naming the item, where an item is none of these.
bool apply_cpu_tuning(const char *spec, cpu_tuning &t, std::string &why);

/// tuning_of(this_cpu_kind()), with SELGRAPH_CPU_TUNING applied where it is
/// set (read once, at the first plan). A value apply_cpu_tuning rejects is
/// reported on stderr once and ignored: the CPU's own tuning applies.
const cpu_tuning &this_cpu_tuning();

/// What one execute ran: the row kernel (null: the reference kernel) and
/// whether dst was stored non-temporally (by the row kernel's nt variant,
/// by a transposed dst's nt transpose, or by kernel_dt_nt).
struct executed {
    const select_kernel *kernel = nullptr;
    bool nt = false;
};

struct select_plan {
    select_folded folded;
    kernel_isa isa = kernel_isa::ref;
    bool swap = false; ///< the kernel's src_0 is the user's src_1
    kernel_ptr kernel; ///< null: the reference kernel runs `ref`
    /// Where kernel is null: the problem in memory order (dst's or an
    /// input's), coalesced (coalesce_select), which the reference kernel
    /// walks, so that a layout no kernel covers (a slice with a step,
    /// channels-last) reads its operands in address order rather than in
    /// logical order.
    select_nd ref;
    kernel_ptr kernel_nt; ///< non-temporal variant, for large outputs
    /// kernel_nt that also prefetches its inputs' lines row_prefetch_rows
    /// rows ahead (kernel_key::row_prefetch), where rows_lie_apart(folded)
    /// and the store policy's tuner times it: store_kind::nt_prefetch.
    kernel_ptr kernel_nt_pf;
    /// Chooses among the plan's store_kinds() (the regular and the
    /// non-temporal variant of what stores dst, and for a transposed dst
    /// that kernel_dt writes, dst's transposes from the scratch) (shared
    /// by the copies of a compiled partition); set with kernel_nt or
    /// transpose_dst_nt, under the auto policy.
    std::shared_ptr<store_tuner> tuner;
    /// Per operand (folded order), the transposing kernel of an operand
    /// whose mode is transposed; null otherwise.
    const transpose_kernel *transpose[n_operands] = {};
    /// Per input, in a fold without tiles, where the input has a step
    /// along the row (inner_mode::strided, 2 to 255 elements: a slice
    /// x[..., ::k]): the stepped kernel (kernel_key::src0_step) that gathers
    /// the rows of each of the row kernel's calls into a buffer of the
    /// thread, at most gather_chunk_bytes, which the row kernel then reads
    /// as a vector with rows back to back (src/parallel_execute.cpp); null
    /// otherwise. The kernels' keys are chosen as for that buffer.
    kernel_ptr gather[op_dst];
    /// Where the fold (without tiles) leaves dst with a step along the
    /// row: the stepped kernel (kernel_key::dst_step) that writes each
    /// call's rows into dst's elements from a buffer of the thread the row
    /// kernel writes them to; null otherwise. The plan then has regular
    /// stores only.
    kernel_ptr scatter;
    /// Per input: constant along rows of at most expanded_row_bytes
    /// of dst, one element per row of the dim the row kernel walks (a
    /// per-pixel mask or value over channels-last data, folded to rows of
    /// C elements): the row kernel reads it as a vector from a buffer of
    /// the thread into which each call's elements are first repeated
    /// along their rows, back to back (expand_rows; input_expands); in
    /// tiles, each strip's cond into the tile's scratch (a source only
    /// without tiles). Without it, a row kernel of a cond scalar along
    /// the row branched once per row, and one of a source scalar along
    /// the row broadcast its element a row at a time.
    bool expand[op_dst] = {};
    /// With an expanded input: every other operand's rows lie back to
    /// back or it is one element for all (expanded_rows_merge), so that
    /// each call's rows run as one row of the row kernel.
    bool expand_merged = false;
    /// With an expanded input, an AVX-512 plan on a CPU with AVX512_VBMI:
    /// the elements are repeated by byte permutes, 64 bytes of rows at a
    /// time, in place of AVX2's byte shuffles within lanes (expand_rows).
    bool expand_by_permutes = false;
    /// A transposed dst is stored by its transpose (the row kernel writes
    /// the tile's scratch, in cache): that transpose's non-temporal
    /// variant, for large outputs, in place of kernel_nt.
    const transpose_kernel *transpose_dst_nt = nullptr;
    /// A transposed dst and no transposed input, where a kernel exists
    /// (kernel_key::dst_transposed), the tile dim holds 64 bytes of dst's
    /// lines or more and the row 16 elements or more: the kernel that selects
    /// and transposes in registers and writes dst itself, in one pass, with its
    /// non-temporal variant where the plan has one and dst's columns lie a
    /// multiple of 64 bytes apart. The tiled runner calls it in place of the
    /// row kernel and dst's transpose (which the plan keeps, for nt stores
    /// where kernel_dt_nt is null, and for store_kind::regular_transpose and
    /// nt_transpose).
    kernel_ptr kernel_dt;
    kernel_ptr kernel_dt_nt;

    /// Operands staged: where no fold of the problem runs a JIT kernel
    /// (inputs in three or more dim orders), the fewest input bytes whose
    /// copies into dense buffers in dst's memory order let one run
    /// (plan_select). Each execute first copies them, each by a plan of its
    /// own (a Select of a true 0-D cond, the input as src_0 and a 0-D
    /// src_1), into a staging buffer of the calling thread; `folded` and
    /// the kernels above read the copies. Where that is not enough and dst
    /// has a step (no stride-1 dim) beside an operand transposed against
    /// it, dst is staged too, last: the kernels above write a buffer dense
    /// in dst's memory order, and the copy plan then writes dst from it
    /// (the buffer as src_0, dst as it is: the stepped kernel scatters).
    struct staged_operand {
        int op = op_cond; ///< op_cond, op_src0, op_src1 or op_dst
        /// The copy's problem: into the buffer (an input), or from the
        /// buffer (src_0) into dst (op_dst).
        select_nd copy;
        std::shared_ptr<const select_plan> plan; ///< the copy's plan
        int64_t offset = 0; ///< bytes into the staging buffer
    };
    std::vector<staged_operand> staged;
    int64_t staged_bytes = 0; ///< the staging buffer's size
    /// A staging copy's plan whose fold transposes src_0 alone into a dst
    /// contiguous along the row (plan_select): run only with a true 0-D
    /// cond, so that dst is src_0, its tiles transpose src_0 straight into
    /// dst, with no scratch and no row kernel (kernel_str names the
    /// transposing kernel alone). Staging L17's cond this way, L17 took
    /// 0.85-0.94x the time (medians, both ISAs; docs/performance.md).
    bool copy_by_transpose = false;

    /// The plan has a non-temporal way of storing dst.
    bool has_nt() const { return kernel_nt || transpose_dst_nt; }
    /// The store kinds the plan can run (store_kind_bit): regular; nt
    /// where has_nt(); where kernel_dt writes a transposed dst,
    /// regular_transpose, and nt_transpose where kernel_dt_nt streams it
    /// (dst's transposes from the scratch, in place of kernel_dt);
    /// nt_prefetch where kernel_nt_pf exists. The tuner chooses among
    /// them.
    unsigned store_kinds() const {
        unsigned k = store_kind_bit(store_kind::regular);
        if (has_nt())
            k |= store_kind_bit(store_kind::nt);
        if (kernel_dt)
            k |= store_kind_bit(store_kind::regular_transpose);
        if (kernel_dt_nt && transpose_dst_nt)
            k |= store_kind_bit(store_kind::nt_transpose);
        if (kernel_nt_pf)
            k |= store_kind_bit(store_kind::nt_prefetch);
        return k;
    }
    size_t working_set = 0; ///< bytes an execute touches
    bool cache_hit = false; ///< every kernel came from the cache

    const char *impl_str() const {
        return isa == kernel_isa::avx512_core ? "jit:avx512_core"
               : isa == kernel_isa::avx2      ? "jit:avx2"
                                              : "ref";
    }
    /// The kernels of the plan: the row kernel and its nt variant joined
    /// by '|', then each transposing or gathering kernel ("+c:", "+a:",
    /// "+b:", "+d:"),
    /// dst's nt variant after a '|', the kernels writing a transposed dst
    /// ("+dt:", joined by '|'), then each staged operand's copy plan
    /// ("+stage_c[...]", "+stage_a[...]", "+stage_b[...]", "+stage_d[...]")
    /// (verbose compile
    /// lines).
    std::string kernel_str() const;
    /// The kernels an execute ran, in the same form with one variant each
    /// (verbose exec lines); a kernel writing a transposed dst stands
    /// alone, as no transpose ran beside it.
    std::string kernel_str(const executed &e) const;
};

/// Folds `p`, picks the ISA and the kernel variant. `working_set` is the
/// bytes the op touches (select_touched_bytes): from nt_candidate_bytes()
/// on, the plan also carries the non-temporal kernel and a store_tuner
/// (store_policy.hpp) over its store_kinds(). Where no fold of `p` runs a
/// JIT kernel, inputs are staged (select_plan::staged) where that lets one
/// run.
select_plan plan_select(const select_nd &p, size_t working_set);

/// Bytes one execute of `p` touches: every distinct element of cond, of the
/// sources and of dst; where cond is constant along the rows (per-row or 0-D
/// cond) a row reads one source only, and the larger source is counted.
size_t select_touched_bytes(const select_nd &p);

/// The team execute_plan uses for `plan` with at most `nthreads` threads:
/// one thread per 64 KiB moved, at least one.
int plan_threads(const select_plan &plan, int nthreads);

/// The tiles of a folded problem with transposed operands, run on
/// `nthreads` threads: rows along its tile dim by columns along its inner
/// dim, each run in strips of `strip` rows (the scratch holds one strip of
/// each transposed operand). `stream`: every transposed input's tile is one
/// contiguous block, and each tile prefetches the next one's in address
/// order (docs/design.md, Threads). `cols_first`: the tiles of a column
/// block in row order, then the next column block's (a transposed dst
/// whose rows, the problem's columns, each thread then owns).
struct tile_shape {
    int64_t rows, cols;
    int64_t strip = 0; ///< rows per strip; 0: the whole tile
    bool stream = false;
    bool cols_first = false;
};
/// `packed_dt`: a transposed dst written by the packed kernel
/// (kernel_key::dt_cols), which needs no scratch. `dst_rows_per_thread`:
/// a transposed dst of fewer matrices than threads is split by its rows
/// (each thread one column block) even where panels would balance the
/// threads; otherwise by panels where they balance, by rows only where
/// they do not. The first ran faster on an Intel Xeon, the second on AMD
/// Zen 3, Zen 4 and Zen 5 (docs/performance.md): execute passes
/// cpu_tuning::dst_rows_per_thread.
tile_shape plan_tiles(const select_folded &f, int nthreads,
                      bool packed_dt = false, bool dst_rows_per_thread = true);

/// The scratch row stride, in bytes, for tiles of `rows` rows of `bytes`
/// bytes each: `bytes` (rows back to back) unless more than 8 of the rows
/// would share one of the 64 sets of an L1D (64-byte lines, so address bits
/// 6-11), or `whole_lines` asks for rows that start cache lines; then the
/// next multiple of 64 bytes that spreads them (pitches of 4 KiB
/// multiples, or within a few bytes of one, put every row of a tile in one
/// or two sets).
int64_t scratch_pitch(int64_t bytes, int64_t rows, bool whole_lines = false);

/// Whether the scratch rows of `bytes` bytes into which the transposing
/// kernel `k` writes a transposed input start cache lines (scratch_pitch's
/// whole_lines) rather than lying back to back: AVX-512 kernels of 4-byte
/// elements, rows of at least 512 bytes. Such a kernel stores a whole
/// vector into each row per register tile, and rows back to back off the
/// cache lines ([197, 197] f32: 788 bytes) split every store in two; with
/// the rows padded the row kernel runs them one by one rather than as one
/// long row. On the 2-vCPU Intel Xeon, [M, S, S] f32 with the last two dims
/// swapped ran 1.14-1.40x as fast from L2 for S of 130, 197, 250, 300 and
/// 1000 (1.02-1.19x from DRAM; S = 500 0.94-0.97x), L9 f32 1.25x; shorter
/// rows (S = 49, 100) ran 0.68-1.01x, 2-byte elements 0.74-1.01x, and
/// AVX2's kernels (32-byte stores) 0.87-1.33x (docs/performance.md,
/// "Scratch rows in whole lines for AVX-512's 4-byte transposes").
constexpr bool input_scratch_whole_lines(const transpose_key &k,
                                         int64_t bytes) {
    return k.isa == kernel_isa::avx512_core && k.elem_size == 4 && bytes >= 512;
}

/// Whether more than 8 of the first min(rows, 128) rows `pitch` bytes apart
/// share one of the 64 sets of an L1D: scratch_pitch pads such strides, and
/// a transposed dst whose rows crowd so is written in bands of 128 rows
/// (src/parallel_execute.cpp).
bool rows_crowd_l1_sets(int64_t pitch, int64_t rows);

/// The dst rows (a tile's columns) that one call of a transposed dst's
/// transposing kernel writes, where fewer than the tile's `rows`; 0: all of
/// them in one call. Rows `pitch` bytes apart whose lines crowd a few L1
/// sets (rows_crowd_l1_sets): bands of 128. And at most as many rows as span
/// transposed_dst_band_bytes of dst, in multiples of 64 (whole register
/// tiles of every transposing kernel, so that the carry chains hold): a
/// call stores a line of each of its rows per column block, and where its
/// rows spanned more pages than the TLB holds ([4001, 4096] s8 with dst
/// transposed: 4096 rows, each in a page of its own), every line stored
/// cost a page walk (docs/performance.md, "A transposed dst in bands of
/// pages").
int64_t transposed_dst_band(int64_t pitch, int64_t rows);
/// 1 MiB: 256 pages of 4 KiB, a fraction of any x86 core's second-level
/// TLB (1536 to 3072 entries).
constexpr int64_t transposed_dst_band_bytes = 1 << 20;

/// The rows row_prefetch_rows ahead whose lines a kernel_nt_pf prefetches.
/// On Zen 5, rows of 394 bytes 400 apart ran 1.07x as fast 4 rows ahead,
/// 1.16x 8 rows ahead and 1.13x 16 rows ahead (docs/performance.md).
constexpr uint64_t row_prefetch_rows = 8;

/// Whether a folded problem's row kernel runs rows that lie apart, so that
/// a plan under the auto store policy also carries kernel_nt_pf: no
/// transposed operand, more than row_prefetch_rows rows along the dim a
/// kernel call walks (fewer never reach a row ahead), dst's rows at most 4
/// KiB (longer rows are streams of their own to the hardware prefetchers),
/// and some vector input's rows neither back to back nor one for all
/// (padded rows, slices of wider tensors).
bool rows_lie_apart(const select_folded &f);

/// Whether plan_tiles streams the tiles of `f` at some thread count: its
/// transposed inputs' tiles are contiguous blocks that fit the streaming
/// budget (a transposed dst never streams).
bool tiles_may_stream(const select_folded &f);

/// Whether the transposed dst of `f` goes through a staging copy of each
/// tile's dst block where a tile spans all its rows: its lines lie back to
/// back at a pitch that is not a multiple of 64 bytes (plan_tiles then
/// prefers tiles of all rows).
bool dst_block_staged(const select_folded &f);

/// The ISA of the transposing kernel of `operand` (elements of `elem_bytes`
/// bytes, `rows` along the tile dim) in a plan of `isa`; `lines`: the
/// most lines (columns) one call moves: the operand's lines (the tile's
/// columns, f.dims[nd - 1]), or where the fold has pieces, the piece's
/// (select_folded::piece); `ld`: the bytes between them (an input's in the
/// source, dst's in dst); `nt`: the kernel is dst's non-temporal
/// transpose. `isa`, except in six cases.
///
/// On every CPU, an AVX-512 plan's transposed input of 2 to 8 bytes whose
/// tile dim holds fewer rows than an AVX-512 register tile (64 bytes of
/// each line) but a whole AVX2 one (32 bytes) is transposed by the AVX2
/// kernel, whose register tiles then move no empty rows (AVX-512's are
/// masked, a quarter to a half of each empty): on Zen 4 a tile dim of 4
/// f64 rows ran 0.2-0.3x the time, 24 bf16 rows 0.9x and 9 f32 rows
/// 0.85-0.9x; 1-byte elements (43 and 56 rows) ran slower with AVX2's
/// and keep AVX-512's (docs/performance.md, "Tile dims shorter than a
/// register tile"). Unmeasured on Intel, where the AVX2 tile also takes
/// fewer shuffles per element.
///
/// Where the tuning says so (`t.ymm_input_transposes_words` and `_dwords`:
/// both on Zen 4; 4 bytes on Zen 5), the inputs of 2 and 4 bytes of an
/// AVX-512 plan whose tiles never stream are transposed by the AVX2
/// kernels: on Zen 4 they ran such layouts 1.05-1.29x (4 bytes) and
/// 0.97-1.22x (2 bytes) as fast as with the AVX-512 ones, from the L3 and
/// from DRAM, at 1 and 2 threads (docs/performance.md, layouts); on Zen 5
/// 4-byte ones ran L6, L11 and L22 1.15-1.40x as fast from the L3, from
/// DRAM and at 2 threads, L14 1.1x, L4 and L9 0.92-1.03x; 2-byte ones
/// 0.8-1.1x (L4 bf16 0.82x). Streamed tiles keep the plan's ISA:
/// their strips are one AVX-512 register tile tall, and the AVX2 kernels
/// ran them slower. So do calls of fewer than 8 `lines` (pieces of 3 to 7
/// columns: an input of [N, M, 5] with every dim reversed): AVX2's
/// register tile is 8 lines, and it moves the elements of a call of fewer
/// one at a time, where AVX-512's masks its partial tiles; on Zen 5 such
/// f32 inputs ran 1.55-1.75x as fast with AVX-512's (docs/performance.md,
/// "Pieces of a few columns").
///
/// Where the tuning says so (`t.ymm_input_transposes_crowded_words`: Zen
/// 5), so are an AVX-512 plan's 2-byte inputs whose tiles never stream and
/// whose lines (`ld` apart) crowd one L1 set over an AVX-512 register tile
/// (rows_crowd_l1_sets over its 16 lines: lines a multiple of 4 KiB apart
/// or within a few bytes of one; a fold in pieces of fewer than 16 columns,
/// whose calls move fewer lines, is judged the same, unmeasured); AVX2's
/// register tile reads 8 lines. On
/// Zen 5, 1 thread, L6, L11 and L22 bf16 (lines 4096, 4094 and 114688
/// bytes apart) ran 1.07-1.12x as fast from the L3 and L6 and L22
/// 1.16-1.23x from DRAM at 1 and 2 threads (L11 0.99x there), where L4
/// bf16 (lines 128 bytes apart) ran 0.89x as fast with AVX2's
/// (docs/performance.md, "2-byte inputs whose lines crowd one L1 set").
///
/// dst's non-temporal transpose of 1-byte elements whose dst rows do not
/// start cache lines (`ld` not a multiple of 64 bytes: consecutive strips
/// chain through the carry, transpose_call_args::carry) is AVX2's, unless
/// the tuning says so (`t.zmm_byte_carry`: Intel, Zen 4 and 5), the CPU has
/// AVX512_VBMI and the tile spans 64 `rows` and 64 `lines` or more: AVX2's byte
/// kernel carries on every CPU, AVX-512's only with VBMI's byte permutes and
/// only in its register tiles of 64 lines, along chains of 64 columns or more,
/// and without the carry every dst line is read before it is written. On an
/// Intel Xeon, layout case L23 ([4001, 4096] s8, dst rows 4001 bytes apart)
/// took 0.56x the time at 1 thread with AVX2's transposes than with AVX-512's
/// uncarried ones (the whole AVX2 plan against the whole AVX-512 one), 1.09x at
/// 16 threads from DRAM, where the AVX2 row kernel alone accounts for 1.15x. On
/// Zen 5 AVX2's carry took 0.25 cycles a byte, three times the time of the same
/// non-temporal stores alone; AVX-512's carried ones ran L23 1.24-1.26x
/// as fast at 1 and 2 threads and 1.20x from DRAM at 1, other s8 dsts
/// 1.0-1.38x (docs/performance.md, "AVX-512's byte carry"); dsts of 10
/// and 26 lines, or of 4 columns, where it carries nothing, ran 0.86-0.91x
/// as fast with it. On Zen 4 L23 ran 1.05-1.08x as fast with it (4200 against
/// 4518 µs, 1 thread). On the 16-vCPU Intel Xeon, against AVX2's carry,
/// it ran L23 in 0.79-0.80x the time at 1 thread (alternating runs).
///
/// Where the tuning says so (`t.ymm_dst_nt_transposes_four_lines`: Zen 4 and
/// 5), dst's non-temporal transpose, of every element size, whose lines lie a
/// multiple of 256 bytes apart (`ld`: a transposed [2048, 2048] matrix,
/// [256, 256] scores written with their last two dims swapped) is AVX2's
/// too. AVX-512's streams 64 bytes of each dst line per column block;
/// AVX2's streams 256 (four lines of each, where dst_ld is a multiple of
/// 256 bytes). On Zen 5, dst's nt transpose from the scratch ([2048, 2048]
/// bf16, 1 thread) took 551-570 µs with AVX2's against 873-874 with
/// AVX-512's, which took 525-560 where the lines lie 4032 or 4160 bytes
/// apart; layout case L20 ran 1.21-1.43x as fast, from the L3 and from
/// DRAM, at 1 and 2 threads (docs/performance.md, "dst lines a multiple of
/// 4 KiB apart"). Over [B, 1, H, 256] with dst's last two dims swapped
/// (dst lines 2H or 4H bytes apart, from DRAM), the whole Select ran
/// 1.30-1.43x as fast with AVX2's where the lines lie a multiple of 512
/// bytes apart, 1.08-1.30x at odd multiples of 256, and 0.94-1.15x at
/// the other strides measured, where AVX2's streams one line of each row
/// too. In s8 and f64 the same shapes ran 1.24-1.70x and 1.14-1.17x as
/// fast at 1 thread where the lines lie a multiple of 512 bytes apart, and
/// 1.19-1.44x and 1.05-1.07x at 2 (docs/performance.md, "dst lines a
/// multiple of 256 bytes apart"). On Zen 4 L24 ran 1.07-1.13x as fast at 1
/// thread, from the L3 and from DRAM, and L20 bf16 from DRAM 1.10x
/// (docs/performance.md, "Zen 5's rules on Zen 4").
///
/// Elsewhere the AVX-512 kernels are the ones measured.
kernel_isa transpose_kernel_isa(kernel_isa isa, int operand, int elem_bytes,
                                int64_t rows, int64_t lines, bool may_stream,
                                int64_t ld, bool nt, const cpu_tuning &t);

/// transpose_key::packed_lines for a transposing kernel of `isa` (elements
/// of `elem_bytes` bytes, non-temporal stores where `nt`): the most lines
/// its packed blocks ran faster than its register tiles, per CPU
/// (docs/performance.md, packed transposes). AVX2: 8 (7 columns, the
/// register tile's limit). AVX-512 where `t.split_permutes` (Zen 4, whose
/// 512-bit permutes take two passes): 6 (5 of 1-byte elements; 7 and 8
/// lines ran 0.42-0.94x the register tiles there). AVX-512 elsewhere (an Intel
/// Xeon, where a permute is one pass): 7 for 1- and 2-byte elements (8 columns
/// ran 0.84-0.99x), 8 for 4 and 8 bytes; the non-temporal kernels, which
/// store dst from the packed blocks a vector per dst row, 5 for 4-byte
/// and 2 for 8-byte elements (the register tiles' staged lines ran ahead
/// from 6 and 3 lines on).
int transpose_packed_lines(kernel_isa isa, int elem_bytes, bool nt,
                           const cpu_tuning &t);

/// The key of the transposing kernel plan_select uses on this CPU for
/// elements of `elem_bytes` bytes on `isa`, non-temporal where `nt`.
transpose_key tuned_transpose_key(kernel_isa isa, int elem_bytes, bool nt);

/// The most bytes of one input that one call of the row kernel reads from
/// its gather buffer (select_plan::gather, on the runner's stack), and of
/// dst that it writes to its scatter buffer (select_plan::scatter): calls
/// over more are split, by columns or by rows. The stepped kernel writes
/// them, and the row kernel reads them back, from L1. On the Zen 4 guest,
/// layout case L29 (1 thread) ran 1.2-1.5x as fast with 4 KiB as with 16
/// or 64 KiB, and 1 to 2 KiB as 4 (docs/performance.md); unmeasured on
/// Intel and on other AMD cores.
constexpr int64_t gather_chunk_bytes = 4096;

/// select_plan::expand: rows of at most this many dst bytes take an
/// expanded input. Time expanded over the branch per row, a random cond /
/// one true for every row ([16, C, 56, 56] channels-last, 1 thread): on
/// the Zen 5 guest 0.09-0.25 / 0.26-0.66 up to 32 bytes, 0.33-0.53 /
/// 0.98-1.51 from 48 to 60; on the 16-vCPU Intel Xeon 0.13-0.49 /
/// 0.23-1.44 up to 32 bytes (1.44: 16 s8), 0.64-0.93 / 1.44-1.88 from 48
/// to 60. Longer rows keep the branch, which reads only the source it
/// takes (docs/performance.md, "A per-row cond over short rows").
constexpr int64_t expanded_row_bytes = 32;

/// The fold `f` has input i change from row to row of the walked dim (in
/// tiles, the tile dim) and stay constant along rows of at most
/// expanded_row_bytes of dst, and dst is not transposed: cond
/// always, a source without tiles and in rows of 2 elements or more, not
/// of 16 bytes (select_plan::expand; plans of a JIT kernel only).
bool input_expands(const select_folded &f, int i);
/// Under input_expands: the rows of every operand not expanded lie back
/// to back along the walked dim, or the operand is one element for all
/// (select_plan::expand_merged).
bool expanded_rows_merge(const select_folded &f);
/// `rows` rows of elements of `w` bytes, `from_stride` bytes apart, each
/// repeated `n` times into `to`, back to back (rows * n * w bytes);
/// `by_permutes` (select_plan::expand_by_permutes): AVX512_VBMI's byte
/// permutes where the rows lie back to back (else AVX2's byte shuffles
/// within lanes; rows apart one at a time).
void expand_rows(const void *from, int64_t from_stride, void *to, int64_t n,
                 int64_t rows, int64_t w, bool by_permutes);

/// Source bytes per call of transpose_block (below).
constexpr int64_t transpose_chunk_bytes = 16 * 1024;

/// Runs `k` over the call `a` of elements of `w` bytes. On an AVX2 kernel,
/// a source that is one contiguous block in memory (lines back to back:
/// src_ld == rows * w) and spans more than two chunks of
/// transpose_chunk_bytes runs as calls of about a chunk's columns each (a
/// multiple of 16 and of 64 / w), each prefetching the next chunk in address
/// order (transpose_call_args::pf_next) besides its columns' lines ahead
/// (pf_cols, as far as `a` allowed). On the Zen 3 guest a channels-last
/// image (layout case L4's [3136, 64]) was transposed 1.2-1.4x as fast so
/// from DRAM; from the L3, f32 images as fast and bf16 ones 0.7-0.85x, a tie
/// through L4 (docs/performance.md). The AVX-512 kernels keep one call: a
/// call with pf_next runs register tiles, and their wide tiles ran L4's
/// images 1.18-1.39x as fast as those on an Intel Xeon (chunks there are
/// unmeasured). Other calls run as they are. The same elements are written
/// either way.
void transpose_block(const transpose_kernel &k, const transpose_call_args &a,
                     int64_t w);

/// Store kinds an execute may be forced to (tests, benchmark diagnostics):
/// each store_kind. Where the plan lacks the kind, nt_transpose and
/// nt_prefetch run nt, and regular_transpose regular.
enum class store_override {
    none,
    regular,
    nt,
    nt_transpose,
    regular_transpose,
    nt_prefetch
};

/// Runs a plan: the JIT kernel over threads, or the reference kernel.
/// nthreads <= 0: the OpenMP default. `stores` forces a store kind (nt only
/// where the plan has_nt()); by default the policy decides. Returns what
/// ran.
executed execute_plan(const select_plan &plan, const select_nd &p,
                      const void *cond, const void *src0, const void *src1,
                      void *dst, int nthreads = 0,
                      store_override stores = store_override::none);

} // namespace impl
} // namespace selgraph

#endif
