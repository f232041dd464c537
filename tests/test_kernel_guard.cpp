// Guard-page tests: every tensor is placed so that its last byte is right
// before a PROT_NONE page (and, separately, its first byte right after
// one). Any read or write outside a tensor, in a tail, a head of the
// non-temporal kernels or a broadcast scalar, crashes the test binary:
// that is the point. Every kernel pattern and every tail length
// n = 1 .. 2 * unroll * lanes + 1 runs for each ISA and element size,
// through the kernel ABI and through plan_select + execute_plan.
#include "kernel_test_utils.hpp"

namespace selgraph_test {
namespace {

using kernel_guard = isa_test;

std::vector<si::kernel_key> guard_keys(si::kernel_isa isa, int w, int unroll) {
    std::vector<si::kernel_key> keys;
    for (int cs = 0; cs < 2; ++cs)
        for (int inv = 0; inv < 2; ++inv) {
            if (cs && inv)
                continue;
            for (int as = 0; as < 2; ++as)
                for (int bs = 0; bs < 2; ++bs)
                    for (int nt = 0; nt < 2; ++nt) {
                        keys.push_back(
                                make_key(isa, w, cs, inv, as, bs, nt, unroll));
                        if (nt)
                            keys.push_back(make_pf_key(isa, w, cs, inv, as, bs,
                                                       unroll));
                    }
        }
    return keys;
}

TEST_P(kernel_guard, KernelAbiEveryPatternEveryTail) {
    auto &g = rng();
    int fails = 0;
    for (int w : { 1, 2, 4, 8 })
        for (int unroll : { 4, 1 }) {
            const auto keys = guard_keys(kisa(), w, unroll);
            std::vector<std::shared_ptr<const si::select_kernel>> kernels;
            for (const auto &k : keys)
                kernels.push_back(jit() ? si::create_jit_select_kernel(k)
                                        : nullptr);
            const uint64_t nmax = 2 * unroll * lanes(w) + 1;
            const uint64_t rows = 2;
            guard_set gs(rows * nmax * w);
            ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
            for (uint64_t n = 1; n <= nmax; ++n) {
                gs.fill(g);
                for (size_t ki = 0; ki < keys.size(); ++ki)
                    for (bool at_end : { true, false }) {
                        abi_case c;
                        c.key = keys[ki];
                        c.n = n;
                        c.rows = rows;
                        // Both ways of ending a row, at each length.
                        c.elem_tail = (n + (at_end ? 0 : 1)) % 2;
                        // The row prefetch: the second row from the first.
                        c.pf_rows = c.key.row_prefetch ? 1 : 0;
                        // Dense rows; a scalar operand has one element per
                        // row.
                        const int64_t wn = static_cast<int64_t>(n) * w;
                        c.stride[0] =
                                c.key.cond_scalar ? 1 : static_cast<int64_t>(n);
                        c.stride[1] = c.key.src0_scalar ? w : wn;
                        c.stride[2] = c.key.src1_scalar ? w : wn;
                        c.stride[3] = wn;
                        uint8_t *p[4];
                        for (int op = 0; op < 4; ++op)
                            p[op] = gs.place(op, c.bytes(op), at_end);
                        const auto fn =
                                kernels[ki] ? kernels[ki]->fn() : nullptr;
                        KT_EXPECT(fails,
                                  run_abi_case(c, fn, p[0], p[1], p[2], p[3]),
                                  c.str()
                                          + (at_end ? " (tensors end at a "
                                                      "guard page)"
                                                    : " (tensors start at a "
                                                      "guard page)"));
                    }
            }
        }
}

TEST_P(kernel_guard, NonTemporalHeadsAgainstGuards) {
    // Non-temporal rows whose dst does not start a line: AVX-512 stores
    // the head in the top lanes of the aligned vector before the body, its
    // lanes before the row masked off; AVX2 by whole vectors and parts that
    // stay off the streamed lines. Each input starts right after a guard
    // page, so that the head's masked-off lanes lie in it; dst starts `off`
    // elements into its region, whose bytes before it must keep theirs;
    // rows padded by 0 or 3 elements (dst's gaps keep their bytes), lengths
    // around the head, the vector and the line.
    auto &g = rng();
    int fails = 0;
    for (int w : { 1, 2, 4, 8 }) {
        const int64_t L = lanes(w);
        std::vector<si::kernel_key> keys;
        for (const auto &k : guard_keys(kisa(), w, 4))
            if (k.nt_stores)
                keys.push_back(k);
        std::vector<std::shared_ptr<const si::select_kernel>> kernels;
        for (const auto &k : keys)
            kernels.push_back(jit() ? si::create_jit_select_kernel(k)
                                    : nullptr);
        const int64_t line = 64 / w;
        for (int64_t off : { int64_t { 1 }, line / 2 + 1, line - 1 }) {
            if (off < 1 || off >= line)
                continue;
            const int64_t head = line - off;
            for (int64_t n :
                 { int64_t { 1 }, head - 1, head, head + 1, head + L + 3,
                   head + line + L / 2, 3 * line + 1 })
                for (int64_t gap : { 0, 3 }) {
                    if (n < 1)
                        continue;
                    const int64_t rows = 3;
                    const size_t cap =
                            static_cast<size_t>((rows * (n + gap) + L) * w);
                    guard_set gs(cap);
                    ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
                    gs.fill(g);
                    for (size_t ki = 0; ki < keys.size(); ++ki) {
                        abi_case c;
                        c.key = keys[ki];
                        c.n = static_cast<uint64_t>(n);
                        c.rows = rows;
                        c.pf_rows = c.key.row_prefetch ? 1 : 0;
                        const int64_t pitch = n + gap;
                        c.stride[0] = c.key.cond_scalar ? 1 : pitch;
                        c.stride[1] = c.key.src0_scalar ? w : pitch * w;
                        c.stride[2] = c.key.src1_scalar ? w : pitch * w;
                        c.stride[3] = pitch * w;
                        uint8_t *p[4];
                        for (int op = 0; op < 3; ++op)
                            p[op] = gs.place(op, c.bytes(op), false);
                        uint8_t *const region = gs.place(3, 0, false);
                        p[3] = region + off * w;
                        const std::vector<uint8_t> before(region, p[3]);
                        const std::string desc = c.str() + " dst "
                                                 + std::to_string(off)
                                                 + " elements into its page";
                        KT_EXPECT(fails,
                                  run_abi_case(c,
                                               kernels[ki] ? kernels[ki]->fn()
                                                           : nullptr,
                                               p[0], p[1], p[2], p[3]),
                                  desc);
                        KT_EXPECT(fails,
                                  bytes_equal(region, before.data(),
                                              before.size(), 1),
                                  desc + ": the bytes before dst");
                    }
                }
        }
    }
}

TEST_P(kernel_guard, PlanEveryBroadcastPatternEveryTail) {
    // The dispatcher's kernels on the folded problems of the broadcast
    // patterns, each tensor against a guard page, with 2 threads and the
    // non-temporal variant on every other length.
    auto &g = rng();
    int fails = 0;
    for (int w : { 8, 4, 2, 1 }) {
        const int64_t nmax = 2 * 4 * lanes(w) + 1;
        const int64_t r = 2;
        // Largest operand: [2,3,r,n].
        guard_set gs(static_cast<size_t>(6 * r * nmax * w));
        ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
        for (int64_t n = 1; n <= nmax; ++n) {
            // Every pattern of broadcast_patterns (the largest operand is
            // [2,3,r,n]).
            const std::vector<pattern> pats = broadcast_patterns(r, n);
            // Both sources scalar along the row: explicit stride-0 rows.
            nd_spec both;
            both.w = w;
            for (int op = 0; op < 3; ++op)
                both.in[op] = { r, n };
            both.strides[1] = { 1, 0 };
            both.strides[2] = { 0, 0 };
            std::vector<std::pair<std::string, si::select_nd>> probs;
            for (const auto &pt : pats)
                probs.emplace_back(pt.name, make_nd(pt.c, pt.a, pt.b, w));
            probs.emplace_back("both_src_stride0", make_nd(both));
            gs.fill(g);
            for (const auto &pr : probs) {
                const si::select_nd &p = pr.second;
                const si::select_plan plan = si::plan_select(
                        p, n % 2 ? si::nt_candidate_bytes() : 0);
                KT_EXPECT(fails, plan_takes(plan, kisa(), jit()),
                          pr.first + " " + nd_str(p));
                for (bool at_end : { true, false })
                    KT_EXPECT(fails, run_guarded(gs, p, plan, at_end, 2),
                              pr.first + " " + nd_str(p)
                                      + (at_end ? " at end" : " at begin"));
            }
        }
    }
}

TEST_P(kernel_guard, ShortRowsAtMixedStridesAgainstGuards) {
    // Rows of n elements under 32 bytes that no dim merges, each operand
    // at a row stride of its own (cond n + 1 bytes, src_0 2n + 3
    // elements, dst n or n + 2), src_1 padded, one element per row or 0-D:
    // the short-row kernel (kernel_key::row_len alone: AVX-512 four rows
    // an iteration, AVX2 one), every part size and the element-by-element
    // rows, row counts around the unroll. Each tensor ends right before a
    // guard page; dst's gaps keep their bytes; 1 to 3 threads.
    auto &g = rng();
    int fails = 0;
    for (int w : { 1, 2, 4, 8 })
        for (int64_t n = 2; n * w < 32; n += (n < 9 ? 1 : 5)) {
            for (int64_t rows : { 2, 3, 5, 8, 9, 103 })
                for (int kind = 0; kind < 3; ++kind) {
                    const dims_t d = { rows, n };
                    nd_spec s = full_spec(d, w);
                    s.strides[0] = { n + 1, 1 };
                    s.strides[1] = { 2 * n + 3, 1 };
                    s.strides[3] = { kind == 1 ? n : n + 2, 1 };
                    if (kind == 0) {
                        s.strides[2] = { n + 5, 1 };
                    } else if (kind == 1) {
                        // One src_1 element per row.
                        s.in[2] = { rows, 1 };
                        s.strides[2] = { 3, 1 };
                    } else {
                        s.in[2] = {};
                        s.strides[2] = {};
                    }
                    if (kind != 0) {
                        s.dst_from_inputs = false;
                        s.dst = d;
                    }
                    const si::select_nd p = make_nd(s);
                    const si::select_plan plan =
                            si::plan_select(p, si::nt_candidate_bytes());
                    const std::string desc =
                            "kind " + std::to_string(kind) + " " + nd_str(p);
                    KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                    if (jit())
                        KT_EXPECT(fails,
                                  ::testing::AssertionResult(
                                          plan.kernel->key().row_len == n
                                          && !plan.kernel->key().row_pitch
                                          && !plan.kernel_nt)
                                          << plan.kernel_str(),
                                  desc);
                    guard_set gs(static_cast<size_t>(rows * (2 * n + 5) * w));
                    ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
                    gs.fill(g);
                    run_guarded_1_to_3(fails, gs, p, plan, desc);
                }
        }
}

TEST_P(kernel_guard, PaddedShortRowsAgainstGuards) {
    // Rows of n >= 2 elements padded to a pitch of P > n elements, in every
    // operand (channels-last pixels of n channels padded to P, cond
    // padded alike), a 0-D src_1 or one as padded, a 0-D src_0 (swapped
    // into src_1's slot): the kernel that walks a call's rows as one
    // stream and stores only the row lanes (kernel_key::row_pitch: AVX-512
    // under masks, rotating where P does not divide the lanes; AVX2 in
    // pieces where P divides them), where P is at most a vector, else
    // rows under 32 bytes one at a time in parts (kernel_key::row_len
    // alone: AVX2's P of 3, 6, 10 and 25, and the pitches past a vector); the
    // gaps
    // of dst keep their bytes, nothing past the last row's last element is
    // read or written (each tensor ends right before a guard page, the
    // inputs' last gap with it), pixel counts around the vector and the
    // unroll, 1 to 3 threads.
    auto &g = rng();
    int fails = 0;
    for (int w : { 4, 2, 1, 8 }) {
        const int64_t lanes = 64 / w;
        for (int64_t pitch : { 2, 4, 8, 16, 32, 64, 3, 6, 10, 25, 85 })
            for (int64_t n : { int64_t { 2 }, pitch / 2, pitch - 1 }) {
                if (n < 2 || n >= pitch)
                    continue;
                for (int64_t pixels : { int64_t { 2 }, lanes / pitch + 1,
                                        4 * lanes + 3, int64_t { 333 } }) {
                    if (pixels < 2)
                        continue;
                    const dims_t d = { 3, pixels, n };
                    const dims_t st = { pixels * pitch, pitch, 1 };
                    const int64_t span = 3 * pixels * pitch;
                    guard_set gs(static_cast<size_t>(span * w));
                    ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
                    gs.fill(g);
                    for (int kind = 0; kind < 4; ++kind) {
                        nd_spec s = full_spec(d, w);
                        for (int op = 0; op < 4; ++op)
                            s.strides[op] = st;
                        // 1: a 0-D src_1; 2: a 0-D src_0; 3: both 0-D (a
                        // fill of dst's rows: no kernel of padded rows).
                        for (int op : { 1, 2 })
                            if (kind == 3 || kind == 3 - op) {
                                s.in[op] = {};
                                s.strides[op] = {};
                                s.dst_from_inputs = false;
                                s.dst = d;
                            }
                        const si::select_nd p = make_nd(s);
                        const si::select_plan plan = si::plan_select(
                                p, kind == 0 ? si::nt_candidate_bytes() : 0);
                        const std::string desc =
                                "kind " + std::to_string(kind) + " pitch "
                                + std::to_string(pitch) + " " + nd_str(p);
                        KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                        // AVX2: 32-byte vectors.
                        const bool avx2 = kisa() == si::kernel_isa::avx2;
                        // AVX-512 any pitch up to a vector (rotating
                        // masks where it does not divide the lanes).
                        const bool gaps =
                                kind != 3
                                && ((kisa() == si::kernel_isa::avx512_core
                                     && pitch <= lanes)
                                    || (avx2 && (lanes / 2) % pitch == 0));
                        // Else rows under 32 bytes: the short-row kernel.
                        const bool short_rows =
                                kind != 3 && !gaps && n * w < 32;
                        const bool one_len = gaps || short_rows;
                        if (jit())
                            KT_EXPECT(fails,
                                      ::testing::AssertionResult(
                                              plan.kernel->key().row_pitch
                                                      == (gaps ? pitch : 0)
                                              && plan.kernel->key().row_len
                                                         == (one_len ? n : 0)
                                              && (!one_len || !plan.kernel_nt))
                                              << plan.kernel_str(),
                                      desc);
                        run_guarded_1_to_3(fails, gs, p, plan, desc);
                    }
                }
            }
    }
}

TEST_P(kernel_guard, PerRowInputsOverShortRowsAgainstGuards) {
    // An input of one element per row over rows of n elements of at most
    // 32 bytes (a per-pixel mask or value over channels-last pixels): each
    // call's elements are repeated along their rows into a buffer
    // (select_plan::expand), where they lie back to back 64 bytes at a
    // time by byte permutes (AVX-512 plans on CPUs with AVX512_VBMI; the
    // rest under one mask), else 32 bytes at a time by AVX2's byte
    // shuffles within lanes (the rest a cond's in runs of 16 rows, then
    // one row or element at a time); the row kernel reads it as a vector.
    // A cond always; a source without tiles and not in rows of 16 bytes. Rows
    // of 33 to 63 bytes keep the kernel that branches per row. Kinds, per-row
    // cond: 0, every other operand's rows back to back (the rows merge into
    // one); 1, dst's rows padded (short rows kept); 2, cond's bytes 3 apart
    // (the rows one at a time); 3, src_1 one element per row too (merged where
    // it expands); 4, a 0-D src_0 (in the src_1 slot, the cond inverted;
    // merged); 5, src_1 transposed (tiles: each strip's cond expanded into the
    // scratch, the strip one row); 6, the same with dst's rows padded (short
    // rows in tiles). Per-row source, full cond: 7, src_1 (merged); 8, src_0
    // beside a 0-D src_1 (merged); 9, src_0 and 10, src_1 with dst's rows
    // padded. Row counts around the runs of 16, 32 and 64, and with a
    // per-row source or in kind 0 enough for several calls (a call's
    // buffer of 4096 bytes per input); each tensor ends
    // right before a guard page (a run's loads never read past the rows'), 1 to
    // 3 threads, raw values.
    auto &g = rng();
    int fails = 0;
    const bool sources = kisa() != si::kernel_isa::ref;
    const bool permutes =
            kisa() == si::kernel_isa::avx512_core && si::cpu_has_avx512_vbmi();
    for (int w : { 4, 2, 1, 8 })
        for (int64_t n : { 2, 3, 4, 5, 7, 8, 12, 15, 16, 17, 31, 32, 33, 63 }) {
            if (n * w >= 64)
                continue;
            const bool short_rows = n * w <= 32;
            for (int64_t rows :
                 { 2, 15, 16, 17, 33, 63, 64, 65, 100, 130, 1100 })
                for (int kind = 0; kind < 11; ++kind) {
                    const dims_t d = { rows, n };
                    nd_spec s = full_spec(d, w);
                    if (kind < 7) {
                        s.in[0] = { rows, 1 };
                        s.strides[0] = { kind == 2 ? 3 : 1, 1 };
                    }
                    if (kind == 1 || kind == 6 || kind >= 9)
                        s.strides[3] = { n + 2, 1 };
                    if (kind == 5 || kind == 6)
                        s.strides[2] = { 1, rows };
                    const int per_row_src = kind == 3 || kind == 7 || kind == 10
                                                    ? 2
                                            : kind == 8 || kind == 9 ? 1
                                                                     : 0;
                    // Calls beyond one buffer (4096 bytes an input): every
                    // per-row source, and a per-row cond merged.
                    if (rows > 1000 && !per_row_src && kind != 0)
                        continue;
                    if (per_row_src) {
                        s.in[per_row_src] = { rows, 1 };
                        s.strides[per_row_src] = { 1, 1 };
                    }
                    if (kind == 4 || kind == 8) {
                        const int zero_d = kind == 4 ? 1 : 2;
                        s.in[zero_d] = {};
                        s.strides[zero_d] = {};
                    }
                    const si::select_nd p = make_nd(s);
                    const si::select_plan plan =
                            si::plan_select(p, si::nt_candidate_bytes());
                    const std::string desc =
                            "kind " + std::to_string(kind) + " " + nd_str(p);
                    KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                    if (jit()) {
                        const bool cond_exp = kind < 7 && short_rows;
                        const bool src_exp = per_row_src && short_rows
                                             && sources && n * w != 16;
                        const bool merge = (kind == 0 || kind == 2 || kind == 4)
                                                   ? cond_exp
                                           : kind == 3 ? cond_exp && src_exp
                                           : kind == 7 || kind == 8 ? src_exp
                                                                    : false;
                        const si::select_folded &f = plan.folded;
                        const si::kernel_key &k = plan.kernel->key();
                        KT_EXPECT(
                                fails,
                                ::testing::AssertionResult(
                                        f.has_transposed()
                                                == (kind == 5 || kind == 6)
                                        && plan.expand[si::op_cond] == cond_exp
                                        && plan.expand[per_row_src ? per_row_src
                                                                   : 1]
                                                   == (per_row_src ? src_exp
                                                                   : false)
                                        && plan.expand_merged == merge
                                        && plan.expand_by_permutes
                                                   == ((cond_exp || src_exp)
                                                       && permutes)
                                        && (k.cond_scalar == 0)
                                                   == (kind >= 7 || cond_exp)
                                        && (!merge || k.row_len == 0)
                                        && k == expected_key(p, kisa(), false))
                                        << plan.kernel_str() << " expected "
                                        << si::kernel_name(expected_key(
                                                   p, kisa(), false)),
                                desc);
                    }
                    guard_set gs(static_cast<size_t>(rows * (n + 3) * w));
                    ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
                    gs.fill(g);
                    run_guarded_1_to_3(fails, gs, p, plan, desc);
                }
        }
}

using expand_guard = isa_test;

TEST_P(expand_guard, ExpandedRowsEveryLengthAgainstGuards) {
    // expand_rows alone, as a JIT plan runs it (select_plan::
    // expand_by_permutes: AVX512_VBMI's permutes in AVX-512 plans, else
    // AVX2's shuffles within lanes): one function per row length of n
    // elements of w bytes, so every n of 2 to 32 bytes a row, for row
    // counts around the runs (64 bytes of rows with permutes, 32 with
    // shuffles, and the bytes a run's loads reach) and a call's 4096
    // bytes out; rows back to back (the runs) and 3 elements apart (one
    // row at a time). The rows end right before a guard page, and so does
    // out; the 64 bytes before out must not change. Each element of out
    // must be its row's, bit for bit.
    auto &g = rng();
    int fails = 0;
    const bool permutes =
            kisa() == si::kernel_isa::avx512_core && si::cpu_has_avx512_vbmi();
    std::vector<int64_t> row_counts;
    for (int64_t r = 1; r <= 72; ++r)
        row_counts.push_back(r);
    for (int64_t r : { 95, 96, 97, 127, 128, 129, 200, 341, 682, 1365, 2048 })
        row_counts.push_back(r);
    guarded_mem from(4 * 2048 * 8), to(4096 + 64);
    ASSERT_TRUE(from.ok() && to.ok()) << "mmap/mprotect failed";
    for (int64_t w : { 1, 2, 4, 8 })
        for (int64_t n = 2; n * w <= 32; ++n)
            for (int64_t rows : row_counts) {
                if (rows * n * w > 4096)
                    continue;
                for (int64_t step : { int64_t { 1 }, int64_t { 3 } }) {
                    const auto in_bytes =
                            static_cast<size_t>(((rows - 1) * step + 1) * w);
                    const auto out_bytes = static_cast<size_t>(rows * n * w);
                    uint8_t *const src = from.at_end(in_bytes);
                    uint8_t *const out = to.at_end(out_bytes);
                    fill_bytes(src, in_bytes, g);
                    fill_bytes(out - 64, out_bytes + 64, g);
                    const std::vector<uint8_t> before(out - 64, out);
                    si::expand_rows(src, step * w, out, n, rows, w, permutes);
                    std::string bad;
                    for (int64_t r = 0; r < rows && bad.empty(); ++r)
                        for (int64_t k = 0; k < n && bad.empty(); ++k)
                            if (std::memcmp(out + (r * n + k) * w,
                                            src + r * step * w,
                                            static_cast<size_t>(w)))
                                bad = "row " + std::to_string(r) + " element "
                                      + std::to_string(k);
                    if (bad.empty()
                        && !std::equal(before.begin(), before.end(), out - 64))
                        bad = "a byte before out changed";
                    KT_EXPECT(fails,
                              ::testing::AssertionResult(bad.empty()) << bad,
                              "w " + std::to_string(w) + " n "
                                      + std::to_string(n) + " rows "
                                      + std::to_string(rows) + " step "
                                      + std::to_string(step)
                                      + (permutes ? " permutes" : " lanes"));
                }
            }
}

SELGRAPH_INSTANTIATE_PER_JIT_ISA(expand_guard);

TEST_P(kernel_guard, SteppedOperandsAgainstGuards) {
    // Operands with a step along the row: src_0 every other element and
    // dst every third, gathered and scattered per call by the stepped
    // kernels; with dst's elements 256 apart, past those kernels, the
    // reference kernel. Either must stay inside the tensors.
    auto &g = rng();
    int fails = 0;
    for (const int64_t dst_step : { 3, 256 })
        for (int w : { 8, 4, 2 })
            for (int64_t n = 1; n <= 70; ++n) {
                nd_spec s;
                s.w = w;
                for (int op = 0; op < 3; ++op)
                    s.in[op] = { 3, n };
                s.strides[1] = { 2 * n, 2 };
                s.strides[3] = { dst_step * n, dst_step };
                const si::select_nd p = make_nd(s);
                guard_set gs(static_cast<size_t>(3 * dst_step * n * w + 64));
                ASSERT_TRUE(gs.ok());
                gs.fill(g);
                const si::select_plan plan = si::plan_select(p, 0);
                KT_EXPECT(fails,
                          plan_takes(plan, kisa(), jit() && dst_step < 256),
                          nd_str(p));
                for (bool at_end : { true, false })
                    KT_EXPECT(fails,
                              run_against_guards(gs, p, plan, at_end, 2,
                                                 naive_select),
                              nd_str(p));
            }
}

TEST_P(kernel_guard, StagedDstAgainstGuards) {
    // dst every third element beside src_0 column-major with a step of 2:
    // src_0 is staged in its own order, the kernels write a buffer dense
    // in dst's order, and the stepped kernel scatters it into dst
    // (select_plan::staged_operand, op_dst). Every pass must stay inside
    // the tensors, at 1 to 3 threads.
    auto &g = rng();
    int fails = 0;
    for (int w : { 8, 4, 2, 1 })
        for (int64_t m : { 3, 17, 40, 70 })
            for (int64_t n : { 1, 2, 15, 16, 33, 70 }) {
                nd_spec s;
                s.w = w;
                for (int op = 0; op < 3; ++op)
                    s.in[op] = { m, n };
                s.strides[1] = { 2, 2 * m };
                s.strides[3] = { 3 * n, 3 };
                const si::select_nd p = make_nd(s);
                guard_set gs(static_cast<size_t>(3 * m * n * w + 64));
                ASSERT_TRUE(gs.ok());
                gs.fill(g);
                const si::select_plan plan = si::plan_select(p, 0);
                KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), nd_str(p));
                const bool dst_staged = !plan.staged.empty()
                                        && plan.staged.back().op == si::op_dst;
                // One row or one column folds without a transpose, and
                // src_0's copy (dense in its own order) with its elements
                // at most 64 bytes apart along dst's rows is gathered:
                // dst is staged only past that.
                const bool staged_want = m > 1 && n > 1 && m * w > 64;
                KT_EXPECT(fails,
                          ::testing::AssertionResult(
                                  !jit() || dst_staged == staged_want)
                                  << plan.kernel_str(),
                          nd_str(p));
                run_guarded_1_to_3(fails, gs, p, plan, nd_str(p));
            }
}

SELGRAPH_INSTANTIATE_PER_ISA(kernel_guard);

} // namespace
} // namespace selgraph_test
