// The transpose kernels (kernels/jit_transpose.hpp), per JIT ISA: bit for
// bit against ref_transpose for every element size, rows and columns from 1
// past two register tiles, loose and tight leading dimensions (overlapping
// src lines and a huge src_ld included), random bits; the bytes between the
// dst rows must survive. Guard pages: src and dst each end right before (or
// start right after) a PROT_NONE page. The tiled path's way of calling them
// on contiguous blocks (si::transpose_block) is held to the same.
#include <thread>

#include <xbyak/xbyak.h>

#include "kernel_test_utils.hpp"
#include "kernels/jit_transpose.hpp"
#include "src/dispatch.hpp"

namespace selgraph_test {
namespace {

using kernel_transpose = isa_test;

const int elem_sizes[] = { 1, 2, 4, 8 };

/// Every element size with the regular and the non-temporal kernel.
std::vector<std::pair<int, const si::transpose_kernel *>>
kernels(si::kernel_isa isa) {
    std::vector<std::pair<int, const si::transpose_kernel *>> v;
    for (int w : elem_sizes)
        for (uint8_t nt : { 0, 1 })
            v.emplace_back(w,
                           si::get_transpose_kernel({ isa, uint8_t(w), nt }));
    return v;
}

/// Rows of one register tile and columns of the widest one, as documented
/// in jit_transpose.hpp: the regular kernels' wide tiles span vlen / w
/// columns (w = 1 on AVX-512, 2 and 4), the others 16 (AVX-512) or 8.
int tile_rows(si::kernel_isa isa, int w) {
    return isa_vlen(isa) / w;
}
int tile_cols(si::kernel_isa isa, int w) {
    const bool avx2 = isa == si::kernel_isa::avx2;
    if (w == 2 || w == 4 || (w == 1 && !avx2))
        return isa_vlen(isa) / w;
    return avx2 ? 8 : 16;
}

/// Every value of 1 .. 2 * tile + 3 when `all`, else a sample around the
/// multiples of the tile.
std::vector<uint64_t> extents(int tile, bool all) {
    std::vector<uint64_t> v;
    const int hi = 2 * tile + 3;
    for (int i = 1; i <= hi; ++i)
        if (all || i <= 3 || i % tile <= 1 || i % tile == tile - 1 || i == hi)
            v.push_back(static_cast<uint64_t>(i));
    return v;
}

/// The source bytes a call may touch: its columns, or pf_cols of them
/// where the kernel may prefetch beyond the tile.
size_t src_bytes(const si::transpose_call_args &a, int w) {
    const uint64_t cols = std::max(a.cols, a.pf_cols);
    return static_cast<size_t>((cols - 1) * a.src_ld + a.rows * w);
}
/// The dst bytes a call may touch: its rows, or with dst_gaps every row's
/// dst_ld bytes.
size_t dst_bytes(const si::transpose_call_args &a, int w) {
    if (a.dst_gaps)
        return static_cast<size_t>(a.rows * a.dst_ld);
    return static_cast<size_t>((a.rows - 1) * a.dst_ld + a.cols * w);
}

/// The packed tests' kernels: every element size, regular and
/// non-temporal, packed lines 0 (none), 5 to 8 (the dispatcher's picks on
/// the CPUs measured, and the largest); on an AVX-512 CPU with
/// AVX512_VBMI also the 1-byte ones generated without it
/// (si::scoped_no_vbmi: the byte passes), owned here.
struct packed_kernels {
    std::vector<std::shared_ptr<const si::transpose_kernel>> no_vbmi;
    std::vector<std::pair<int, const si::transpose_kernel *>> all;

    explicit packed_kernels(si::kernel_isa isa) {
        const uint8_t limits[] = { 0, 5, 6, 7, 8 };
        for (uint8_t most : limits)
            for (int w : elem_sizes)
                for (uint8_t nt : { 0, 1 })
                    all.emplace_back(w, si::get_transpose_kernel(
                                                { isa, uint8_t(w), nt, most }));
        if (isa != si::kernel_isa::avx512_core || !si::cpu_has_avx512_vbmi())
            return;
        const si::scoped_no_vbmi hide;
        for (uint8_t most : limits)
            for (uint8_t nt : { 0, 1 }) {
                no_vbmi.push_back(
                        si::create_jit_transpose_kernel({ isa, 1, nt, most }));
                all.emplace_back(1, no_vbmi.back().get());
            }
    }
    /// " (no VBMI)" for those generated without it.
    std::string vbmi_str(const si::transpose_kernel *k) const {
        for (const auto &p : no_vbmi)
            if (p.get() == k)
                return " (no VBMI)";
        return "";
    }
};

std::string case_str(const si::transpose_kernel &k,
                     const si::transpose_call_args &a) {
    std::ostringstream os;
    os << k.name() << " rows " << a.rows << " cols " << a.cols << " src_ld "
       << a.src_ld << " dst_ld " << a.dst_ld;
    if (a.pf_cols > a.cols)
        os << " pf_cols " << a.pf_cols;
    if (a.src_cached)
        os << " src_cached";
    return os.str();
}

/// Byte equality, naming the first differing byte.
::testing::AssertionResult same_bytes(const uint8_t *got, const uint8_t *want,
                                      size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (got[i] != want[i])
            return ::testing::AssertionFailure()
                   << "byte " << i << " of " << n << ": got "
                   << static_cast<int>(got[i]) << ", expected "
                   << static_cast<int>(want[i]);
    return ::testing::AssertionSuccess();
}

/// Runs `k` on `a` over src and dst (src_bytes and dst_bytes of them),
/// both filled with random bits; the whole dst buffer, gaps between rows
/// included, must equal the reference run on a copy (with dst_gaps, the
/// rows' elements only).
/// With `block`, through si::transpose_block as the tiled path calls it.
::testing::AssertionResult run_on(const si::transpose_kernel &k, int w,
                                  si::transpose_call_args a, uint8_t *src,
                                  uint8_t *dst, std::mt19937_64 &g,
                                  bool block = false) {
    const size_t db = dst_bytes(a, w);
    fill_bytes(src, src_bytes(a, w), g);
    fill_bytes(dst, db, g);
    std::vector<uint8_t> want(dst, dst + db);
    a.src = src;
    a.dst = want.data();
    si::ref_transpose(a, w);
    a.dst = dst;
    if (block)
        si::transpose_block(k, a, w);
    else
        k.fn()(&a);
    if (!a.dst_gaps)
        return same_bytes(dst, want.data(), db);
    for (uint64_t r = 0; r < a.rows; ++r)
        if (auto res =
                    same_bytes(dst + r * a.dst_ld, want.data() + r * a.dst_ld,
                               static_cast<size_t>(a.cols * w));
            !res)
            return res << " (row " << r << ")";
    return ::testing::AssertionSuccess();
}

/// run_on over heap buffers.
::testing::AssertionResult run_vs_ref(const si::transpose_kernel &k, int w,
                                      const si::transpose_call_args &a,
                                      std::mt19937_64 &g) {
    std::vector<uint8_t> src(src_bytes(a, w)), dst(dst_bytes(a, w));
    return run_on(k, w, a, src.data(), dst.data(), g);
}

/// run_on with src and dst against guard pages: src ending right before
/// one and dst starting right after one, then the other way round.
::testing::AssertionResult run_guarded(const si::transpose_kernel &k, int w,
                                       const si::transpose_call_args &a,
                                       std::mt19937_64 &g, bool block = false) {
    const size_t sb = src_bytes(a, w), db = dst_bytes(a, w);
    guarded_mem ms(sb), md(db);
    if (!ms.ok() || !md.ok())
        return ::testing::AssertionFailure() << "no guarded memory";
    for (int place = 0; place < 2; ++place) {
        uint8_t *s = place ? ms.at_begin() : ms.at_end(sb);
        uint8_t *d = place ? md.at_end(db) : md.at_begin();
        auto r = run_on(k, w, a, s, d, g, block);
        if (!r)
            return r << (place ? " (src at begin, dst at end)"
                               : " (src at end, dst at begin)");
    }
    return ::testing::AssertionSuccess();
}

TEST_P(kernel_transpose, EveryShapeBitExact) {
    auto &g = rng();
    int fails = 0;
    for (const auto &[w, k] : kernels(kisa())) {
        ASSERT_NE(k, nullptr);
        const int tr = tile_rows(kisa(), w), tc = tile_cols(kisa(), w);
        // All rows with sampled columns, then all columns with sampled rows.
        for (int pass = 0; pass < 2; ++pass)
            for (uint64_t r : extents(tr, pass == 0))
                for (uint64_t c : extents(tc, pass == 1))
                    for (int loose = 0; loose < 2; ++loose) {
                        si::transpose_call_args a {};
                        a.rows = r;
                        a.cols = c;
                        a.src_ld = static_cast<int64_t>(r * w)
                                   + (loose ? w * int64_t(1 + g() % 9) : 0);
                        a.dst_ld = static_cast<int64_t>(c * w)
                                   + (loose ? w * int64_t(1 + g() % 9) : 0);
                        KT_EXPECT(fails, run_vs_ref(*k, w, a, g),
                                  case_str(*k, a));
                    }
    }
}

TEST_P(kernel_transpose, OddLeadingDimensions) {
    auto &g = rng();
    int fails = 0;
    for (const auto &[w, k] : kernels(kisa())) {
        ASSERT_NE(k, nullptr);
        const int tr = tile_rows(kisa(), w), tc = tile_cols(kisa(), w);
        const uint64_t rs[] = { 1, uint64_t(tr), uint64_t(2 * tr + 1) };
        const uint64_t cs[] = { 1, uint64_t(tc), uint64_t(tc + 3) };
        for (uint64_t r : rs)
            for (uint64_t c : cs) {
                si::transpose_call_args a {};
                a.rows = r;
                a.cols = c;
                a.dst_ld = static_cast<int64_t>(c * w) + 64 * w;
                // Overlapping src lines (one element apart), lines not
                // aligned to anything, lines far apart over the L1's sets
                // (wide tiles) and a huge stride near a multiple of 4 KiB
                // (register tiles).
                for (int64_t ld :
                     { int64_t(w), int64_t(3 * w), int64_t(r * w + 5 * w),
                       int64_t(12288 + 256 + w), int64_t((1 << 18) + w) }) {
                    a.src_ld = ld;
                    for (uint64_t cached : { 0, 1 }) {
                        a.src_cached = cached;
                        KT_EXPECT(fails, run_vs_ref(*k, w, a, g),
                                  case_str(*k, a));
                    }
                }
            }
    }
}

TEST_P(kernel_transpose, GuardPages) {
    // Lines back to back, a little apart, and (loose = 2) 12 KiB and more
    // apart in a source marked src_cached, which wide tiles read.
    auto &g = rng();
    int fails = 0;
    for (const auto &[w, k] : kernels(kisa())) {
        ASSERT_NE(k, nullptr);
        const int tr = tile_rows(kisa(), w), tc = tile_cols(kisa(), w);
        for (uint64_t r : extents(tr, false))
            for (uint64_t c : extents(tc, false))
                for (int loose = 0; loose < 3; ++loose) {
                    si::transpose_call_args a {};
                    a.rows = r;
                    a.cols = c;
                    a.src_ld = loose == 2 ? int64_t(12288 + 256 + w)
                                          : static_cast<int64_t>(r * w)
                                                    + loose * 3 * w;
                    a.src_cached = loose == 2;
                    a.dst_ld = static_cast<int64_t>(c * w) + loose * 5 * w;
                    KT_EXPECT(fails, run_guarded(*k, w, a, g), case_str(*k, a));
                }
    }
}

TEST_P(kernel_transpose, FewerRowsThanATileAgainstGuards) {
    // Every row count under a register tile's (AVX-512: one row per
    // 16-byte lane up to a lane of rows; AVX2: whole-vector or 16-byte
    // loads that must end within the source's span, then element by
    // element), with lines back to back, one element apart (overlapping),
    // a little apart and 64 bytes apart, columns around the column blocks,
    // src and dst against guard pages, regular and non-temporal kernels.
    auto &g = rng();
    int fails = 0;
    for (const auto &[w, k] : kernels(kisa())) {
        ASSERT_NE(k, nullptr);
        const int tr = tile_rows(kisa(), w);
        for (int r = 1; r < tr; ++r)
            for (uint64_t c : { 1, 7, 8, 9, 16, 17, 40, 67 })
                for (int64_t ld : { int64_t(r) * w, int64_t(w),
                                    int64_t(r + 1) * w, int64_t(r) * w + 64 }) {
                    si::transpose_call_args a {};
                    a.rows = uint64_t(r);
                    a.cols = c;
                    a.src_ld = ld;
                    a.dst_ld = static_cast<int64_t>(c * w) + 3 * w;
                    KT_EXPECT(fails, run_guarded(*k, w, a, g), case_str(*k, a));
                }
    }
}

TEST_P(kernel_transpose, PackedFewLinesBitExactAgainstGuards) {
    // A call of a few lines whose block is contiguous on one side: 2 to 8
    // rows with src lines back to back (src_ld = rows * w), or 2 to 8
    // columns with dst rows back to back (dst_ld = cols * w), run as
    // permuted vector blocks (jit_transpose.hpp), up to the key's
    // packed_lines. Every line count from 1 past the largest, the other
    // extent 1 .. 2 vectors + 3 (whole blocks and the staged rest), the
    // other side tight, loose or 64-byte aligned (the nt kernels' aligned
    // stores), both buffers against guard pages on either side, the
    // regular and the non-temporal kernel, with no packed calls (0), the
    // limits the dispatcher picks on the CPUs measured (5 to 8) and the
    // largest; on an AVX-512 CPU with AVX512_VBMI, the 1-byte kernels
    // also as generated without it (byte passes).
    auto &g = rng();
    int fails = 0;
    const packed_kernels pk(kisa());
    for (const auto &[w, k] : pk.all) {
        ASSERT_NE(k, nullptr);
        const uint64_t v = uint64_t(isa_vlen(kisa()) / w);
        for (int few_rows = 0; few_rows < 2; ++few_rows)
            for (uint64_t n = 1; n <= 10; ++n)
                for (uint64_t m = 1; m <= 2 * v + 3; ++m)
                    for (int other = 0; other < 3; ++other) {
                        si::transpose_call_args a {};
                        a.rows = few_rows ? n : m;
                        a.cols = few_rows ? m : n;
                        // The packed side tight, the other tight, loose or
                        // a multiple of 64 bytes.
                        const int64_t span = static_cast<int64_t>(
                                (few_rows ? a.cols : a.rows) * w);
                        const int64_t o = other == 0   ? span
                                          : other == 1 ? span + 3 * w
                                                       : (span + 63) / 64 * 64;
                        a.src_ld = few_rows ? static_cast<int64_t>(n * w) : o;
                        a.dst_ld = few_rows ? o : static_cast<int64_t>(n * w);
                        KT_EXPECT(fails, run_guarded(*k, w, a, g),
                                  case_str(*k, a) + pk.vbmi_str(k));
                    }
    }
}

TEST_P(kernel_transpose, PaddedRowsWithGapsBitExactAgainstGuards) {
    // transpose_call_args::dst_gaps: the bytes after each dst row (the
    // last row's included) are the caller's scratch, which a packed call
    // of 2 .. 7 columns into rows 4 or 8 elements apart fills whole
    // (transpose_packs_gaps). Every column count up to the pitch, pitches
    // 3, 4, 5 and 8 (3 and 5: no packed gaps), rows 1 .. 2 vectors + 3
    // sampled around the vector, the same packed limits as above, the
    // regular and the non-temporal kernel (and on an AVX-512 CPU with
    // AVX512_VBMI the 1-byte ones generated without it): every element
    // equals the reference's, and nothing before dst or past rows * dst_ld
    // is touched (dst against a guard page at either end, src at the
    // other).
    auto &g = rng();
    int fails = 0, gap_calls = 0;
    const packed_kernels pk(kisa());
    for (const auto &[w, k] : pk.all) {
        ASSERT_NE(k, nullptr);
        const int v = isa_vlen(kisa()) / w;
        for (int64_t pitch : { 3, 4, 5, 8 })
            for (int64_t c = 1; c <= pitch; ++c)
                for (uint64_t r : extents(v, false)) {
                    si::transpose_call_args a {};
                    a.rows = r;
                    a.cols = static_cast<uint64_t>(c);
                    a.src_ld = static_cast<int64_t>(r) * w + 2 * w;
                    a.dst_ld = pitch * w;
                    a.dst_gaps = 1;
                    gap_calls += si::transpose_packs_gaps(k->key(), c, pitch);
                    KT_EXPECT(fails, run_guarded(*k, w, a, g),
                              case_str(*k, a) + " dst_gaps" + pk.vbmi_str(k));
                }
    }
    // Some calls were packed gap calls.
    EXPECT_GT(gap_calls, 0);
}

TEST_P(kernel_transpose, PaddedRowsKeptBitExactAgainstGuards) {
    // The same calls into rows whose gaps are not the caller's (no
    // dst_gaps: a transposed dst of pixels padded from 3 channels to 4, or
    // a few channels of a channels-last tensor's): AVX-512 runs 2 .. P - 1
    // columns into rows 4 or 8 elements apart as packed blocks stored
    // under the mask of the row lanes (transpose_packs_kept_gaps), and 2
    // .. 8 columns of 4- and 8-byte elements into rows at any other pitch
    // a row at a time under the mask of its elements, and AVX2 2 .. 7
    // columns into rows at any pitch a row at a time in pieces
    // (transpose_packs_rows_apart), both through the stack row by row for
    // calls of fewer rows than a vector. Every column count up to the
    // pitch (at most 9), pitches 3, 4, 5, 8, 11, 16 and 67, rows 1 .. 2
    // vectors + 3 sampled around the vector, the packed limits above, the
    // regular and the non-temporal kernel: every element equals the
    // reference's, every gap byte keeps its value, and nothing outside
    // src and dst is touched (guard pages).
    auto &g = rng();
    int fails = 0, kept_calls = 0, apart_calls = 0;
    const packed_kernels pk(kisa());
    for (const auto &[w, k] : pk.all) {
        ASSERT_NE(k, nullptr);
        const int v = isa_vlen(kisa()) / w;
        for (int64_t pitch : { 3, 4, 5, 8, 11, 16, 67 })
            for (int64_t c = 1; c <= std::min<int64_t>(pitch, 9); ++c)
                for (uint64_t r : extents(v, false)) {
                    si::transpose_call_args a {};
                    a.rows = r;
                    a.cols = static_cast<uint64_t>(c);
                    a.src_ld = static_cast<int64_t>(r) * w + 2 * w;
                    a.dst_ld = pitch * w;
                    const bool kept =
                            si::transpose_packs_kept_gaps(k->key(), c, pitch);
                    kept_calls += kept;
                    apart_calls +=
                            !kept && c < pitch
                            && si::transpose_packs_rows_apart(k->key(), c);
                    KT_EXPECT(fails, run_guarded(*k, w, a, g),
                              case_str(*k, a) + pk.vbmi_str(k));
                }
    }
    // Some calls were packed a row at a time, and on AVX-512 some with
    // their gaps kept.
    EXPECT_EQ(kept_calls > 0, kisa() == si::kernel_isa::avx512_core);
    EXPECT_GT(apart_calls, 0);
}

TEST_P(kernel_transpose, PrefetchBeyondTheTileKeepsResultsExact) {
    // pf_cols lets the kernels prefetch lines of the columns after the
    // tile. The source then holds pf_cols columns and ends right before a
    // PROT_NONE page; the tile's result must not change. (A prefetch never
    // faults, so the guard page checks the loads only.)
    auto &g = rng();
    int fails = 0;
    for (const auto &[w, k] : kernels(kisa())) {
        ASSERT_NE(k, nullptr);
        const int tr = tile_rows(kisa(), w), tc = tile_cols(kisa(), w);
        for (uint64_t r : { uint64_t(tr), uint64_t(2 * tr + 1) })
            for (uint64_t c :
                 { uint64_t(tc), uint64_t(2 * tc + 3), uint64_t(5 * tc) })
                for (uint64_t extra : { 0, 1, 16, 17, 40, 48, 49 }) {
                    si::transpose_call_args a {};
                    a.rows = r;
                    a.cols = c;
                    a.pf_cols = c + extra;
                    a.src_ld = static_cast<int64_t>(r * w) + 3 * w;
                    a.dst_ld = static_cast<int64_t>(c * w);
                    const size_t sb = src_bytes(a, w);
                    guarded_mem ms(sb);
                    ASSERT_TRUE(ms.ok());
                    std::vector<uint8_t> dst(dst_bytes(a, w));
                    KT_EXPECT(fails,
                              run_on(*k, w, a, ms.at_end(sb), dst.data(), g),
                              case_str(*k, a));
                }
    }
}

TEST_P(kernel_transpose, PrefetchOfTheNextBlockKeepsResultsExact) {
    // pf_next / pf_next_bytes: a block prefetched in address order over the
    // call's register tiles (the next tile of a streamed operand). The
    // block is the source's own bytes after the tile, which ends right
    // before a PROT_NONE page; sizes from none to more lines than the call
    // has register tiles times 16, and an unaligned start. The tile's
    // result must not change.
    auto &g = rng();
    int fails = 0;
    for (const auto &[w, k] : kernels(kisa())) {
        ASSERT_NE(k, nullptr);
        const int tr = tile_rows(kisa(), w), tc = tile_cols(kisa(), w);
        for (uint64_t r : { uint64_t(1), uint64_t(tr), uint64_t(2 * tr + 1) })
            for (uint64_t c :
                 { uint64_t(1), uint64_t(tc), uint64_t(3 * tc + 5) })
                for (int64_t next : { 0, 1, 64, 1000, 64 * 1024 + 7 }) {
                    si::transpose_call_args a {};
                    a.rows = r;
                    a.cols = c;
                    a.src_ld = static_cast<int64_t>(r * w);
                    a.dst_ld = static_cast<int64_t>(c * w);
                    const size_t tile = src_bytes(a, w);
                    const size_t sb = tile + static_cast<size_t>(next);
                    guarded_mem ms(sb);
                    ASSERT_TRUE(ms.ok());
                    uint8_t *src = ms.at_end(sb);
                    a.pf_next = next ? src + tile + (next % 2) : nullptr;
                    a.pf_next_bytes =
                            static_cast<uint64_t>(next ? next - next % 2 : 0);
                    std::vector<uint8_t> dst(dst_bytes(a, w));
                    KT_EXPECT(fails, run_on(*k, w, a, src, dst.data(), g),
                              case_str(*k, a) + " pf_next_bytes "
                                      + std::to_string(a.pf_next_bytes));
                }
    }
}

TEST_P(kernel_transpose, ContiguousBlocksInChunksAgainstGuards) {
    // si::transpose_block: on AVX2, a source whose lines lie back to back
    // (a channels-last image) runs as calls of about transpose_chunk_bytes
    // of it, each prefetching the next (AVX-512: one call). Rows from 1 to past
    // a register tile, columns around two and three chunks (and fewer, one
    // call), tight and loose dst rows (the gaps must survive), every element
    // size, regular and non-temporal kernels, src and dst against guard pages:
    // the same bytes as the reference.
    auto &g = rng();
    int fails = 0;
    for (const auto &[w, k] : kernels(kisa())) {
        ASSERT_NE(k, nullptr);
        const int tr = tile_rows(kisa(), w);
        for (uint64_t r : { uint64_t(1), uint64_t(3), uint64_t(tr),
                            uint64_t(2 * tr + 1), uint64_t(64) }) {
            const int64_t line = static_cast<int64_t>(r) * w;
            // About two chunks' columns; the cases straddle the point where
            // chunking starts and end off a chunk.
            const auto two =
                    static_cast<uint64_t>(2 * si::transpose_chunk_bytes / line);
            for (uint64_t c : { uint64_t(17), two - 33, two + 1, two + 64,
                                3 * two / 2 + 5, 2 * two + 19 })
                for (int64_t pad : { int64_t(0), int64_t(24) }) {
                    si::transpose_call_args a {};
                    a.rows = r;
                    a.cols = c;
                    a.src_ld = line;
                    a.dst_ld = static_cast<int64_t>(c) * w + pad;
                    a.pf_cols = c;
                    KT_EXPECT(fails, run_guarded(*k, w, a, g, true),
                              case_str(*k, a) + " in chunks");
                }
        }
    }
}

TEST_P(kernel_transpose, NonTemporalStagedBlocksBitExact) {
    // The nt kernels stream whole blocks of sb columns (64 bytes of a dst
    // row, or a register tile where wider) through a staging block where
    // dst and dst_ld are multiples of 64 bytes: rows and columns around the
    // register tile and the block, dst rows with and without a gap, dst
    // starting right after a guard page (aligned: the staged path) and
    // ending right before one (aligned where its span is a multiple of 64,
    // else the regular path), src ending right before one. The AVX-512
    // kernels stream whole wide tiles' rows where the block's lines stay in
    // L1: src lines close together, lines far apart over the L1's sets
    // (12 KiB and a little more apart) of a source in the caches
    // (src_cached, as the scratch is), and lines 8 KiB apart, which fall
    // into one set and take the staging block. AVX2 stages blocks of four
    // lines of each row where dst_ld is a multiple of 256 bytes, then
    // blocks of one: columns past four blocks, and such dst_ld.
    auto &g = rng();
    int fails = 0;
    for (int w : elem_sizes) {
        const auto *k = si::get_transpose_kernel({ kisa(), uint8_t(w), 1 });
        ASSERT_NE(k, nullptr);
        const uint64_t tr = uint64_t(tile_rows(kisa(), w));
        const uint64_t tc = uint64_t(tile_cols(kisa(), w));
        const uint64_t sb = std::max<uint64_t>(tc, 64 / w);
        for (uint64_t r :
             { uint64_t(1), tr - 1, tr, tr + 1, 2 * tr, 3 * tr + 5 })
            for (uint64_t c : { sb - 1, sb, sb + 1, 2 * sb, 2 * sb + tc + 3,
                                3 * sb, 4 * sb, 5 * sb + tc + 3, 8 * sb })
                for (int64_t gap : { 0, 64, 256 })
                    for (int64_t ld :
                         { int64_t(r * w) + 3 * w, int64_t(12288 + 256 + w),
                           int64_t(8192) }) {
                        // Four-line blocks need 4 * sb columns: the
                        // narrower ones once, with dst_ld a multiple of
                        // 256 bytes.
                        if ((gap == 256) != (c >= 4 * sb) && c != 3 * sb)
                            continue;
                        si::transpose_call_args a {};
                        a.rows = r;
                        a.cols = c;
                        a.src_ld = ld;
                        a.src_cached = 1;
                        // gap 256: the row rounded up to 256 bytes, then
                        // 256 more.
                        const int64_t grain = gap == 256 ? 256 : 64;
                        a.dst_ld = static_cast<int64_t>((c * w + grain - 1)
                                                        / grain * grain)
                                   + gap;
                        const size_t sb_bytes = src_bytes(a, w);
                        const size_t db = dst_bytes(a, w);
                        guarded_mem ms(sb_bytes), md(db);
                        ASSERT_TRUE(ms.ok() && md.ok());
                        for (int place = 0; place < 2; ++place) {
                            uint8_t *d = place ? md.at_end(db) : md.at_begin();
                            KT_EXPECT(
                                    fails,
                                    run_on(*k, w, a, ms.at_end(sb_bytes), d, g),
                                    case_str(*k, a)
                                            + (place ? " (dst at end)"
                                                     : " (dst at begin)"));
                        }
                    }
    }
}

TEST_P(kernel_transpose, NonTemporalCarriedLinesBitExact) {
    // A chain of nt calls over consecutive column ranges of the same rows
    // (transpose_call_args::carry): dst rows that do not start cache lines
    // (odd leading dimensions, dst at odd offsets) next to guard pages,
    // rows around the register tile, pieces of whole granules then a last
    // piece of any width. After the chain dst must equal the reference
    // transpose of all columns, gaps included; where the kernel carries
    // (AVX2; AVX-512 for 2 to 8 bytes, and for bytes on a CPU with
    // AVX512_VBMI; the rows of whole register tiles), a call of two column
    // blocks or more with carry_out must leave some bytes of misaligned rows
    // unwritten, and every other kernel none.
    auto &g = rng();
    int fails = 0;
    const uint64_t gc = si::transpose_carry_cols;
    // The last: a first call of a granule and a half, whose carry_out is
    // not honoured (it writes every element), so that the second call
    // starts without carry_in.
    const std::vector<std::vector<uint64_t>> chains = {
        { gc },
        { gc, gc },
        { 2 * gc, 3 * gc, gc + 5 },
        { gc, 2 * gc + 17 },
        { gc + gc / 2, gc },
    };
    for (int w : elem_sizes) {
        const auto *k = si::get_transpose_kernel({ kisa(), uint8_t(w), 1 });
        ASSERT_NE(k, nullptr);
        const bool carries = kisa() == si::kernel_isa::avx2
                             || (kisa() == si::kernel_isa::avx512_core
                                 && (w >= 2 || si::cpu_has_avx512_vbmi()));
        const uint64_t tr = uint64_t(tile_rows(kisa(), w));
        for (uint64_t r : { uint64_t(9), tr, tr + 1, 2 * tr + 5 }) {
            if (r < 9)
                continue;
            for (const auto &chain : chains) {
                uint64_t total = 0;
                for (uint64_t c : chain)
                    total += c;
                for (int64_t pad :
                     { int64_t(w), int64_t(4 * w), int64_t(72) }) {
                    si::transpose_call_args a {};
                    a.rows = r;
                    a.cols = total;
                    a.src_ld = static_cast<int64_t>(r * w) + 3 * w;
                    a.dst_ld = static_cast<int64_t>(total * w) + pad;
                    const size_t sbytes = src_bytes(a, w);
                    const size_t db = dst_bytes(a, w);
                    guarded_mem ms(sbytes), md(db + 64);
                    ASSERT_TRUE(ms.ok() && md.ok());
                    std::vector<uint8_t> slots(r * 64 + 64);
                    auto *carry = reinterpret_cast<uint8_t *>(
                            (reinterpret_cast<uintptr_t>(slots.data()) + 63)
                            / 64 * 64);
                    for (int place = 0; place < 3; ++place) {
                        uint8_t *src = ms.at_end(sbytes);
                        uint8_t *dst = place == 0   ? md.at_begin()
                                       : place == 1 ? md.at_begin() + 2 * w
                                                    : md.at_end(db);
                        fill_bytes(src, sbytes, g);
                        fill_bytes(dst, db, g);
                        fill_bytes(carry, r * 64, g);
                        std::vector<uint8_t> want(dst, dst + db);
                        si::transpose_call_args ra = a;
                        ra.src = src;
                        ra.dst = want.data();
                        si::ref_transpose(ra, w);
                        const std::string what = case_str(*k, a) + " chain "
                                                 + std::to_string(chain.size())
                                                 + " place "
                                                 + std::to_string(place);
                        uint64_t c0 = 0;
                        size_t pending = 0;
                        for (size_t j = 0; j < chain.size(); ++j) {
                            si::transpose_call_args ca = a;
                            ca.src = src + c0 * a.src_ld;
                            ca.dst = dst + c0 * w;
                            ca.cols = chain[j];
                            ca.carry = carry;
                            ca.carry_in = j > 0 && chain[j - 1] % gc == 0;
                            ca.carry_out = j + 1 < chain.size();
                            k->fn()(&ca);
                            c0 += chain[j];
                            if (j + 1 == chain.size())
                                break;
                            // Written so far: columns [0, c0) of each row,
                            // but for the pending bytes of a carrying one.
                            for (uint64_t row = 0; row < r; ++row)
                                for (uint64_t b = 0; b < c0 * w; ++b) {
                                    const size_t o = row * a.dst_ld + b;
                                    pending += dst[o] != want[o];
                                }
                        }
                        // A first call of two blocks or more (any block
                        // width) carries the tails of its last block, in
                        // the rows that no tail tile writes again: AVX-512
                        // runs the rows past the last whole tile as a
                        // partial tile, AVX2 as one full tile over the
                        // last tr rows, which stores the rows it overlaps.
                        const uint64_t kept =
                                r % tr == 0 || r < tr            ? r / tr * tr
                                : kisa() == si::kernel_isa::avx2 ? r - tr
                                                                 : r / tr * tr;
                        bool misaligned = false;
                        for (uint64_t row = 0; row < kept; ++row)
                            misaligned |= reinterpret_cast<uintptr_t>(
                                                  dst + row * a.dst_ld)
                                                  % 64
                                          != 0;
                        if (!carries || chain[0] % gc != 0)
                            KT_EXPECT(fails,
                                      ::testing::AssertionResult(pending == 0),
                                      what + ": bytes left unwritten");
                        else if (misaligned && chain.size() > 1
                                 && chain[0] >= 2 * gc)
                            KT_EXPECT(fails,
                                      ::testing::AssertionResult(pending > 0),
                                      what + ": no bytes carried");
                        KT_EXPECT(fails, same_bytes(dst, want.data(), db),
                                  what);
                    }
                }
            }
        }
    }
}

TEST_P(kernel_transpose, OneKernelPerKeyAcrossThreads) {
    for (int w : elem_sizes)
        for (uint8_t nt : { 0, 1 }) {
            const si::transpose_key key { kisa(), uint8_t(w), nt };
            const si::transpose_kernel *got[4] = {};
            std::vector<std::thread> ts;
            for (int t = 0; t < 4; ++t)
                ts.emplace_back(
                        [&, t] { got[t] = si::get_transpose_kernel(key); });
            for (auto &t : ts)
                t.join();
            ASSERT_NE(got[0], nullptr);
            for (const auto *p : got)
                EXPECT_EQ(p, got[0]);
            EXPECT_EQ(got[0]->name(), si::transpose_kernel_name(key));
            EXPECT_EQ(got[0]->name(), std::string(si::kernel_isa2str(kisa()))
                                              + "_tr_e" + std::to_string(w)
                                              + (nt ? "_nt" : ""));
            // A kernel made apart is another, equivalent one.
            const auto own = si::create_jit_transpose_kernel(key);
            EXPECT_NE(own.get(), got[0]);
            EXPECT_EQ(own->name(), got[0]->name());
            // Another packed limit is another kernel, once per limit.
            const si::transpose_key k6 { kisa(), uint8_t(w), nt, 6 };
            const si::transpose_kernel *p6 = si::get_transpose_kernel(k6);
            EXPECT_NE(p6, got[0]);
            EXPECT_EQ(p6, si::get_transpose_kernel(k6));
        }
}

using tr_abi_harness =
        callee_saved_harness<si::transpose_kernel_fn, si::transpose_call_args>;

TEST_P(kernel_transpose, CalleeSavedRegistersPreserved) {
    const tr_abi_harness h;
    auto &g = rng();
    int fails = 0;
    for (const auto &[w, k] : kernels(kisa())) {
        ASSERT_NE(k, nullptr);
        // Full tiles and both tails.
        const uint64_t r = 2 * uint64_t(tile_rows(kisa(), w)) + 1;
        const uint64_t c = 2 * uint64_t(tile_cols(kisa(), w)) + 3;
        si::transpose_call_args a {};
        a.rows = r;
        a.cols = c;
        a.src_ld = static_cast<int64_t>(r * w);
        a.dst_ld = static_cast<int64_t>(c * w);
        std::vector<uint8_t> src(src_bytes(a, w)), dst(dst_bytes(a, w));
        fill_bytes(src.data(), src.size(), g);
        fill_bytes(dst.data(), dst.size(), g);
        std::vector<uint8_t> want = dst;
        a.src = src.data();
        a.dst = want.data();
        si::ref_transpose(a, w);
        a.dst = dst.data();
        uint64_t out[8] = {};
        h.get()(k->fn(), &a, out);
        const char *names[6] = { "rbx", "rbp", "r12", "r13", "r14", "r15" };
        for (int i = 0; i < 6; ++i)
            KT_EXPECT(fails,
                      out[i] == tr_abi_harness::magic[i]
                              ? ::testing::AssertionSuccess()
                              : ::testing::AssertionFailure()
                                        << names[i] << " clobbered",
                      k->name());
        KT_EXPECT(fails,
                  out[6] == out[7]
                          ? ::testing::AssertionSuccess()
                          : ::testing::AssertionFailure() << "rsp changed",
                  k->name());
        KT_EXPECT(fails, same_bytes(dst.data(), want.data(), dst.size()),
                  case_str(*k, a));
    }
}

TEST_P(kernel_transpose, UnsupportedElementSizeThrows) {
    for (int w : { 0, 3, 16 }) {
        const si::transpose_key key { kisa(), uint8_t(w) };
        EXPECT_THROW(si::create_jit_transpose_kernel(key), sg::error) << w;
        EXPECT_THROW(si::get_transpose_kernel(key), sg::error) << w;
    }
    // More packed lines than the packed blocks have.
    for (int most : { 9, 255 }) {
        const si::transpose_key key { kisa(), 4, 0, uint8_t(most) };
        EXPECT_THROW(si::create_jit_transpose_kernel(key), sg::error) << most;
        EXPECT_THROW(si::get_transpose_kernel(key), sg::error) << most;
    }
}

TEST(kernel_transpose_gen, EveryKeyOfEveryIsaGeneratesOnAnyCpu) {
    // Generating code needs no CPU support: every supported key of both
    // ISAs is generated here, so that a generation-time check that one
    // ISA's geometry trips (a staging block too small for its tiles) fails
    // on every machine, not only on those that run that ISA's tests.
    for (auto isa : { si::kernel_isa::avx2, si::kernel_isa::avx512_core })
        for (int w : { 1, 2, 4, 8 })
            for (int nt = 0; nt < 2; ++nt)
                for (int lines = 0; lines <= 8; ++lines) {
                    const si::transpose_key key { isa, uint8_t(w), uint8_t(nt),
                                                  uint8_t(lines) };
                    std::shared_ptr<const si::transpose_kernel> k;
                    EXPECT_NO_THROW(k = si::create_jit_transpose_kernel(key))
                            << si::transpose_kernel_name(key) << " packed "
                            << lines;
                    EXPECT_TRUE(k && k->fn() != nullptr)
                            << si::transpose_kernel_name(key);
                    // The key it reports is the one it was made from
                    // (transpose_block decides on its ISA).
                    if (k) {
                        EXPECT_TRUE(k->key().isa == isa
                                    && k->key().elem_size == w
                                    && k->key().nt_stores == nt
                                    && k->key().packed_lines == lines)
                                << si::transpose_kernel_name(key);
                    }
                }
}

TEST(kernel_transpose_ref, NoKernelForTheReference) {
    EXPECT_EQ(si::get_transpose_kernel({ si::kernel_isa::ref, 4 }), nullptr);
    EXPECT_THROW(si::create_jit_transpose_kernel({ si::kernel_isa::ref, 4 }),
                 sg::error);
}

SELGRAPH_INSTANTIATE_PER_JIT_ISA(kernel_transpose);

} // namespace
} // namespace selgraph_test
