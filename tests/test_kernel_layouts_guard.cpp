// Guard pages around every tensor of the tiled (transposing) path: a
// transposed src_0, cond or src_1 (with and without a padded pitch), a
// column-major or channels-last dst over row-major inputs (dst transposed
// out of the tile's scratch; in lines off the cache lines, strips of
// each dst row joined through a carry, by AVX2's kernel for 1-byte
// elements in an AVX-512 plan; in lines a multiple of 256 bytes apart, by
// AVX2's nt kernel in an AVX-512 plan on Zen 5), inputs
// whose lines lie 4 KiB apart (by AVX2's kernel for 2-byte ones in an
// AVX-512 plan on Zen 5), each tensor ending right before a PROT_NONE page and,
// separately, starting right after one, for row and column counts around the
// tile and vector sizes. A read past a transposed column or a write past a
// tile's last row or column crashes the test binary; the results are compared
// with impl::ref_select bit for bit.
#include "kernel_test_utils.hpp"

#include <algorithm>

namespace selgraph_test {
namespace {

using kernel_layouts_guard = isa_test;

/// [r, c] operands of w bytes, row-major but for `op` (0..2: that input;
/// 3: dst over row-major inputs), column-major with a pitch of `pitch`.
si::select_nd one_column_major(int64_t r, int64_t c, int op, int64_t pitch,
                               int w) {
    dims_t st[4];
    st[op] = { 1, pitch };
    return full_nd({ r, c }, st, w);
}

// A column-major dst of r x c elements of w bytes whose lines lie `pitch`
// elements apart (gs holds it), planned for `isa` with the non-temporal
// kernels: dst's nt transpose is the one transpose_kernel_isa names (its
// ISA into `nt_isa`; `isa` where the plan runs the reference kernel), and
// every store kind the plan has runs bit for bit against the reference,
// dst right before a guard page and right after one, on 1 and 2 threads.
// Failures count into `fails` (the callers stop at 6, KT_EXPECT's budget:
// its GTEST_FAIL returns from this helper only).
void column_major_dst_against_guards(guard_set &gs, si::kernel_isa isa,
                                     int64_t r, int64_t c, int64_t pitch, int w,
                                     int &fails, si::kernel_isa &nt_isa) {
    const bool jit = isa != si::kernel_isa::ref;
    nt_isa = isa;
    gs.fill(rng(), static_cast<size_t>(pitch * c * w));
    const si::select_nd p = one_column_major(r, c, si::op_dst, pitch, w);
    const si::select_plan plan = si::plan_select(p, si::nt_candidate_bytes());
    const std::string desc = nd_str(p);
    KT_EXPECT(fails, plan_takes(plan, isa, jit) << si::folded2str(plan.folded),
              desc);
    if (jit) {
        const si::select_folded &f = plan.folded;
        const int64_t ld = f.strides[si::op_dst][f.ndims - 1];
        nt_isa = dst_nt_transpose_isa(plan, isa);
        // dst's regular transpose: the plan's ISA, whatever dst's lines.
        const si::kernel_isa regular = si::transpose_kernel_isa(
                isa, si::op_dst, w, f.dims[f.ndims - 2], f.dims[f.ndims - 1],
                false, ld, false, si::this_cpu_tuning());
        KT_EXPECT(fails,
                  ::testing::AssertionResult(
                          plan.transpose[si::op_dst]
                          && plan.transpose[si::op_dst]->key().isa == regular
                          && regular == isa)
                          << plan.kernel_str(),
                  desc);
        const std::string name = dst_nt_transpose_name(plan, isa);
        KT_EXPECT(fails,
                  ::testing::AssertionResult(plan.transpose_dst_nt
                                             && plan.transpose_dst_nt->name()
                                                        == name)
                          << plan.kernel_str() << " wants " << name,
                  desc);
    }
    for (bool at_end : { true, false })
        for (int nthr : { 1, 2 })
            KT_EXPECT(fails, run_guarded(gs, p, plan, at_end, nthr),
                      desc + (at_end ? " at end" : " at begin") + " nthreads "
                              + std::to_string(nthr));
}

TEST_P(kernel_layouts_guard, TransposedOperandsAgainstGuards) {
    auto &g = rng();
    int fails = 0;
    // Tile rows of 16 to 128 and columns of 16 to a few hundred,
    // depending on the element sizes: tails on both sides of each.
    const std::vector<int64_t> rows = { 1,  2,  3,  15, 16,  17,  31, 32,
                                        33, 63, 64, 65, 127, 128, 129 };
    const std::vector<int64_t> cols = {
        1,   3,   15,  16,  17,  33,  47,  48,  49,  95,  96,  97,
        111, 112, 113, 127, 128, 129, 160, 161, 255, 256, 257, 513
    };
    for (int w : { 8, 4, 2, 1 }) {
        const int64_t pad_max = 5;
        // The largest span: 129 x 513 elements with a padded pitch.
        guard_set gs(static_cast<size_t>((129 + pad_max) * 513 * w));
        ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
        for (int64_t r : rows)
            for (int64_t c : cols) {
                // Long rows or many rows only for a few of the others.
                if ((c > 161 && r % 16 != 1) || (r > 65 && c % 16 != 1))
                    continue;
                gs.fill(g, static_cast<size_t>((r + pad_max) * c * w));
                for (int op = 0; op < 4; ++op)
                    for (int64_t pad : { int64_t(0), pad_max }) {
                        const si::select_nd p =
                                one_column_major(r, c, op, r + pad, w);
                        const bool nt = (r + c) % 2 == 1;
                        const si::select_plan plan = si::plan_select(
                                p, nt ? si::nt_candidate_bytes() : 0);
                        const std::string desc = "operand " + std::to_string(op)
                                                 + " " + nd_str(p)
                                                 + (nt ? " (nt)" : "");
                        // With one row, a padded pitch is a plain stride
                        // along the row: a step, an input's gathered, dst's
                        // scattered by the stepped kernel.
                        const bool tiled = r > 1 && c > 1;
                        KT_EXPECT(fails,
                                  ::testing::AssertionResult(expect_jit_able(p))
                                          << nd_str(p),
                                  desc);
                        KT_EXPECT(fails,
                                  plan_takes(plan, kisa(),
                                             jit() && expect_jit_able(p)),
                                  desc);
                        if (tiled) {
                            KT_EXPECT(fails,
                                      ::testing::AssertionResult(
                                              plan.folded.has_transposed())
                                              << si::folded2str(plan.folded),
                                      desc);
                        }
                        // Two threads against the upper guards, one
                        // against the lower ones.
                        for (bool at_end : { true, false })
                            for (int nthr : { at_end ? 2 : 1 })
                                KT_EXPECT(
                                        fails,
                                        run_guarded(gs, p, plan, at_end, nthr),
                                        desc
                                                + (at_end ? " at end"
                                                          : " at begin")
                                                + " nthreads "
                                                + std::to_string(nthr));
                    }
            }
    }
}

TEST_P(kernel_layouts_guard, CarriedDstLinesAgainstGuards) {
    // A column-major dst whose lines are never whole cache lines, tall
    // enough for strips of two panels and a tail (128 + 128 + 17 rows and
    // more), with the non-temporal kernels: each dst row's strips form a
    // carry chain (the dst transposes keep a row's last partial line for
    // the next strip), for every element size, 1-byte elements included
    // (whose nt transpose in an AVX-512 plan is AVX2's, which carries).
    int fails = 0;
    for (int w : { 1, 2, 4, 8 }) {
        const int64_t r_max = 3 * 128 + 17 + 7, c_max = 97;
        guard_set gs(static_cast<size_t>(r_max * c_max * w));
        ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
        for (int64_t r : { int64_t(2 * 128 + 17), int64_t(3 * 128 + 17) })
            for (int64_t c : { int64_t(33), c_max })
                for (int64_t pad : { int64_t(1), int64_t(7) }) {
                    si::kernel_isa nt_isa;
                    column_major_dst_against_guards(gs, kisa(), r, c, r + pad,
                                                    w, fails, nt_isa);
                    if (fails >= 6)
                        return;
                }
    }
}

TEST_P(kernel_layouts_guard, DstBandsOfPagesAgainstGuards) {
    // A column-major dst whose lines lie 4004 to 4024 bytes apart (never
    // whole cache lines), more of them than 1 MiB holds: its transposes
    // run in bands of 256 dst rows (transposed_dst_band) and a last
    // shorter band, in panels of at least 4 lines of each row (256 rows of
    // 1-byte elements, 128 of 2-byte ones), the carry chains running
    // through the bands; as above.
    int fails = 0;
    for (int w : { 1, 2, 4, 8 }) {
        // Rows past two panels of 256 (1-byte elements), as long as the
        // lines hold them.
        const int64_t pitch = 4001 / w + 3, c_max = 300;
        const int64_t r = std::min<int64_t>(pitch, 2 * 256 + 17);
        guard_set gs(static_cast<size_t>(pitch * c_max * w));
        ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
        for (int64_t c : { int64_t(257), c_max }) {
            const si::select_nd p =
                    one_column_major(r, c, si::op_dst, pitch, w);
            const si::select_folded f = si::fold_select(p);
            KT_EXPECT(fails,
                      ::testing::AssertionResult(
                              si::transposed_dst_band(
                                      f.strides[si::op_dst][f.ndims - 1], c)
                              > 0),
                      nd_str(p));
            si::kernel_isa nt_isa;
            column_major_dst_against_guards(gs, kisa(), r, c, pitch, w, fails,
                                            nt_isa);
            if (fails >= 6)
                return;
        }
    }
}

TEST_P(kernel_layouts_guard, DstLinesFourLinesApartAgainstGuards) {
    // A column-major dst whose lines lie a multiple of 256 bytes apart (a
    // transposed [2048, 2048] matrix's: 4 KiB in bf16, 8 in f32; [256, 256]
    // scores': 512 and 1 KiB; 768 bytes), as above: on Zen 5 an AVX-512
    // plan's nt dst transpose is then AVX2's (transpose_kernel_isa),
    // elsewhere the plan's; and lines 640 or 4160 bytes apart keep the
    // plan's everywhere.
    int fails = 0;
    for (int w : { 1, 2, 4, 8 })
        for (int64_t ld :
             { int64_t(512), int64_t(640), int64_t(768), int64_t(1024),
               int64_t(4096), int64_t(4160), int64_t(8192) }) {
            const int64_t pitch = ld / w, c_max = 97;
            guard_set gs(static_cast<size_t>(pitch * c_max * w));
            ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
            const bool zen5_ymm =
                    si::this_cpu_tuning().ymm_dst_nt_transposes_four_lines
                    && kisa() == si::kernel_isa::avx512_core && ld % 256 == 0;
            // Rows past one and two dst bands of 128, as long as the
            // lines hold them.
            for (int64_t r : { std::min<int64_t>(pitch, 2 * 128 + 17),
                               std::min<int64_t>(pitch, 3 * 128 + 17) - 3 })
                for (int64_t c : { int64_t(33), c_max }) {
                    si::kernel_isa want;
                    column_major_dst_against_guards(gs, kisa(), r, c, pitch, w,
                                                    fails, want);
                    if (fails >= 6)
                        return;
                    if (jit())
                        KT_EXPECT(
                                fails,
                                ::testing::AssertionResult(
                                        (want == si::kernel_isa::avx2)
                                        == (zen5_ymm
                                            || kisa() == si::kernel_isa::avx2))
                                        << si::kernel_isa2str(want),
                                "w " + std::to_string(w) + " ld "
                                        + std::to_string(ld));
                }
        }
}

TEST_P(kernel_layouts_guard, InputLinesPagesApartAgainstGuards) {
    // A column-major input whose lines lie 4 or 8 KiB apart (a transposed
    // [2048, 2048] matrix's), or 2 bytes short of 4 KiB ([2047, 2047] bf16):
    // on Zen 5 an AVX-512 plan transposes such 2-byte inputs with AVX2's
    // kernel (transpose_kernel_isa: its register tile's 16 lines would
    // crowd one L1 set), elsewhere and for other sizes with the plan's.
    // Every tensor against a guard page at either end.
    auto &g = rng();
    int fails = 0;
    for (int w : { 2, 4 })
        for (int64_t ld : { int64_t(4094), int64_t(4096), int64_t(8192) }) {
            if (ld % w != 0)
                continue;
            const int64_t pitch = ld / w, c_max = 97;
            guard_set gs(static_cast<size_t>(pitch * c_max * w));
            ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
            for (int op : { 0, 1, 2 })
                for (int64_t c : { int64_t(33), c_max }) {
                    const int64_t r = 2 * 128 + 17;
                    gs.fill(g, static_cast<size_t>(pitch * c * w));
                    const si::select_nd p =
                            one_column_major(r, c, op, pitch, w);
                    const si::select_plan plan = si::plan_select(p, 0);
                    const int wt = op == si::op_cond ? 1 : w;
                    const si::cpu_tuning &t = si::this_cpu_tuning();
                    // Every 2-byte input's line stride here crowds one
                    // set (cond, of 1 byte, takes no such rule); Zen 4
                    // takes AVX2's for all 2-byte inputs.
                    const bool ymm =
                            kisa() == si::kernel_isa::avx2
                            || (!si::tiles_may_stream(plan.folded)
                                && ((wt == 2
                                     && (t.ymm_input_transposes_words
                                         || t.ymm_input_transposes_crowded_words))
                                    || (wt == 4
                                        && t.ymm_input_transposes_dwords)));
                    const std::string desc =
                            "operand " + std::to_string(op) + " " + nd_str(p);
                    KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                    if (jit()) {
                        // A transposing kernel, of AVX2 exactly where the
                        // rules say.
                        const bool avx2 = plan.transpose[op]
                                          && plan.transpose[op]->key().isa
                                                     == si::kernel_isa::avx2;
                        KT_EXPECT(fails,
                                  ::testing::AssertionResult(plan.transpose[op]
                                                             && avx2 == ymm)
                                          << plan.kernel_str(),
                                  desc);
                    }
                    // Two threads against the upper guards, one
                    // against the lower ones.
                    for (bool at_end : { true, false })
                        KT_EXPECT(fails,
                                  run_guarded(gs, p, plan, at_end,
                                              at_end ? 2 : 1),
                                  desc
                                          + (at_end ? " at end, 2 threads"
                                                    : " at begin, 1 thread"));
                    if (fails >= 6)
                        return;
                }
        }
}

TEST_P(kernel_layouts_guard, ChannelsLastAgainstGuards) {
    // 4-D: dst NHWC over NCHW inputs (dst transposed), src_0 NHWC
    // over NCHW (src_0 transposed), and a per-channel cond inside the
    // latter; C and W around the tile sizes.
    auto &g = rng();
    int fails = 0;
    auto nhwc = [](const dims_t &d) {
        return dims_t { d[1] * d[2] * d[3], 1, d[3] * d[1], d[1] };
    };
    for (int w : { 4, 2, 1 }) {
        guard_set gs(static_cast<size_t>(2 * 65 * 3 * 65 * w));
        ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
        for (int64_t c : { 1, 3, 16, 17, 33, 48, 49, 64, 65 })
            for (int64_t wd : { 1, 15, 16, 17, 64, 65 }) {
                const dims_t d = { 2, c, 3, wd };
                gs.fill(g, static_cast<size_t>(2 * c * 3 * wd * w));
                for (int kind = 0; kind < 3; ++kind) {
                    nd_spec s = full_spec(d, w);
                    if (kind == 0)
                        s.strides[3] = nhwc(d);
                    else
                        s.strides[1] = nhwc(d);
                    if (kind == 2)
                        s.in[0] = { 1, c, 1, 1 };
                    const si::select_nd p = make_nd(s);
                    const si::select_plan plan = si::plan_select(
                            p, c % 2 ? si::nt_candidate_bytes() : 0);
                    const std::string desc =
                            "kind " + std::to_string(kind) + " " + nd_str(p);
                    KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                    for (bool at_end : { true, false })
                        KT_EXPECT(fails, run_guarded(gs, p, plan, at_end, 2),
                                  desc + (at_end ? " at end" : " at begin"));
                }
            }
    }
}

TEST_P(kernel_layouts_guard, StagedInputsAgainstGuards) {
    // Inputs in three dim orders (cond NHWC-like, src_0 with its last two
    // dims swapped, src_1 and dst NCHW): cond is staged, copied by its
    // own plan from the guarded tensor into the staging buffer. Every user
    // tensor against a guard page on either side, C and W around the tile
    // sizes.
    auto &g = rng();
    int fails = 0;
    for (int w : { 4, 2, 1 }) {
        guard_set gs(static_cast<size_t>(2 * 65 * 3 * 65 * w));
        ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
        for (int64_t c : { 1, 3, 16, 17, 33, 65 })
            for (int64_t wd : { 2, 15, 16, 17, 65 }) {
                const dims_t d = { 2, c, 3, wd };
                gs.fill(g, static_cast<size_t>(2 * c * 3 * wd * w));
                nd_spec s = full_spec(d, w);
                s.strides[0] = { c * 3 * wd, 1, wd * c, c };
                s.strides[1] = { c * 3 * wd, 3 * wd, 1, 3 };
                const si::select_nd p = make_nd(s);
                const si::select_plan plan = si::plan_select(
                        p, c % 2 ? si::nt_candidate_bytes() : 0);
                const std::string desc = nd_str(p) + " " + plan.kernel_str();
                KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                if (jit() && c > 1)
                    KT_EXPECT(fails,
                              ::testing::AssertionResult(
                                      plan.staged.size() == 1
                                      && plan.staged[0].op == si::op_cond),
                              "cond staged: " + desc);
                for (bool at_end : { true, false })
                    KT_EXPECT(fails, run_guarded(gs, p, plan, at_end, 2),
                              desc + (at_end ? " at end" : " at begin"));
            }
    }
}

TEST_P(kernel_layouts_guard, SmallInputsStagedAgainstGuards) {
    // A small input with no stride-1 dim (cond [1, B, C, 1], its rows of
    // one element padded to 6) beside src_0 and dst in one dim order and
    // src_1 in another: the fold in dst's order would leave cond strided,
    // the one in src_1's order transposes src_0 and dst. Staging cond
    // (a sixteenth of dst's bytes at most) lets dst's order transpose
    // src_1 alone. A cond as large as dst, laid out as src_1, is not
    // staged (dst's order transposes it and src_1). Every tensor
    // against a guard page at either end, 1 to 3 threads, bit for bit
    // against the reference.
    auto &g = rng();
    int fails = 0, staged = 0;
    for (int w : { 1, 2, 4, 8 })
        for (int64_t k : { 3, 10, 17 })
            for (bool small : { true, false }) {
                const int64_t b = 13, c = 9;
                const dims_t d = { 8, b, c, k };
                nd_spec s = full_spec(d, w);
                s.strides[1] = perm_strides(d, { 1, 3, 0, 2 }, 3);
                s.strides[3] = s.strides[1];
                s.strides[2] = perm_strides(d, { 0, 1, 2, 3 }, 3);
                if (small) {
                    s.in[0] = { 1, b, c, 1 };
                    s.strides[0] = { 6 * c * b, 6 * c, 6, 1 };
                } else {
                    s.strides[0] = s.strides[2];
                }
                const si::select_nd p = make_nd(s);
                const si::select_plan plan = si::plan_select(p, 0);
                const std::string desc = nd_str(p) + " " + plan.kernel_str();
                KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                if (jit() && small) {
                    const si::select_folded &f = plan.folded;
                    int transposed = 0;
                    for (int i = 0; i < si::n_operands; ++i)
                        transposed += f.mode[i] == si::inner_mode::transposed;
                    KT_EXPECT(fails,
                              ::testing::AssertionResult(
                                      plan.staged.size() == 1
                                      && plan.staged[0].op == si::op_cond
                                      && transposed == 1)
                                      << si::folded2str(f),
                              "cond staged, one transpose: " + desc);
                    ++staged;
                }
                if (jit() && !small)
                    KT_EXPECT(fails,
                              ::testing::AssertionResult(plan.staged.empty())
                                      << si::folded2str(plan.folded),
                              "a large cond not staged: " + desc);
                run_guarded_1_to_3(fails, p, plan, desc, g);
                if (fails >= 6)
                    return;
            }
    if (jit()) {
        EXPECT_EQ(staged, 12);
    }
}

TEST_P(kernel_layouts_guard, TilesNarrowerThanTheRowAgainstGuards) {
    // Rows too long for a whole-width panel of min_rows rows in 1 MiB
    // (src/parallel_execute.cpp): first rows for which fewer fit, where
    // panels narrower than min_rows run down to 128 bytes of each line of a
    // transposed input (64 of dst's), then rows too long for those, where
    // tiles narrower than the row run (and a transposed dst's column
    // halves, one per thread); with a tail of rows (and of columns), each
    // operand transposed in turn. At 2 threads the tiles' rows are made
    // even (tiles of 48 and 19 rows, not 64 and 3), still with a tail.
    auto &g = rng();
    int fails = 0;
    for (int w : { 4, 2, 1 })
        for (int op = 0; op < 4; ++op)
            for (bool narrow_panels : { true, false }) {
                // The transposed bytes per element, the rows of a tile and
                // the fewest rows of a panel.
                const int64_t wt = op == 0 ? 1 : w;
                const int64_t min_rows = wt >= 2 ? 128 : 64;
                const int64_t floor_rows = std::min(
                        min_rows,
                        std::max<int64_t>(16, (op == 3 ? 64 : 128) / wt));
                const int64_t r = min_rows + 3;
                const int64_t c =
                        (int64_t(1) << 20)
                                / ((narrow_panels ? min_rows : floor_rows) * wt)
                        + 17;
                guard_set gs(static_cast<size_t>(r * c * w));
                ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
                gs.fill(g, static_cast<size_t>(r * c * w));
                const si::select_nd p = one_column_major(r, c, op, r, w);
                const si::select_plan plan = si::plan_select(p, 0);
                const std::string desc =
                        "operand " + std::to_string(op) + " " + nd_str(p);
                KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                const si::tile_shape t = si::plan_tiles(plan.folded, 2);
                const bool panels = narrow_panels && floor_rows < min_rows;
                // A transposed dst whose panels of 64 rows fit: the two
                // threads' column halves (a multiple of 16), 64 rows each;
                // where they do not, column blocks of 64 rows in half the
                // 1 MiB budget, fewer columns where those would leave one
                // thread most of the elements (3 blocks, 2 threads).
                const bool dst_halves =
                        op == 3 && (int64_t(1) << 20) / (c * wt) >= 64;
                const int64_t half = ((c + 1) / 2 + 15) / 16 * 16;
                // Tiles of min_rows rows and a tail of 3 would leave one
                // thread most of the elements: two even row blocks.
                const int64_t even_rows = ((r + 1) / 2 + 15) / 16 * 16;
                const int64_t block = (int64_t(1) << 19) / (64 * wt);
                KT_EXPECT(fails,
                          ::testing::AssertionResult(
                                  dst_halves ? t.rows == 64 && t.cols == half
                                                       && t.cols_first
                                  : op == 3 ? t.rows == 64 && t.cols <= block
                                                      && t.cols_first
                                  : panels ? t.rows >= floor_rows
                                                     && t.rows < min_rows
                                                     && t.cols == c
                                           : t.rows == even_rows && t.cols < c)
                                  << "tiles " << t.rows << " x " << t.cols,
                          desc);
                for (bool at_end : { true, false })
                    KT_EXPECT(fails, run_guarded(gs, p, plan, at_end, 2),
                              desc + (at_end ? " at end" : " at begin"));
            }
}

TEST_P(kernel_layouts_guard, TilesSharedByThreadsAgainstGuards) {
    // Tiles that plan_tiles makes even for the threads that share them
    // (src/parallel_execute.cpp, shared_tiles): row blocks of 80 and 51,
    // and of 56 and 44 rows (finer than 16), column blocks of 16 and of
    // any count, taken columns first by a transposed input, and a
    // transposed dst's column blocks (in place of panels of 128 and 1
    // rows, on AMD too); each run at the thread count it was planned for,
    // every store kind, against the guards at both ends.
    struct tc {
        int64_t r, c;
        int op, w, nthreads;
    };
    const std::vector<tc> cases = {
        { 131, 8209, 1, 4, 2 }, { 131, 35778, 2, 2, 2 }, { 100, 8209, 0, 4, 8 },
        { 100, 8209, 0, 1, 4 }, { 17, 35778, 1, 2, 4 },  { 300, 2000, 0, 1, 4 },
        { 64, 3000, 1, 2, 2 },  { 300, 257, 1, 4, 2 },   { 64, 8209, 3, 2, 3 },
        { 513, 700, 3, 2, 3 },  { 129, 1000, 3, 4, 2 },  { 100, 8209, 3, 1, 2 },
        { 100, 8209, 0, 4, 2 },
    };
    auto &g = rng();
    int fails = 0;
    for (const tc &c : cases)
        for (size_t ws : { size_t(0), size_t(1) << 30 }) {
            guard_set gs(static_cast<size_t>(c.r * c.c * c.w));
            ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
            gs.fill(g, static_cast<size_t>(c.r * c.c * c.w));
            const si::select_nd p = one_column_major(c.r, c.c, c.op, c.r, c.w);
            const si::select_plan plan = si::plan_select(p, ws);
            const std::string desc = "operand " + std::to_string(c.op) + " "
                                     + nd_str(p) + " nthreads "
                                     + std::to_string(c.nthreads);
            KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
            for (bool at_end : { true, false })
                KT_EXPECT(fails, run_guarded(gs, p, plan, at_end, c.nthreads),
                          desc + (at_end ? " at end" : " at begin"));
        }
}

// A batch of matrices [B, R, C], every operand row-major but `op`, stored
// with its last two dims swapped.
si::select_nd batch_transposed(const dims_t &d, int op, int w) {
    dims_t st[4];
    st[op] = { d[1] * d[2], 1, d[1] };
    return full_nd(d, st, w);
}

TEST_P(kernel_layouts_guard, PiecesAgainstGuards) {
    // One input of [N, C, H, W] stored with every dim reversed (strides
    // {1, N, N*C, N*C*H}), the rest row-major: the fold merges H into W
    // for every operand but that input, whose lines of each row come in
    // pieces of W (src/broadcast.cpp, step 7). Tile rows around the
    // vector and register tile sizes; the last shapes' rows are too long
    // for a panel of 128 rows, so that tiles narrower than the row cut
    // pieces at their edges.
    auto &g = rng();
    int fails = 0;
    struct shape {
        dims_t d;
        bool wide;
    };
    const std::vector<shape> shapes = {
        { { 3, 2, 5, 7 }, false },     { { 17, 3, 9, 13 }, false },
        { { 33, 2, 4, 16 }, false },   { { 16, 5, 3, 31 }, false },
        { { 65, 2, 11, 2 }, false },   { { 129, 2, 1400, 13 }, true },
        { { 64, 1, 1100, 15 }, true },
    };
    for (int w : { 4, 2, 1, 8 })
        for (const shape &sh : shapes) {
            if (sh.wide && w != 4 && w != 1)
                continue;
            const dims_t &d = sh.d;
            const int64_t n = d[0] * d[1] * d[2] * d[3];
            guard_set gs(static_cast<size_t>(n * w));
            ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
            gs.fill(g, static_cast<size_t>(n * w));
            // Each input reversed; then cond or src_1 reversed beside a 0-D
            // src_0, which the plan swaps into the src_1 slot (the pieces'
            // strides follow the swap).
            for (int k = 0; k < 5; ++k) {
                const int op = k < 3 ? k : (k == 3 ? 0 : 2);
                nd_spec ns = full_spec(d, w);
                ns.strides[op] = { 1, d[0], d[0] * d[1], d[0] * d[1] * d[2] };
                if (k >= 3) {
                    ns.in[1] = {};
                    ns.strides[1] = {};
                    ns.dst_from_inputs = false;
                    ns.dst = d;
                }
                const si::select_nd p = make_nd(ns);
                const bool nt = (op + w) % 2 == 1;
                const si::select_plan plan =
                        si::plan_select(p, nt ? si::nt_candidate_bytes() : 0);
                const std::string desc = "operand " + std::to_string(op) + " "
                                         + nd_str(p) + (nt ? " (nt)" : "");
                KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                const si::select_folded &f = plan.folded;
                const int64_t wt = op == 0 ? 1 : w;
                // Lines of N under 512 bytes take C into the tile dim, in
                // groups of N rows (step 8); C of 1 is no dim.
                const bool grouped = d[1] > 1 && d[0] * wt < 512;
                KT_EXPECT(fails,
                          ::testing::AssertionResult(
                                  f.piece == d[3] && f.inner() == d[2] * d[3]
                                  && f.dims[f.ndims - 2]
                                             == (grouped ? d[0] * d[1] : d[0])
                                  && f.group == (grouped ? d[0] : 0)
                                  && f.piece_stride[op] == d[0] * d[1] * wt)
                                  << si::folded2str(f),
                          desc);
                if (sh.wide) {
                    const si::tile_shape t = si::plan_tiles(f, 2);
                    KT_EXPECT(fails,
                              ::testing::AssertionResult(t.cols < f.inner()
                                                         && t.cols % d[3] != 0)
                                      << "tiles " << t.rows << " x " << t.cols,
                              desc);
                }
                run_guarded_1_to_3(fails, gs, p, plan, desc);
            }
        }
}

TEST_P(kernel_layouts_guard, RowGroupsAgainstGuards) {
    // One input of [N, C, L] stored (L, C, N) (strides {1, N, N*C}), the
    // rest row-major, rows of L of 1 KiB or more (no pieces): the tile dim
    // is N for
    // that input, contiguous into C, so with lines of N under 512 bytes
    // the fold merges C into it for that input and leaves every other
    // operand's rows in groups of N, C's stride apart (src/broadcast.cpp,
    // step 8). N around the vector and register tile sizes and not
    // dividing the tiles' rows (tiles then start inside a group), and a
    // tile streamed in strips across the groups; a per-channel src_1
    // [1, C, 1] (stride 0 along N); 1 to 3 threads; every tensor against a
    // guard page at either end.
    auto &g = rng();
    int fails = 0;
    for (int w : { 4, 2, 1, 8 })
        for (const dims_t &d :
             { dims_t { 3, 50, 1030 }, dims_t { 16, 9, 1100 },
               dims_t { 5, 70, 1024 }, dims_t { 33, 7, 1027 },
               dims_t { 2, 200, 1030 }, dims_t { 4, 16, 1024 } }) {
            const int64_t n = d[0] * d[1] * d[2];
            guard_set gs(static_cast<size_t>(n * w));
            ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
            gs.fill(g, static_cast<size_t>(n * w));
            for (int k = 0; k < 4; ++k) {
                const int op = k < 3 ? k : 0;
                nd_spec ns = full_spec(d, w);
                ns.strides[op] = { 1, d[0], d[0] * d[1] };
                if (k == 3) {
                    ns.in[2] = { 1, d[1], 1 };
                    ns.strides[2] = {};
                }
                const si::select_nd p = make_nd(ns);
                const bool nt = (op + w + k) % 2 == 1;
                const si::select_plan plan =
                        si::plan_select(p, nt ? si::nt_candidate_bytes() : 0);
                const std::string desc = "case " + std::to_string(k) + " "
                                         + nd_str(p) + (nt ? " (nt)" : "");
                KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                const si::select_folded &f = plan.folded;
                const int64_t wt = op == 0 ? 1 : w;
                const bool grouped = d[0] * wt < 512;
                KT_EXPECT(fails,
                          ::testing::AssertionResult(
                                  f.piece == 0 && f.inner() == d[2]
                                  && f.ndims == (grouped ? 2 : 3)
                                  && f.dims[f.ndims - 2]
                                             == (grouped ? d[0] * d[1] : d[0])
                                  && f.group == (grouped ? d[0] : 0))
                                  << si::folded2str(f),
                          desc);
                // [4, 16, 1024]: the transposed input's lines start cache
                // lines and the tile fits the stream budget: one thread
                // streams it in strips of 64 bytes of lines, across the
                // groups.
                if (d[2] == 1024 && d[0] == 4 && w <= 4) {
                    const si::tile_shape t = si::plan_tiles(f, 1);
                    KT_EXPECT(fails,
                              ::testing::AssertionResult(t.stream)
                                      << "tiles " << t.rows << " x " << t.cols
                                      << " not streamed",
                              desc);
                }
                if (grouped) {
                    // dst's groups lie C's stride apart, the transposed
                    // input's N elements apart.
                    KT_EXPECT(fails,
                              ::testing::AssertionResult(
                                      f.group_stride[si::op_dst] == d[2] * w
                                      && f.group_stride[op] == d[0] * wt)
                                      << si::folded2str(f),
                              desc);
                }
                run_guarded_1_to_3(fails, gs, p, plan, desc);
            }
        }
}

TEST_P(kernel_layouts_guard, StreamedTilesAgainstGuards) {
    // Batches of matrices with one operand transposed in each: streamed
    // tiles (whole matrices, in strips, each prefetching the next one's
    // block in address order), every tensor against a guard page at either
    // end, 1 and 2 threads, bit-exact against the reference.
    auto &g = rng();
    int fails = 0;
    for (int w : { 4, 2, 1, 8 })
        for (int op : { 0, 1, 2 })
            // Streaming needs lines that start cache lines or fit one
            // strip: 16 and 8 rows for every element size, 5 rows (a
            // partial register tile) in one strip.
            for (const dims_t &d : { dims_t { 5, 64, 48 }, dims_t { 6, 16, 33 },
                                     dims_t { 4, 8, 7 }, dims_t { 4, 5, 9 } }) {
                const si::select_nd p = batch_transposed(d, op, w);
                const si::select_plan plan = si::plan_select(p, 0);
                const std::string desc =
                        "operand " + std::to_string(op) + " " + nd_str(p);
                KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                if (!jit())
                    continue;
                for (int nthr : { 1, 2 }) {
                    const si::tile_shape t = si::plan_tiles(plan.folded, nthr);
                    KT_EXPECT(fails,
                              ::testing::AssertionResult(t.stream)
                                      << "tiles " << t.rows << " x " << t.cols
                                      << " not streamed",
                              desc);
                    guard_set gs(static_cast<size_t>(d[0] * d[1] * d[2] * w));
                    ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
                    gs.fill(g, static_cast<size_t>(d[0] * d[1] * d[2] * w));
                    for (bool at_end : { true, false })
                        KT_EXPECT(fails, run_guarded(gs, p, plan, at_end, nthr),
                                  desc + (at_end ? " at end" : " at begin")
                                          + " threads " + std::to_string(nthr));
                }
            }
}

TEST_P(kernel_layouts_guard, ShortTileDimsAgainstGuards) {
    // An input transposed along a tile dim of 32 to 63 bytes of each line:
    // AVX-512 plans move 2- to 8-byte elements with AVX2's transposes
    // (transpose_kernel_isa), whose register tiles then hold every row.
    // The plan names the rule's kernel, and every tensor runs against a
    // guard page at either end, 1 to 3 threads, bit-exact against the
    // reference.
    auto &g = rng();
    int fails = 0;
    for (int w : { 8, 4, 2, 1 })
        for (int op : { 0, 1, 2 })
            for (int64_t r : { int64_t(32 / w), int64_t(32 / w + 1),
                               int64_t(64 / w - 1), int64_t(64 / w) })
                for (const dims_t &d :
                     { dims_t { 3, r, 37 }, dims_t { 2, r, 200 } }) {
                    const si::select_nd p = batch_transposed(d, op, w);
                    const si::select_plan plan = si::plan_select(p, 0);
                    const std::string desc =
                            "operand " + std::to_string(op) + " " + nd_str(p);
                    KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                    if (jit()) {
                        const si::select_folded &f = plan.folded;
                        const int wt = op == si::op_cond ? 1 : w;
                        const bool ymm = kisa() == si::kernel_isa::avx2
                                         || (wt > 1 && r * wt < 64);
                        const si::kernel_isa want = si::transpose_kernel_isa(
                                kisa(), op, wt, f.dims[f.ndims - 2],
                                call_lines(f), si::tiles_may_stream(f),
                                f.strides[op][f.ndims - 1], false,
                                si::this_cpu_tuning());
                        KT_EXPECT(
                                fails,
                                ::testing::AssertionResult(
                                        f.dims[f.ndims - 2] == r
                                        && plan.transpose[op]
                                        && plan.transpose[op]->name()
                                                   == si::transpose_kernel_name(
                                                           { want,
                                                             static_cast<
                                                                     uint8_t>(
                                                                     wt) })
                                        && (!ymm
                                            || want == si::kernel_isa::avx2))
                                        << plan.kernel_str() << " "
                                        << si::folded2str(f),
                                desc);
                    }
                    run_guarded_1_to_3(fails, p, plan, desc, g);
                }
}

TEST_P(kernel_layouts_guard, PiecesOfAFewColumnsAgainstGuards) {
    // An input with every dim reversed against dst over [R, M, k] folds to
    // R x (M * k) in pieces of k columns (docs/broadcast-folding.md, step
    // 7): each transposing call moves k lines. Under 8, an AVX-512 plan
    // keeps AVX-512's transposes on every CPU (AVX2's move such calls one
    // element at a time); from 8 the CPU's rules decide (transpose_kernel_isa
    // with the piece's lines). Every tensor against a guard page at either
    // end, 1 to 3 threads, bit for bit against the reference.
    auto &g = rng();
    int fails = 0;
    for (int w : { 2, 4, 8 })
        for (int64_t k : { 3, 5, 7, 8, 9 })
            for (const dims_t &d :
                 { dims_t { 67, 41, k }, dims_t { 130, 9, k } }) {
                dims_t st[4];
                st[1] = perm_strides(d, { 2, 1, 0 });
                const si::select_nd p = full_nd(d, st, w);
                const si::select_plan plan = si::plan_select(p, 0);
                const std::string desc = nd_str(p);
                KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                if (jit()) {
                    const si::select_folded &f = plan.folded;
                    const si::kernel_isa want = si::transpose_kernel_isa(
                            kisa(), si::op_src0, w, f.dims[f.ndims - 2],
                            call_lines(f), si::tiles_may_stream(f),
                            f.strides[si::op_src0][f.ndims - 1], false,
                            si::this_cpu_tuning());
                    const si::transpose_kernel *tr = plan.transpose[1];
                    KT_EXPECT(fails,
                              ::testing::AssertionResult(
                                      f.piece == k && tr
                                      && tr->key().isa == want
                                      && (k >= 8 || want == kisa()))
                                      << plan.kernel_str() << " "
                                      << si::folded2str(f),
                              desc);
                }
                run_guarded_1_to_3(fails, p, plan, desc, g);
                if (fails >= 6)
                    return;
            }
}

TEST_P(kernel_layouts_guard, DstPiecesAgainstGuards) {
    // Row-major inputs [A, B, C] and a dst stored with every dim reversed
    // (strides {1, A, A * B}; a 4-D [A, 2, B, C] stored (C, B, 2, A) too):
    // the fold follows the inputs' order, the tile dim is A, and dst's
    // lines of the row B * C come in pieces of C (docs/broadcast-folding.md,
    // step 7's mirror): a transpose call per piece. Pieces of 3 to 31
    // columns, tile dims around the vector and register tile sizes and of
    // more rows than a piece of them fits the scratch, rows long enough
    // for tiles narrower than the row (cut inside a piece), a
    // 0-D src_1 beside them; regular and non-temporal stores, every tensor
    // against a guard page at either end, 1 to 3 threads, bit for bit
    // against the reference.
    auto &g = rng();
    int fails = 0;
    // Plans `p` with regular and non-temporal stores, expects a JIT plan
    // whose fold `folded_ok` accepts, and runs it against the guard pages.
    const auto plan_and_run = [&](const si::select_nd &p,
                                  const auto &folded_ok) {
        for (bool nt : { false, true }) {
            const si::select_plan plan =
                    si::plan_select(p, nt ? si::nt_candidate_bytes() : 0);
            const std::string desc = nd_str(p) + (nt ? " (nt)" : " (regular)");
            KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
            KT_EXPECT(fails,
                      ::testing::AssertionResult(folded_ok(plan))
                              << si::folded2str(plan.folded) << " "
                              << plan.kernel_str(),
                      desc);
            run_guarded_1_to_3(fails, p, plan, desc, g);
            if (fails >= 6)
                return;
        }
    };
    const std::vector<dims_t> shapes = {
        { 17, 5, 3 },
        { 64, 9, 10 },
        { 65, 7, 22 },
        { 130, 3, 31 },
        { 33, 300, 7 },
        { 257, 700, 5 },
        { 16, 2, 3, 13 },
        { 40, 2, 5, 9 },
        // More rows than a piece of them fits the tiles' scratch: column
        // blocks of piece_run_bytes, whole rows or cut into pieces.
        { 1100, 6, 5 },
        { 5500, 3, 3 },
        { 1100, 40, 5 },
    };
    for (int w : { 1, 2, 4, 8 })
        for (const dims_t &d : shapes)
            for (bool scalar_src1 : { false, true }) {
                const int64_t n = [&] {
                    int64_t e = 1;
                    for (int64_t x : d)
                        e *= x;
                    return e;
                }();
                if (n * w > (int64_t(8) << 20) || (scalar_src1 && w != 2))
                    continue;
                perm_t rev(d.size());
                for (size_t k = 0; k < d.size(); ++k)
                    rev[k] = static_cast<int>(d.size() - 1 - k);
                nd_spec ns = full_spec(d, w);
                ns.strides[si::op_dst] = perm_strides(d, rev);
                if (scalar_src1) {
                    ns.in[2] = {};
                    ns.strides[2] = {};
                    ns.dst_from_inputs = false;
                    ns.dst = d;
                }
                const si::select_nd p = make_nd(ns);
                // dims [A, mid..., B, C]: dst's B lies A x mid apart.
                const size_t nd = d.size();
                const int64_t c = d[nd - 1], b = d[nd - 2], a = d[0];
                int64_t mid = 1;
                for (size_t k = 1; k + 2 < nd; ++k)
                    mid *= d[k];
                plan_and_run(p, [&](const si::select_plan &plan) {
                    const si::select_folded &f = plan.folded;
                    return f.mode[si::op_dst] == si::inner_mode::transposed
                           && f.piece == c && f.inner() == b * c
                           && f.dims[f.ndims - 2] == a
                           && f.piece_stride[si::op_dst] == a * mid * w
                           && !plan.kernel_dt;
                });
                if (fails >= 6)
                    return;
            }
    // Rows of dst_piece_row_bytes or more keep their fold: a tile per
    // index of B.
    for (int w : { 1, 4 }) {
        const dims_t d = { 40, 9, si::dst_piece_row_bytes / w };
        nd_spec ns = full_spec(d, w);
        ns.strides[si::op_dst] = perm_strides(d, { 2, 1, 0 });
        const si::select_nd p = make_nd(ns);
        const si::select_plan plan = si::plan_select(p, 0);
        KT_EXPECT(fails,
                  ::testing::AssertionResult(plan.folded.piece == 0
                                             && plan.folded.inner() == d[2])
                          << si::folded2str(plan.folded),
                  nd_str(p));
        run_guarded_1_to_3(fails, p, plan, nd_str(p), g);
    }
    // Inputs whose rows of C are padded alike to a pitch of C + pad (every
    // pitch above the row: perm_strides' pad), dst reversed, padded or not:
    // where the padding is at most C columns and under 64 bytes in every
    // input, the long row runs through it, B - 1 pitches and a row, and dst
    // stores only the pieces (the columns between them are no one's); a 0-D
    // src_1 beside them reads the same. More padding, or unlike from input
    // to input, keeps the tile per index of B.
    struct padded_case {
        dims_t d;
        int64_t pad[3]; ///< cond, src_0, src_1 (-1: a 0-D src_1)
        int64_t dst_pad;
    };
    const std::vector<padded_case> padded = {
        { { 40, 9, 10 }, { 6, 6, 6 }, 0 },
        { { 70, 5, 3 }, { 1, 1, -1 }, 2 },
        { { 33, 13, 17 }, { 17, 17, 17 }, 5 },
        { { 18, 2, 4, 7 }, { 3, 3, 3 }, 1 },
        { { 65, 6, 31 }, { 7, 7, 7 }, 0 },
        { { 1500, 7, 9 }, { 3, 3, 3 }, 0 },
        { { 40, 9, 10 }, { 11, 11, 11 }, 0 },
        { { 40, 9, 10 }, { 6, 2, 6 }, 0 },
    };
    for (int w : { 1, 2, 4, 8 })
        for (const padded_case &pc : padded) {
            const dims_t &d = pc.d;
            const size_t nd = d.size();
            perm_t rev(nd), fwd(nd);
            for (size_t k = 0; k < nd; ++k) {
                fwd[k] = static_cast<int>(k);
                rev[k] = static_cast<int>(nd - 1 - k);
            }
            nd_spec ns = full_spec(d, w);
            for (int op = 0; op < 3; ++op)
                ns.strides[op] = perm_strides(d, fwd, pc.pad[op]);
            ns.strides[si::op_dst] = perm_strides(d, rev, pc.dst_pad);
            if (pc.pad[2] < 0) {
                ns.in[2] = {};
                ns.strides[2] = {};
                ns.dst_from_inputs = false;
                ns.dst = d;
            }
            const si::select_nd p = make_nd(ns);
            const int64_t c = d[nd - 1], b = d[nd - 2], pad = pc.pad[0];
            const bool pieces = pad == pc.pad[1]
                                && (pad == pc.pad[2] || pc.pad[2] < 0)
                                && pad <= c && pad * w < 64
                                && c * w < si::dst_piece_row_bytes;
            // Where the CPU's tuning prefers it (cpu_tuning::
            // dt_over_padded_dst_pieces), padded rows the one-pass block
            // kernel takes keep their fold: f32 rows of 31 (whole blocks of
            // 16 columns) 65 apart in dst, at least.
            const bool block_first =
                    pieces && pad > 0
                    && si::this_cpu_tuning().dt_over_padded_dst_pieces;
            const bool block =
                    block_first && jit() && w == 4 && c == 31 && b == 6;
            plan_and_run(p, [&](const si::select_plan &plan) {
                const si::select_folded &f = plan.folded;
                const bool rows = f.piece == 0 && f.inner() == c;
                if (block_first && (plan.kernel_dt || block))
                    return rows && plan.kernel_dt != nullptr;
                return pieces ? f.piece == c && f.piece_pitch == c + pad
                                        && f.inner() == (c + pad) * (b - 1) + c
                              : rows;
            });
            if (fails >= 6)
                return;
        }
}

TEST_P(kernel_layouts_guard, PaddedPiecesAgainstGuards) {
    // Step 7 through padding (docs/broadcast-folding.md): [A, B, C] with
    // one input stored with every dim reversed (its contiguous dim A is
    // the tile dim) and dst and the other inputs row-major, their rows of
    // C padded alike to a pitch of C + pad (perm_strides' pad). Where the
    // padding is at most C columns and under 64 bytes in each, the long row
    // runs through it, B - 1 pitches and a row, the reversed input's pieces
    // lie a pitch apart in its scratch, and the row kernel runs each row's
    // pieces as one call's rows (the padded short rows' stream where it
    // takes them): no byte of dst's padding is written, so no streaming
    // stores. More padding, unlike from operand to operand, or rows of
    // padded_piece_row_bytes or more, keep the fold of rows of C. A 0-D cond
    // runs the generic kernel over the pieces; rows long enough for tiles
    // narrower than the row take tiles of whole pieces. Every tensor
    // against a guard page at either end, 1 to 3 threads, bit for bit
    // against the reference.
    auto &g = rng();
    int fails = 0;
    struct padded_case {
        dims_t d;
        int64_t pad[4]; ///< cond (-1: 0-D), src_0, src_1 (-1: 0-D), dst
        int op;         ///< the reversed input
    };
    const std::vector<padded_case> cases = {
        { { 40, 9, 10 }, { 6, 6, 6, 6 }, 1 },
        { { 70, 5, 3 }, { 1, 1, -1, 1 }, 0 },
        { { 33, 13, 17 }, { 17, 17, 17, 17 }, 2 },
        { { 65, 6, 31 }, { 7, 7, 7, 7 }, 1 },
        { { 1500, 7, 9 }, { 3, 3, 3, 3 }, 2 },
        { { 129, 300, 7 }, { 2, 2, 2, 2 }, 1 },
        { { 130, 60, 10 }, { -1, 8, 8, 8 }, 2 },
        { { 64, 9, 5 }, { -1, 3, 3, 3 }, 1 },
        { { 40, 9, 10 }, { 11, 11, 11, 11 }, 1 },
        { { 40, 9, 10 }, { 2, 6, 6, 6 }, 1 },
        { { 40, 9, 10 }, { 6, 6, 6, 0 }, 2 },
        { { 40, 5, 20 }, { 5, 5, 5, 5 }, 1 },
    };
    for (int w : { 1, 2, 4, 8 })
        for (const padded_case &pc : cases)
            for (bool nt : { false, true }) {
                const dims_t &d = pc.d;
                nd_spec ns = full_spec(d, w);
                for (int op = 0; op < 4; ++op)
                    ns.strides[op] = perm_strides(
                            d, { 0, 1, 2 }, std::max<int64_t>(pc.pad[op], 0));
                for (int op : { 0, 2 })
                    if (pc.pad[op] < 0) {
                        ns.in[op] = {};
                        ns.strides[op] = {};
                    }
                ns.strides[pc.op] = perm_strides(d, { 2, 1, 0 });
                const si::select_nd p = make_nd(ns);
                const si::select_plan plan =
                        si::plan_select(p, nt ? si::nt_candidate_bytes() : 0);
                const std::string desc = "operand " + std::to_string(pc.op)
                                         + " " + nd_str(p)
                                         + (nt ? " (nt)" : " (regular)");
                KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                const int64_t c = d[2], b = d[1], pad = pc.pad[3];
                bool alike = pad > 0 && pad <= c
                             && c * w < si::padded_piece_row_bytes;
                for (int op = 0; op < 3; ++op)
                    alike = alike
                            && (op == pc.op || pc.pad[op] < 0
                                || (pc.pad[op] == pad
                                    && pad * (op == 0 ? 1 : w) < 64));
                const si::select_folded &f = plan.folded;
                KT_EXPECT(
                        fails,
                        ::testing::AssertionResult(
                                alike ? f.gapped_pieces() && f.piece == c
                                                && f.piece_pitch == c + pad
                                                && f.inner()
                                                           == (c
                                                               + pad) * (b - 1)
                                                                      + c
                                                && !plan.kernel_nt
                                      : f.piece == 0 && f.inner() == c)
                                << si::folded2str(f) << " "
                                << plan.kernel_str(),
                        desc);
                run_guarded_1_to_3(fails, p, plan, desc, g);
                if (fails >= 6)
                    return;
            }
}

TEST_P(kernel_layouts_guard, ShortRowsInTilesAgainstGuards) {
    // Tiles whose rows (under 32 bytes) do not lie back to back run the
    // short-row kernel (kernel_key::row_len): channels-last pixels of c
    // channels padded to c + pad in every operand but one input stored
    // NCHW (transposed), an input with every dim reversed over [N, C, W]
    // with W short and the others' rows padded by 1 (step 7 through the
    // padding: pieces of W a pitch of W + 1 apart), and one stored [W, N,
    // C] whose tile dim C continues into N (row groups). Where the
    // transposed input's kernel writes its scratch at the pitch as packed
    // blocks (transpose_packs_gaps), or its pieces lie a pitch apart, the
    // tiles stream the padded rows (row_pitch) where the kernel takes the
    // pitch; otherwise a row at a time. Images 300 pixels wide take
    // panels of 256 rows and a tail of 44, of any element width (at most
    // 16 columns).
    // Every tensor against a guard page at either end, 1 to 3 threads,
    // bit for bit against the reference.
    auto &g = rng();
    int fails = 0;
    int runs = 0, streams = 0, groups = 0;
    for (int w : { 1, 2, 4, 8 })
        for (int64_t c : { 2, 3, 5, 7 })
            for (int shape = 0; shape < 5; ++shape) {
                if (c * w >= 32)
                    continue;
                dims_t d;
                dims_t st[4];
                const bool images = shape < 2 || shape == 4;
                if (images) {
                    // [N, C, H, W] images, NHWC padded by 1 or 3, one
                    // input (cond, then src_1) NCHW.
                    d = shape == 0   ? dims_t { 2, c, 9, 37 }
                        : shape == 1 ? dims_t { 1, c, 65, 33 }
                                     : dims_t { 1, c, 2, 300 };
                    const int64_t pad = shape == 1 ? 3 : 1;
                    for (int op = 0; op < 4; ++op)
                        st[op] = perm_strides(d, { 0, 2, 3, 1 }, pad);
                    st[shape == 0 ? 0 : 2] = perm_strides(d, { 0, 1, 2, 3 });
                } else if (shape == 2) {
                    // Rows padded by 1 but src_0's, whose every dim is
                    // reversed: step 7 through the padding (pieces of c a
                    // pitch of c + 1 apart), each long row's pieces one
                    // call's rows.
                    d = { 4 + c, 6, c };
                    for (int op = 0; op < 4; ++op)
                        st[op] = perm_strides(d, { 0, 1, 2 }, 1);
                    st[1] = perm_strides(d, { 2, 1, 0 });
                } else {
                    // [A, B, c]: rows of c padded by 1 along B, A's rows
                    // 2 more apart; src_0 stored [c, A, B], whose tile dim
                    // B continues into A: groups of rows that lie c + 1
                    // apart within each group (a stream where c + 1 is 4
                    // or 8).
                    d = { 5, 7, c };
                    for (int op = 0; op < 4; ++op)
                        st[op] = { 7 * (c + 1) + 2, c + 1, 1 };
                    st[1] = { 7, 1, 35 };
                }
                // The rows' pitch in the operands read as they are (row
                // groups: the tile dim's stride, within a group).
                const int64_t pitch = images ? c + (shape == 1 ? 3 : 1) : c + 1;
                const si::select_nd p = full_nd(d, st, w);
                const si::select_plan plan = si::plan_select(p, 0);
                const std::string desc = nd_str(p);
                KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                if (jit()) {
                    const si::select_folded &f = plan.folded;
                    const int t = shape == 0 ? 0 : images ? 2 : 1;
                    si::kernel_key k = plan.kernel->key();
                    k.row_pitch = static_cast<uint8_t>(pitch);
                    const bool pieces = shape == 2;
                    const bool stream =
                            plan.transpose[t]
                            && (pieces
                                || si::transpose_packs_gaps(
                                        plan.transpose[t]->key(), c, pitch))
                            && si::row_len_supported(k);
                    KT_EXPECT(fails,
                              ::testing::AssertionResult(
                                      f.has_transposed()
                                      && f.mode[t] == si::inner_mode::transposed
                                      && f.mode[si::op_dst]
                                                 == si::inner_mode::vector
                                      && plan.kernel->key().row_len == c
                                      && plan.kernel->key().row_pitch
                                                 == (stream ? pitch : 0)
                                      && (images || f.group
                                          || (pieces && f.gapped_pieces()
                                              && f.piece == c
                                              && f.piece_pitch == pitch)))
                                      << plan.kernel_str() << " "
                                      << si::folded2str(f),
                              desc);
                    if (shape == 4)
                        KT_EXPECT(fails,
                                  ::testing::AssertionResult(
                                          si::plan_tiles(f, 1).rows == 256)
                                          << si::folded2str(f),
                                  desc);
                    ++runs;
                    streams += stream;
                    groups += shape == 3 && stream;
                }
                run_guarded_1_to_3(fails, p, plan, desc, g);
                if (fails >= 6)
                    return;
            }
    if (jit()) {
        EXPECT_GT(runs, 30);
        EXPECT_GE(streams, 4);
        EXPECT_GE(groups, 2); // row groups streamed
    }
}

TEST_P(kernel_layouts_guard, StagingCopiesTransposeIntoTheBufferAgainstGuards) {
    // Inputs in three dim orders stage one input (src/dispatch.cpp,
    // staged_inputs); where its copy's fold transposes it, the copy's tiles
    // transpose it straight into the staging buffer, with no scratch and no
    // row kernel (select_plan::copy_by_transpose), in pieces and in row
    // groups where the fold has them (every dim of the input reversed).
    // Each copy's plan runs on its own, as execute does (a true 0-D cond),
    // its input and its buffer each against a guard page at either end, at 1
    // to 3 threads, compared with ref_select bit for bit.
    if (!jit())
        GTEST_SKIP() << "no staging without a JIT ISA";
    auto &g = rng();
    int fails = 0;
    int kinds[3] = {}; // plain tiles, pieces, row groups
    const perm_t reversed = { 3, 2, 1, 0 }, nhwc = { 0, 2, 3, 1 };
    for (int w : { 1, 2, 4, 8 })
        for (const dims_t &d :
             { dims_t { 3, 5, 7, 9 }, dims_t { 4, 6, 17, 33 },
               dims_t { 130, 3, 4, 5 }, dims_t { 2, 65, 3, 40 },
               dims_t { 17, 33, 2, 70 } })
            for (const perm_t &order : { reversed, nhwc }) {
                // w == 1: cond in `order`, src_0 in the other, 4-byte
                // sources: cond staged. Else cond row-major, src_0 in
                // `order`, src_1 in the other: src_0 staged (the first of
                // the two of the fewest bytes).
                nd_spec sp = full_spec(d, w == 1 ? 4 : w);
                const perm_t &other = order == reversed ? nhwc : reversed;
                const int staged_op = w == 1 ? si::op_cond : si::op_src0;
                sp.strides[staged_op] = perm_strides(d, order);
                sp.strides[staged_op + 1] = perm_strides(d, other);
                const si::select_nd p = make_nd(sp);
                const si::select_plan plan = si::plan_select(p, 0);
                const std::string desc = nd_str(p);
                if (plan.staged.size() != 1 || plan.staged[0].op != staged_op) {
                    KT_EXPECT(fails,
                              ::testing::AssertionFailure()
                                      << "staged " << plan.staged.size()
                                      << " inputs: " << plan.kernel_str(),
                              desc);
                    continue;
                }
                const si::select_nd &c = plan.staged[0].copy;
                const si::select_plan &cp = *plan.staged[0].plan;
                const si::select_folded &f = cp.folded;
                // The input is contiguous along a dim on which dst is not:
                // its copy transposes it, by the transposing kernel alone.
                KT_EXPECT(fails,
                          ::testing::AssertionResult(
                                  cp.copy_by_transpose && cp.transpose[1]
                                  && cp.kernel_str() == cp.transpose[1]->name())
                                  << cp.kernel_str() << " "
                                  << si::folded2str(f),
                          desc);
                ++kinds[f.group ? 2 : f.piece ? 1 : 0];
                const size_t in_bytes = span_bytes(c, si::op_src0);
                const size_t out_bytes = span_bytes(c, si::op_dst);
                guard_set gs(std::max(in_bytes, out_bytes));
                ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
                const uint8_t one = 1;
                for (bool at_end : { true, false })
                    for (int nthr : { at_end ? 2 : 1, 3 }) {
                        gs.fill(g, std::max(in_bytes, out_bytes));
                        const void *src = gs.place(1, in_bytes, at_end);
                        void *dst = gs.place(3, out_bytes, !at_end);
                        std::vector<uint8_t> want(out_bytes);
                        si::ref_select(c, &one, src, src, want.data(), 1);
                        si::execute_plan(cp, c, &one, src, src, dst, nthr);
                        KT_EXPECT(fails,
                                  bytes_equal(dst, want.data(), out_bytes,
                                              c.elem_size),
                                  desc + " copy " + si::folded2str(f)
                                          + (at_end ? " input at end"
                                                    : " input at begin")
                                          + " nthreads "
                                          + std::to_string(nthr));
                    }
                if (fails >= 6)
                    return;
            }
    for (int k = 0; k < 3; ++k)
        EXPECT_GT(kinds[k], 0) << "kind " << k << " of the copies' folds";
}

SELGRAPH_INSTANTIATE_PER_ISA(kernel_layouts_guard);

} // namespace
} // namespace selgraph_test
