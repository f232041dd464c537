// Layouts through plan_select + execute_plan (the ISA capped per test),
// against impl::ref_select and the naive oracle, bit for bit: every
// permutation of ranks 2 to 5 as the memory order, shared by all operands,
// of one input only, or of dst only; padded pitches inside those layouts;
// broadcast operands inside permuted and transposed layouts; the tiled
// (transposing) path over threads, with misaligned dst and non-temporal
// stores; the named layouts of channels-last data, transposed [N,N]
// operands and attention scores stored with the last two dims swapped; and
// the folded form of some of them, worked out by hand from the rule at the
// top of src/broadcast.cpp.
#include "kernel_test_utils.hpp"

namespace selgraph_test {
namespace {

using kernel_layouts = isa_test;

std::vector<perm_t> all_perms(int rank) {
    perm_t p(static_cast<size_t>(rank));
    for (int i = 0; i < rank; ++i)
        p[static_cast<size_t>(i)] = i;
    std::vector<perm_t> v;
    do
        v.push_back(p);
    while (std::next_permutation(p.begin(), p.end()));
    return v;
}

/// Attention scores `d` ([B, H, S, S], elements of `w` bytes) under a mask
/// [1, 1, S, S] and a 0-D src_1, the last two dims of operand `op` (src_0
/// or dst) swapped; the rest row-major.
nd_spec scores_with_mask(int w, const dims_t &d, int op) {
    nd_spec s;
    s.w = w;
    s.dst_from_inputs = false;
    s.dst = d;
    s.in[0] = { 1, 1, d[2], d[3] };
    s.in[1] = d;
    s.in[2] = {};
    s.strides[op] = perm_strides(d, { 0, 1, 3, 2 });
    return s;
}

perm_t identity(int rank) {
    perm_t p(static_cast<size_t>(rank));
    for (int i = 0; i < rank; ++i)
        p[static_cast<size_t>(i)] = i;
    return p;
}

/// Row-major order with the last two dims swapped (a transposed matrix).
perm_t last_two_swapped(int rank) {
    perm_t p = identity(rank);
    std::swap(p[p.size() - 1], p[p.size() - 2]);
    return p;
}

/// The innermost dim of size > 1 in memory order `perm`; -1 if none.
int fastest_dim(const dims_t &d, const perm_t &perm) {
    for (size_t k = perm.size(); k-- > 0;)
        if (d[static_cast<size_t>(perm[k])] > 1)
            return perm[k];
    return -1;
}

/// Two foldings are the same: dims, byte strides, modes, tile dim,
/// widening.
::testing::AssertionResult same_fold(const si::select_folded &a,
                                     const si::select_folded &b) {
    auto fail = [&]() {
        return ::testing::AssertionFailure()
               << si::folded2str(a) << " vs " << si::folded2str(b) << ": ";
    };
    if (a.ndims != b.ndims)
        return fail() << "ndims " << a.ndims << " vs " << b.ndims;
    for (int j = 0; j < a.ndims; ++j) {
        if (a.dims[j] != b.dims[j])
            return fail() << "dim " << j;
        for (int i = 0; i < si::n_operands; ++i)
            if (a.strides[i][j] != b.strides[i][j])
                return fail()
                       << "stride of operand " << i << " dim " << j << ": "
                       << a.strides[i][j] << " vs " << b.strides[i][j];
    }
    for (int i = 0; i < si::n_operands; ++i)
        if (a.mode[i] != b.mode[i])
            return fail() << "mode of operand " << i;
    if (a.tdim != b.tdim || a.rep != b.rep || a.rep_mask != b.rep_mask)
        return fail() << "tdim/rep/rep_mask " << a.tdim << "/" << a.rep << "/"
                      << int(a.rep_mask) << " vs " << b.tdim << "/" << b.rep
                      << "/" << int(b.rep_mask);
    return ::testing::AssertionSuccess();
}

/// Folded dims and byte strides written out by hand, innermost last.
struct hand_fold {
    dims_t dims;
    dims_t strides[4];
    si::inner_mode mode[4];
    int tdim;
};

::testing::AssertionResult folds_as(const si::select_folded &f,
                                    const hand_fold &h) {
    const auto nd = static_cast<int>(h.dims.size());
    auto fail = [&]() {
        return ::testing::AssertionFailure() << si::folded2str(f) << ": ";
    };
    if (f.ndims != nd)
        return fail() << "ndims " << f.ndims << ", expected " << nd;
    for (int j = 0; j < nd; ++j) {
        const auto k = static_cast<size_t>(j);
        if (f.dims[j] != h.dims[k])
            return fail() << "dim " << j << " is " << f.dims[j] << ", expected "
                          << h.dims[k];
        for (int i = 0; i < si::n_operands; ++i)
            if (f.strides[i][j] != h.strides[i][k])
                return fail()
                       << "operand " << i << " dim " << j << " byte stride "
                       << f.strides[i][j] << ", expected " << h.strides[i][k];
    }
    for (int i = 0; i < si::n_operands; ++i)
        if (f.mode[i] != h.mode[i])
            return fail() << "operand " << i << " mode "
                          << static_cast<int>(f.mode[i]) << ", expected "
                          << static_cast<int>(h.mode[i]);
    if (f.tdim != h.tdim)
        return fail() << "tdim " << f.tdim << ", expected " << h.tdim;
    return ::testing::AssertionSuccess();
}

/// The sizes of a rank's permutation sweep: `key` sizes go to the two dims
/// that matter for the permutation (the permuted fastest dim and the
/// logical last one, which is dst's fastest when dst is dense), the other
/// dims get `rest` (cycled).
struct rank_sweep {
    int rank;
    std::vector<std::pair<int64_t, int64_t>> key;
    dims_t rest;
};

std::vector<rank_sweep> perm_sweeps() {
    const dims_t edge = { 1, 3, 15, 16, 17, 33, 64, 65 };
    std::vector<std::pair<int64_t, int64_t>> all_pairs, some_pairs;
    for (size_t i = 0; i < edge.size(); ++i)
        for (size_t j = 0; j < edge.size(); ++j) {
            all_pairs.emplace_back(edge[i], edge[j]);
            if ((i + j) % 3 == 0)
                some_pairs.emplace_back(edge[i], edge[j]);
        }
    return {
        { 2, all_pairs, {} },
        { 3, some_pairs, { 2 } },
        { 4,
          { { 3, 17 },
            { 16, 5 },
            { 17, 33 },
            { 65, 1 },
            { 1, 65 },
            { 15, 16 },
            { 64, 3 },
            { 33, 64 } },
          { 2, 3 } },
        { 5, { { 3, 17 }, { 16, 5 }, { 1, 33 }, { 65, 2 } }, { 2, 3, 1 } },
    };
}

/// Dims of one permutation case: key sizes on `perm`'s fastest dim and on
/// the logical last dim (or, when they are the same dim, the second
/// fastest in `perm`).
dims_t perm_case_dims(const rank_sweep &rs, const perm_t &perm,
                      std::pair<int64_t, int64_t> key) {
    const int r = rs.rank;
    const int f0 = perm.back();
    const int f1 = f0 != r - 1 ? r - 1 : perm[perm.size() - 2];
    dims_t d(static_cast<size_t>(r), 0);
    d[static_cast<size_t>(f0)] = key.first;
    d[static_cast<size_t>(f1)] = key.second;
    size_t k = 0;
    for (auto &x : d)
        if (x == 0)
            x = rs.rest[k++ % rs.rest.size()];
    return d;
}

std::string perm_str(const perm_t &p) {
    std::string s = "perm(";
    for (size_t i = 0; i < p.size(); ++i)
        s += (i ? "," : "") + std::to_string(p[i]);
    return s + ")";
}

TEST_P(kernel_layouts, PermutationSharedByAllOperands) {
    // Any memory order shared by cond, src_0, src_1 and dst (padded
    // pitches included) folds as the row-major problem with the dims in
    // that order, and never falls back to the reference kernel; unpadded,
    // it is one row of every element.
    auto &g = rng();
    int fails = 0;
    for (const auto &rs : perm_sweeps())
        for (const perm_t &perm : all_perms(rs.rank))
            for (const auto &key : rs.key)
                for (int w : { 4, 2, 1 })
                    for (int64_t pad : { 0, 3 }) {
                        const dims_t d = perm_case_dims(rs, perm, key);
                        const dims_t s = perm_strides(d, perm, pad);
                        const si::select_nd p = full_nd(d, { s, s, s, s }, w);
                        const std::string desc = perm_str(perm) + " pad "
                                                 + std::to_string(pad) + " "
                                                 + nd_str(p);
                        // The same problem written row-major in memory
                        // order.
                        dims_t qd;
                        for (int i : perm)
                            qd.push_back(d[static_cast<size_t>(i)]);
                        const dims_t qs =
                                perm_strides(qd, identity(rs.rank), pad);
                        const si::select_nd q =
                                full_nd(qd, { qs, qs, qs, qs }, w);
                        const si::select_folded f = si::fold_select(p);
                        KT_EXPECT(fails, same_fold(f, si::fold_select(q)),
                                  desc);
                        if (pad == 0) {
                            KT_EXPECT(fails,
                                      ::testing::AssertionResult(
                                              f.ndims == 1
                                              && f.dims[0] == p.nelems())
                                              << si::folded2str(f),
                                      "one row expected: " + desc);
                        }
                        KT_EXPECT(
                                fails,
                                ::testing::AssertionResult(!f.has_transposed())
                                        << si::folded2str(f),
                                "no tile expected: " + desc);
                        KT_EXPECT(fails,
                                  plan_takes(si::plan_select(p, 0), kisa(),
                                             jit()),
                                  desc);
                        plan_run_opts o;
                        o.check_naive = rs.rank > 2 || (key.first & 1);
                        KT_EXPECT(fails, run_plan_case(p, kisa(), o, g), desc);
                    }
}

TEST_P(kernel_layouts, PermutationOfOneInput) {
    // One input (cond, src_0, src_1 in turn) in a permuted memory order
    // (padded or not), the rest dense row-major. Where its contiguous dim
    // is not dst's fastest, it is transposed: the plan runs in tiles with
    // that operand's transposing kernel, and never falls back.
    auto &g = rng();
    int fails = 0;
    for (const auto &rs : perm_sweeps())
        for (const perm_t &perm : all_perms(rs.rank))
            for (const auto &key : rs.key)
                for (int w : { 4, 2, 1 })
                    for (int op = 0; op < 3; ++op) {
                        const int64_t pad = (key.first + op) % 2 ? 2 : 0;
                        const dims_t d = perm_case_dims(rs, perm, key);
                        dims_t st[4];
                        st[op] = perm_strides(d, perm, pad);
                        const si::select_nd p = full_nd(d, st, w);
                        const std::string desc = "operand " + std::to_string(op)
                                                 + " " + perm_str(perm)
                                                 + " pad " + std::to_string(pad)
                                                 + " " + nd_str(p);
                        const int P = fastest_dim(d, perm);
                        const int L = fastest_dim(d, identity(rs.rank));
                        const si::select_plan plan = si::plan_select(p, 0);
                        KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                        const si::select_folded &f = plan.folded;
                        const bool tr = P >= 0 && P != L;
                        for (int i = 0; i < 4; ++i) {
                            const si::inner_mode want =
                                    i == op && tr ? si::inner_mode::transposed
                                                  : si::inner_mode::vector;
                            KT_EXPECT(fails,
                                      ::testing::AssertionResult(f.mode[i]
                                                                 == want)
                                              << si::folded2str(f),
                                      "mode of operand " + std::to_string(i)
                                              + ": " + desc);
                        }
                        if (tr) {
                            KT_EXPECT(fails,
                                      ::testing::AssertionResult(f.tdim
                                                                 == f.ndims - 2)
                                              << si::folded2str(f),
                                      desc);
                            if (jit()) {
                                KT_EXPECT(fails,
                                          ::testing::AssertionResult(
                                                  plan.transpose[op] != nullptr)
                                                  << plan.kernel_str(),
                                          "transposing kernel: " + desc);
                            }
                        }
                        plan_run_opts o;
                        o.check_naive = rs.rank > 2 || (key.first & 1);
                        KT_EXPECT(fails, run_plan_case(p, kisa(), o, g), desc);
                    }
}

TEST_P(kernel_layouts, PermutationOfDst) {
    // dst in a permuted memory order (padded or not), the inputs dense:
    // where dst's contiguous dim is not the inputs' one, the fold follows
    // the inputs' order (transposing w bytes per element, not 1 + 2w):
    // every input is a vector and dst alone is transposed.
    auto &g = rng();
    int fails = 0;
    for (const auto &rs : perm_sweeps())
        for (const perm_t &perm : all_perms(rs.rank))
            for (const auto &key : rs.key)
                for (int w : { 4, 2, 1 })
                    for (int64_t pad : { 0, 1 }) {
                        const dims_t d = perm_case_dims(rs, perm, key);
                        dims_t st[4];
                        st[3] = perm_strides(d, perm, pad);
                        const si::select_nd p = full_nd(d, st, w);
                        const std::string desc = "dst " + perm_str(perm)
                                                 + " pad " + std::to_string(pad)
                                                 + " " + nd_str(p);
                        const int P = fastest_dim(d, perm);
                        const int L = fastest_dim(d, identity(rs.rank));
                        const si::select_plan plan = si::plan_select(p, 0);
                        KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                        const si::select_folded &f = plan.folded;
                        const bool tr = P >= 0 && P != L;
                        for (int i = 0; i < 4; ++i) {
                            const si::inner_mode want =
                                    tr && i == si::op_dst
                                            ? si::inner_mode::transposed
                                            : si::inner_mode::vector;
                            KT_EXPECT(fails,
                                      ::testing::AssertionResult(f.mode[i]
                                                                 == want)
                                              << si::folded2str(f),
                                      "mode of operand " + std::to_string(i)
                                              + ": " + desc);
                            if (jit()) {
                                KT_EXPECT(
                                        fails,
                                        ::testing::AssertionResult(
                                                (plan.transpose[i] != nullptr)
                                                == (f.mode[i] == want
                                                    && want
                                                               == si::inner_mode::
                                                                       transposed))
                                                << plan.kernel_str(),
                                        "transposing kernel: " + desc);
                            }
                        }
                        if (tr && jit()) {
                            const si::select_plan big =
                                    si::plan_select(p, SIZE_MAX);
                            const std::string want_nt =
                                    dst_nt_transpose_name(big, kisa());
                            KT_EXPECT(fails,
                                      ::testing::AssertionResult(
                                              !big.kernel_nt
                                              && big.transpose_dst_nt
                                              && big.transpose_dst_nt->name()
                                                         == want_nt)
                                              << big.kernel_str(),
                                      "a transposed dst: the nt variant is "
                                      "its transpose's: "
                                              + desc);
                        }
                        plan_run_opts o;
                        o.check_naive = rs.rank > 2 || (key.first & 1);
                        KT_EXPECT(fails, run_plan_case(p, kisa(), o, g), desc);
                    }
}

TEST_P(kernel_layouts, PaddedPitchesInsideTransposedLayouts) {
    // A transposed [R,C] input or a column-major dst whose pitch (the
    // stride of the second dim) is longer than R, and a 3-D problem with
    // every pitch padded, around the tile sizes.
    auto &g = rng();
    int fails = 0;
    for (int w : { 4, 2, 1 })
        for (int64_t r : { 3, 16, 17, 33, 64, 65, 128, 129 })
            for (int64_t c : { 1, 15, 16, 17, 47, 48, 49, 97, 161 })
                for (int64_t pad : { 1, 7, 64 })
                    for (int op = 0; op < 4; ++op) {
                        dims_t st[4];
                        st[op] = { 1, r + pad };
                        const si::select_nd p = full_nd({ r, c }, st, w);
                        const std::string desc = "operand " + std::to_string(op)
                                                 + " " + nd_str(p);
                        if (c > 1) {
                            // Not if c == 1: a single column is contiguous.
                            const si::select_folded f = si::fold_select(p);
                            KT_EXPECT(fails,
                                      ::testing::AssertionResult(
                                              f.has_transposed())
                                              << si::folded2str(f),
                                      desc);
                        }
                        plan_run_opts o;
                        o.nthreads = 2;
                        KT_EXPECT(fails, run_plan_case(p, kisa(), o, g), desc);
                    }
    // [A,B,C] inputs in memory order (C,A,B) with padded pitches, dst
    // row-major with padded rows.
    for (int w : { 4, 2, 1 })
        for (int64_t b : { 16, 17, 65 }) {
            const dims_t d = { 3, b, 33 };
            dims_t st[4];
            for (int op = 0; op < 3; ++op)
                st[op] = perm_strides(d, { 2, 0, 1 }, 5 + op);
            st[3] = perm_strides(d, { 0, 1, 2 }, 11);
            const si::select_nd p = full_nd(d, st, w);
            KT_EXPECT(fails, run_plan_case(p, kisa(), plan_run_opts(), g),
                      nd_str(p));
        }
}

/// NCHW dims [n,c,h,w] in channels-last memory order.
dims_t nhwc(const dims_t &d, int64_t pad = 0) {
    return perm_strides(d, { 0, 2, 3, 1 }, pad);
}

TEST_P(kernel_layouts, BroadcastInsidePermutedLayouts) {
    auto &g = rng();
    int fails = 0;
    const size_t nt = si::nt_candidate_bytes();
    for (int w : { 4, 2, 1 }) {
        // Per-channel cond or src_1 [1,C,1,1] over NHWC data (dst too),
        // padded or not.
        for (const dims_t &d :
             { dims_t { 2, 8, 5, 7 }, dims_t { 1, 3, 4, 5 },
               dims_t { 2, 17, 3, 16 }, dims_t { 3, 64, 2, 9 },
               dims_t { 1, 33, 5, 65 }, dims_t { 2, 1, 4, 4 } })
            for (int port : { 0, 2 })
                for (int64_t pad : { 0, 4 }) {
                    nd_spec s;
                    s.w = w;
                    s.dst_from_inputs = false;
                    s.dst = d;
                    for (int op = 0; op < 3; ++op) {
                        s.in[op] = op == port ? dims_t { 1, d[1], 1, 1 } : d;
                        if (op != port)
                            s.strides[op] = nhwc(d, pad);
                    }
                    s.strides[3] = nhwc(d, pad);
                    const si::select_nd p = make_nd(s);
                    const std::string desc = "per-channel port "
                                             + std::to_string(port) + " "
                                             + nd_str(p);
                    KT_EXPECT(fails,
                              plan_takes(si::plan_select(p, 0), kisa(), jit()),
                              desc);
                    plan_run_opts o;
                    o.nthreads = 2;
                    o.working_set = pad ? nt : 0;
                    KT_EXPECT(fails, run_plan_case(p, kisa(), o, g), desc);
                }
        // Attention scores [B,H,S,S] with the last two dims swapped in
        // memory, a mask [1,1,S,S], a 0-D src_1; dst dense or swapped like
        // the scores; the mask swapped with dense scores; and the scores as
        // src_1 with a 0-D src_0 (the role swap over a transposed operand).
        for (int64_t sq : { 1, 2, 15, 16, 17, 33, 64, 65 }) {
            const dims_t sc = { 2, 3, sq, sq }, mask = { 1, 1, sq, sq };
            const dims_t swapped = { 3 * sq * sq, sq * sq, 1, sq };
            const dims_t mask_swapped = { sq * sq, sq * sq, 1, sq };
            struct att {
                const char *name;
                dims_t c_st, a_st, d_st;
                bool scores_in_src1;
            };
            const att cases[] = {
                { "scores_swapped", {}, swapped, {}, false },
                { "scores_and_dst_swapped", {}, swapped, swapped, false },
                { "mask_swapped", mask_swapped, {}, {}, false },
                { "scores_swapped_in_src1", {}, swapped, {}, true },
            };
            for (const auto &a : cases) {
                nd_spec s;
                s.w = w;
                s.dst_from_inputs = false;
                s.dst = sc;
                s.in[0] = mask;
                s.strides[0] = a.c_st;
                const int sp = a.scores_in_src1 ? 2 : 1;
                s.in[sp] = sc;
                s.strides[sp] = a.a_st;
                s.in[3 - sp] = {};
                s.strides[3] = a.d_st;
                const si::select_nd p = make_nd(s);
                const std::string desc = std::string(a.name) + " " + nd_str(p);
                const si::select_plan plan = si::plan_select(p, 0);
                KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), desc);
                if (sq > 1) {
                    KT_EXPECT(fails,
                              ::testing::AssertionResult(
                                      plan.folded.has_transposed())
                                      << si::folded2str(plan.folded),
                              desc);
                }
                if (jit() && sq > 1 && a.scores_in_src1) {
                    KT_EXPECT(fails,
                              ::testing::AssertionResult(
                                      plan.swap && plan.transpose[si::op_src1])
                                      << plan.kernel_str(),
                              desc);
                }
                for (int nthr : { 1, 3 }) {
                    plan_run_opts o;
                    o.nthreads = nthr;
                    o.working_set = nthr == 3 ? nt : 0;
                    KT_EXPECT(fails, run_plan_case(p, kisa(), o, g), desc);
                }
            }
        }
        // Broadcast operands inside a transposed [R,C] problem (src_0 or
        // cond transposed): a row vector [C], a column [R,1], a 0-D
        // operand, in each other input.
        for (int64_t r : { 3, 16, 17, 65 })
            for (int64_t c : { 5, 16, 33, 64, 130 })
                for (int tr_op : { 0, 1, 2 })
                    for (int b_op : { 0, 1, 2 }) {
                        if (b_op == tr_op)
                            continue;
                        for (int kind = 0; kind < 3; ++kind) {
                            const dims_t bshape = kind == 0   ? dims_t { c }
                                                  : kind == 1 ? dims_t { r, 1 }
                                                              : dims_t {};
                            nd_spec s;
                            s.w = w;
                            s.dst_from_inputs = false;
                            s.dst = { r, c };
                            for (int op = 0; op < 3; ++op)
                                s.in[op] = { r, c };
                            s.in[b_op] = bshape;
                            s.strides[tr_op] = { 1, r };
                            const si::select_nd p = make_nd(s);
                            const std::string desc =
                                    "transposed " + std::to_string(tr_op)
                                    + ", broadcast " + std::to_string(b_op)
                                    + " kind " + std::to_string(kind) + " "
                                    + nd_str(p);
                            const si::select_plan plan = si::plan_select(p, 0);
                            KT_EXPECT(fails, plan_takes(plan, kisa(), jit()),
                                      desc);
                            KT_EXPECT(fails,
                                      ::testing::AssertionResult(
                                              plan.folded.mode[tr_op]
                                              == si::inner_mode::transposed)
                                              << si::folded2str(plan.folded),
                                      desc);
                            plan_run_opts o;
                            o.nthreads = 1 + (c & 1);
                            KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                                      desc);
                        }
                    }
    }
}

TEST_P(kernel_layouts, TiledPathThreadsOffsetsNonTemporal) {
    // Tiled problems large enough to split over threads, with dst at
    // element offsets from a cache line, misaligned sources and the
    // non-temporal kernel (8-byte elements: the transposed dsts).
    auto &g = rng();
    int fails = 0;
    struct big {
        const char *name;
        dims_t d;
        int op; // the permuted operand
        perm_t perm;
    };
    const std::vector<big> cases = {
        { "src0_transposed", { 300, 257 }, 1, { 1, 0 } },
        { "cond_transposed", { 300, 257 }, 0, { 1, 0 } },
        { "src1_transposed", { 257, 300 }, 2, { 1, 0 } },
        { "dst_transposed", { 257, 300 }, 3, { 1, 0 } },
        // Five strips of dst rows 600 elements apart (not whole lines):
        // with nt, a chain of carried dst transposes per thread.
        { "dst_transposed_carried", { 600, 97 }, 3, { 1, 0 } },
        // dst rows 4001 elements apart, more than 1 MiB of them: its
        // transposes in bands (transposed_dst_band), panels of at least 4
        // lines of each.
        { "dst_transposed_bands", { 4001, 300 }, 3, { 1, 0 } },
        { "dst_nhwc", { 2, 48, 17, 33 }, 3, { 0, 2, 3, 1 } },
        { "src0_nhwc", { 2, 48, 17, 33 }, 1, { 0, 2, 3, 1 } },
        { "src0_rank3_outer", { 65, 7, 129 }, 1, { 1, 2, 0 } },
        // Rows too long for a whole-width panel of f32: tiles narrower
        // than the row, column tails.
        { "src0_transposed_narrow_tiles", { 130, 2081 }, 1, { 1, 0 } },
    };
    for (int w : { 4, 2, 1, 8 })
        for (const auto &bc : cases) {
            if (w == 8 && bc.op != si::op_dst)
                continue;
            dims_t st[4];
            st[bc.op] = perm_strides(bc.d, bc.perm);
            const si::select_nd p = full_nd(bc.d, st, w);
            const si::select_plan plan = si::plan_select(p, 0);
            ASSERT_TRUE(plan_takes(plan, kisa(), jit())) << bc.name;
            ASSERT_TRUE(plan.folded.has_transposed())
                    << bc.name << " " << si::folded2str(plan.folded);
            for (int nthr : { 1, 2, 3 }) {
                if (jit()) {
                    // The team is really nthr threads.
                    EXPECT_EQ(si::plan_threads(plan, nthr), nthr) << bc.name;
                }
                // Aligned with regular stores, then dst 3 elements off a
                // cache line with the non-temporal kernel.
                for (size_t mis : { size_t(0), size_t(3) })
                    for (bool ntk : { mis != 0 }) {
                        plan_run_opts o;
                        o.nthreads = nthr;
                        o.misd = mis * static_cast<size_t>(w);
                        o.mis0 = (mis + 1) % 3 * static_cast<size_t>(w);
                        o.mis1 = mis * 2 * static_cast<size_t>(w);
                        o.misc = mis;
                        o.working_set = ntk ? si::nt_candidate_bytes() : 0;
                        o.check_naive = nthr == 1 && mis == 0 && !ntk;
                        KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                                  std::string(bc.name) + " nthreads "
                                          + std::to_string(nthr) + " misd "
                                          + std::to_string(o.misd)
                                          + (ntk ? " nt " : " ") + nd_str(p));
                    }
            }
        }
    // In place on a transposed dst: src_0 shares dst's column-major layout,
    // cond transposed as well.
    for (int w : { 4, 2, 1 }) {
        dims_t st[4];
        st[0] = st[1] = st[3] = { 1, 300 };
        const si::select_nd p = full_nd({ 300, 257 }, st, w);
        for (int nthr : { 1, 3 }) {
            plan_run_opts o;
            o.in_place = true;
            o.nthreads = nthr;
            KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                      "in place " + nd_str(p));
        }
    }
}

TEST(kernel_layouts_tiles, PanelsAndTiles) {
    // The tile shape rule (src/parallel_execute.cpp, docs/design.md):
    // whole-width panels of 128 rows (64 when only 1-byte operands are
    // transposed; up to 256 as they fit where none is wider than 2 bytes
    // or the panel has at most 16 columns)
    // where they fit 1 MiB of scratch and keep the threads balanced;
    // where fewer rows fit, panels down to 128 bytes of each transposed
    // input's lines (64 of a transposed dst's) that balance the threads;
    // tiles of 128 (64) rows and 128 KiB otherwise. A transposed dst's
    // panels take half the scratch, in multiples of 64 rows (at least 64
    // where they fit the whole 1 MiB, and at least 4 lines of each dst row
    // where its transposes run in bands), and each thread a column block of
    // them where there are fewer matrices than threads and the blocks
    // balance them. With threads, a transposed input's panels and tiles
    // are as even as multiples of 16 allow.
    struct tc {
        dims_t d;
        int op; // transposed operand (column-major), the rest row-major
        int w;
        int nthreads;
        int64_t rows, cols;
    };
    const std::vector<tc> cases = {
        { { 2048, 2048 }, 1, 4, 1, 128, 2048 },  // 1 MiB
        { { 2048, 2048 }, 1, 2, 1, 256, 2048 },  // 2-byte: 256 rows, 1 MiB
        { { 2048, 2048 }, 1, 2, 2, 256, 2048 },  // 8 panels, 2 threads
        { { 2048, 2048 }, 1, 2, 12, 128, 512 },  // 8 or 16 panels: tiles
        { { 197, 197 }, 1, 2, 1, 197, 197 },     // 2-byte: all 197 rows
        { { 197, 197 }, 1, 4, 1, 128, 197 },     // 4-byte: 128 of them
        { { 2048, 2048 }, 0, 4, 1, 256, 2048 },  // cond: 256 rows
        { { 2048, 2048 }, 0, 4, 12, 64, 2048 },  // 32 panels, 12 threads
        { { 2048, 2048 }, 3, 4, 2, 64, 1024 },   // dst: half of 1 MiB
        { { 2048, 2048 }, 1, 4, 16, 128, 2048 }, // 16 panels, 16 threads
        { { 2048, 2048 }, 1, 4, 12, 128, 256 },  // 16 panels, 12 threads
        { { 300, 257 }, 1, 4, 1, 128, 257 },     // two panels and a tail
        // 3 panels do not balance 2 threads: tiles, made even (rows 300 in
        // 3 blocks of 112, columns 257 in 2 of 144), not of 128 and 44
        // rows by 256 and 1 columns.
        { { 300, 257 }, 1, 4, 2, 112, 144 },
        { { 300, 257 }, 1, 4, 3, 112, 257 },   // 3 even panels, 3 threads
        { { 100, 2000 }, 1, 4, 1, 100, 2000 }, // all rows
        { { 300, 2081 }, 1, 4, 1, 112, 2081 }, // 125 fit: 112
        { { 300, 2081 }, 1, 2, 1, 240, 2081 }, // 251 fit: 240
        { { 300, 16400 }, 0, 1, 1, 64, 2048 }, // 64 rows do not fit
        { { 300, 8000 }, 0, 4, 1, 128, 8000 }, // 131 fit: 128
        { { 3, 5000 }, 1, 4, 1, 3, 5000 },     // rows < 128
        // Narrow panels: 128 bytes of each input line, 64 of dst's.
        { { 2048, 6144 }, 1, 4, 1, 32, 6144 },  // 42 fit: 32 (floor 32)
        { { 2048, 6144 }, 1, 8, 1, 16, 6144 },  // 21 fit: 16 (floor 16)
        { { 2048, 6144 }, 1, 8, 2, 16, 6144 },  // 128 panels, 2 threads
        { { 300, 12544 }, 1, 4, 1, 128, 256 },  // 20 fit, floor 32: tiles
        { { 300, 12544 }, 3, 4, 1, 64, 2048 },  // dst: a column block
        { { 4096, 16384 }, 1, 2, 1, 128, 512 }, // 32 fit, floor 64: tiles
        { { 4096, 16384 }, 3, 2, 1, 64, 4096 }, // dst: a column block
        { { 16, 3136 }, 1, 8, 1, 16, 3136 },    // all 16 rows fit
        // Panels of at most 16 columns: up to 256 rows of any width.
        { { 300, 3 }, 1, 4, 1, 256, 3 },
        { { 300, 16 }, 1, 4, 1, 256, 16 },
        { { 300, 17 }, 1, 4, 1, 128, 17 },
        { { 300, 3 }, 1, 8, 1, 256, 3 },
        // A staged dst (lines back to back, pitch not a multiple of 64
        // bytes): panels of all rows where they fit and balance.
        { { 197, 197 }, 3, 4, 1, 197, 197 },   // 788-byte lines
        { { 300, 257 }, 3, 4, 1, 300, 257 },   // 1200-byte lines
        { { 300, 257 }, 3, 4, 3, 128, 96 },    // 3 threads: columns
        { { 2047, 2047 }, 3, 4, 1, 64, 2047 }, // all rows do not fit
        // A transposed dst: half the budget, in whole carry granules (64
        // rows), at least one where it fits the whole budget; with threads
        // that the outer dims do not divide among, a column block (its dst
        // rows) per thread.
        { { 2047, 2047 }, 3, 2, 1, 128, 2047 }, // 128 fit half
        { { 3000, 3000 }, 3, 4, 1, 64, 3000 },  // 43 fit half, 87 all
        { { 3000, 3000 }, 3, 2, 1, 128, 3000 }, // 4 lines, in dst bands
        { { 2048, 2048 }, 3, 4, 16, 64, 128 },  // a column block each
        { { 1000, 1000 }, 3, 4, 1, 128, 1000 }, // 131 fit half: max 128
        { { 112, 2000 }, 3, 4, 1, 64, 2000 },   // 65 fit half
        // Transposes in bands of dst rows (transposed_dst_band): at least
        // 4 lines of each dst row where they fit the whole budget.
        { { 4001, 4096 }, 3, 1, 1, 256, 4096 }, // 128 fit half, 256 all
        { { 4001, 4096 }, 3, 2, 1, 128, 4096 }, // 64 fit half, 128 all
        { { 4001, 4096 }, 3, 4, 1, 64, 4096 },  // 4 lines: 64 rows
        { { 8001, 8192 }, 3, 1, 1, 128, 8192 }, // 128 fit all
        // 17 columns: blocks of 16 and 1 would leave one thread the work.
        { { 4096, 17 }, 3, 1, 2, 256, 17 },
        // Rows too wide for 64: column blocks of half the budget, fewer
        // while they would not balance the threads (2 blocks, 16 threads).
        { { 64, 8192 }, 3, 4, 1, 64, 2048 },
        { { 64, 8192 }, 3, 4, 16, 64, 512 },
    };
    for (const tc &c : cases) {
        dims_t st[4];
        st[c.op] = perm_strides(c.d, { 1, 0 });
        const si::select_folded f = si::fold_select(full_nd(c.d, st, c.w));
        ASSERT_TRUE(f.has_transposed()) << si::folded2str(f);
        const si::tile_shape t = si::plan_tiles(f, c.nthreads);
        EXPECT_EQ(t.rows, c.rows)
                << si::folded2str(f) << " nthreads " << c.nthreads;
        EXPECT_EQ(t.cols, c.cols)
                << si::folded2str(f) << " nthreads " << c.nthreads;
    }
    // dst channels-last over NCHW inputs: one panel per image.
    const dims_t d = { 16, 64, 56, 56 };
    dims_t st[4];
    st[3] = perm_strides(d, { 0, 2, 3, 1 });
    const si::select_folded f = si::fold_select(full_nd(d, st, 4));
    const si::tile_shape t = si::plan_tiles(f, 2);
    EXPECT_EQ(t.rows, 64) << si::folded2str(f);
    EXPECT_EQ(t.cols, 56 * 56) << si::folded2str(f);
    // A transposed dst of 3 matrices: panels at 2 threads, a column block
    // (of 160) per thread at 4.
    const dims_t d3 = { 3, 600, 600 };
    st[3] = perm_strides(d3, { 0, 2, 1 });
    const si::select_folded f3 = si::fold_select(full_nd(d3, st, 4));
    const si::tile_shape t2 = si::plan_tiles(f3, 2), t4 = si::plan_tiles(f3, 4);
    EXPECT_TRUE(t2.cols == 600 && !t2.cols_first)
            << si::folded2str(f3) << " tiles " << t2.rows << " x " << t2.cols;
    EXPECT_TRUE(t4.cols == 160 && t4.cols_first)
            << si::folded2str(f3) << " tiles " << t4.rows << " x " << t4.cols;
    // ViT's scores written swapped (L14): the mask, transposed and
    // broadcast along the outer dims, takes tiles of all 197 rows, in f32
    // too (whose panels of 197 rows are otherwise 128, above).
    const si::select_folded fv = si::fold_select(
            make_nd(scores_with_mask(4, { 32, 12, 197, 197 }, si::op_dst)));
    ASSERT_EQ(fv.mode[si::op_cond], si::inner_mode::transposed)
            << si::folded2str(fv);
    EXPECT_EQ(si::plan_tiles(fv, 2).rows, 197) << si::folded2str(fv);
}

TEST(kernel_layouts_tiles, TransposedDstPanelsOrRowsPerThread) {
    // Fewer matrices than threads: with dst_rows_per_thread (Intel) each
    // thread a column block (its own dst rows); without it (AMD) the
    // panels, split among the threads, where they balance them (their
    // elements too), and the column blocks only where they do not.
    struct tc {
        dims_t d;
        int nthreads;
        bool rows_per_thread;
        int64_t rows, cols;
        bool cols_first;
    };
    const std::vector<tc> cases = {
        { { 2048, 2048 }, 2, true, 64, 1024, true },
        { { 2048, 2048 }, 2, false, 64, 2048, false }, // 32 panels
        { { 2048, 2048 }, 16, true, 64, 128, true },
        { { 2048, 2048 }, 16, false, 64, 2048, false },
        { { 300, 257 }, 3, true, 128, 96, true },
        // Panels of 128, 128 and 44 rows, or of 128 and 1, would leave one
        // thread over 1.25x the mean of the elements: column blocks.
        { { 300, 257 }, 3, false, 128, 96, true },
        { { 129, 1000 }, 2, false, 128, 512, true },
        { { 64, 4096 }, 2, true, 64, 2048, true },
        { { 64, 4096 }, 2, false, 64, 2048, true },       // one panel of 64
        { { 2, 2048, 2048 }, 2, false, 64, 2048, false }, // a matrix each
    };
    for (const tc &c : cases) {
        dims_t st[4];
        const perm_t order = last_two_swapped(static_cast<int>(c.d.size()));
        st[3] = perm_strides(c.d, order);
        const si::select_folded f = si::fold_select(full_nd(c.d, st, 4));
        ASSERT_EQ(f.mode[si::op_dst], si::inner_mode::transposed)
                << si::folded2str(f);
        const si::tile_shape t =
                si::plan_tiles(f, c.nthreads, false, c.rows_per_thread);
        EXPECT_TRUE(t.rows == c.rows && t.cols == c.cols
                    && t.cols_first == c.cols_first)
                << si::folded2str(f) << " threads " << c.nthreads
                << " rows per thread " << c.rows_per_thread << ": tiles "
                << t.rows << " x " << t.cols << " cols_first " << t.cols_first;
    }
}

/// Whether the busiest of `nthreads` threads gets at most 1.25x the mean
/// of the elements when they take tiles `t` of `f` by count, in contiguous
/// ranges (the tiled runner's split: a team of at most one thread a tile).
::testing::AssertionResult shares_elements(const si::select_folded &f,
                                           const si::tile_shape &t,
                                           int64_t nthreads) {
    const int nd = f.ndims;
    const int64_t rows = f.dims[nd - 2], inner = f.dims[nd - 1];
    int64_t outer = 1;
    for (int d = 0; d + 2 < nd; ++d)
        outer *= f.dims[d];
    const int64_t n_rb = (rows + t.rows - 1) / t.rows;
    const int64_t n_cb = (inner + t.cols - 1) / t.cols;
    const int64_t items = outer * n_rb * n_cb;
    const int64_t team = std::min(nthreads, items);
    int64_t most = 0;
    for (int64_t th = 0; th < team; ++th) {
        int64_t elems = 0;
        for (int64_t it = items * th / team; it < items * (th + 1) / team;
             ++it) {
            const int64_t rem = it % (n_rb * n_cb);
            const int64_t rb = t.cols_first ? rem % n_rb : rem / n_cb;
            const int64_t cb = t.cols_first ? rem / n_rb : rem % n_cb;
            elems += std::min(t.rows, rows - rb * t.rows)
                     * std::min(t.cols, inner - cb * t.cols);
        }
        most = std::max(most, elems);
    }
    if (4 * most * team <= 5 * outer * rows * inner)
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << si::folded2str(f) << " threads " << nthreads << ": tiles "
           << t.rows << " x " << t.cols
           << (t.cols_first ? " columns first" : "") << ", busiest " << most
           << " of " << outer * rows * inner;
}

TEST(kernel_layouts_tiles, ThreadsShareTheElements) {
    // The tiled runner gives each thread a contiguous range of the tiles,
    // by count, in the order plan_tiles sets (rows, or columns, first), so
    // the tiles must split the elements as well as their count: no thread
    // more than 1.25x the mean. A last block of a few rows (131 rows in
    // panels of 128 and 3) used to leave one thread all the work, and 5
    // column blocks left one of 4 threads two.
    struct tc {
        dims_t d;
        int op, w, nthreads;
    };
    const std::vector<tc> cases = {
        { { 131, 35778 }, 2, 2, 2 },
        { { 131, 35778 }, 2, 4, 2 },
        { { 129, 35778 }, 1, 2, 2 },
        { { 300, 257 }, 1, 4, 2 },
        { { 300, 257 }, 1, 4, 3 },
        { { 300, 20000 }, 2, 2, 2 },
        { { 300, 20000 }, 0, 4, 4 },
        { { 600, 9000 }, 1, 2, 3 },
        { { 2047, 2047 }, 1, 2, 2 },
        { { 2047, 2047 }, 1, 4, 12 },
        { { 3, 250, 3000 }, 1, 4, 2 },
        { { 1000, 1000 }, 0, 1, 16 },
        // Too few column blocks for the threads: more, columns first.
        { { 17, 35778 }, 1, 2, 4 },
        { { 100, 8209 }, 0, 4, 8 },
        { { 64, 3000 }, 1, 2, 2 },
        { { 300, 2000 }, 0, 1, 4 },
        // A transposed dst: panels in multiples of 64 rows, or a column
        // block per thread (even).
        { { 131, 35778 }, 3, 2, 2 },
        { { 300, 257 }, 3, 4, 3 },
        { { 3, 600, 600 }, 3, 4, 4 },
        { { 64, 8209 }, 3, 2, 3 },
        { { 513, 700 }, 3, 2, 3 },
    };
    for (const tc &c : cases) {
        dims_t st[4];
        const perm_t order = last_two_swapped(static_cast<int>(c.d.size()));
        st[c.op] = perm_strides(c.d, order);
        const si::select_folded f = si::fold_select(full_nd(c.d, st, c.w));
        ASSERT_EQ(f.mode[c.op], si::inner_mode::transposed)
                << si::folded2str(f);
        EXPECT_TRUE(
                shares_elements(f, si::plan_tiles(f, c.nthreads), c.nthreads));
    }
    // A sweep of matrices with one input transposed, at the threads
    // plan_threads gives them: every plan shares the elements.
    const std::vector<int64_t> sizes = { 17,  100,  131,  197,  300,
                                         513, 2047, 8209, 35778 };
    int unshared = 0;
    for (int64_t r : sizes)
        for (int64_t cols : sizes)
            for (int op = 0; op < 3; ++op)
                for (int w : { 1, 2, 4 })
                    for (int nthr : { 2, 3, 4, 16 }) {
                        if (r * cols > (int64_t(1) << 24))
                            continue;
                        dims_t st[4];
                        st[op] = perm_strides({ r, cols }, { 1, 0 });
                        si::select_plan plan;
                        plan.folded =
                                si::fold_select(full_nd({ r, cols }, st, w));
                        const int team = si::plan_threads(plan, nthr);
                        if (team < 2)
                            continue;
                        const si::select_folded &f = plan.folded;
                        const auto shared = shares_elements(
                                f, si::plan_tiles(f, team), team);
                        if (!shared && ++unshared <= 5)
                            ADD_FAILURE() << shared.message();
                    }
    EXPECT_EQ(unshared, 0);
}

TEST(kernel_layouts_tiles, StagedDstBlocks) {
    // A transposed dst goes through a staging copy of each tile's block
    // where its lines lie back to back at a pitch that is not a multiple
    // of 64 bytes (src/parallel_execute.cpp, dst_block_staged).
    struct tc {
        dims_t d, dst_strides;
        int w;
        bool staged;
    };
    const std::vector<tc> cases = {
        { { 32, 12, 197, 197 }, { 465708, 38809, 1, 197 }, 4, true },
        { { 32, 12, 197, 197 }, { 465708, 38809, 1, 197 }, 2, true },
        { { 197, 197 }, { 1, 197 }, 1, true },
        { { 2047, 2047 }, { 1, 2047 }, 4, true },  // staged where all rows fit
        { { 2048, 2048 }, { 1, 2048 }, 4, false }, // 8192-byte lines
        { { 64, 197 }, { 1, 64 }, 1, false },      // 64-byte lines
        { { 197, 197 }, { 1, 200 }, 4, false },    // padded lines
        { { 16, 64, 56, 56 }, { 200704, 1, 3584, 64 }, 4, false }, // 256 B
        { { 8, 3, 56, 56 }, { 9408, 1, 168, 3 }, 4, true },        // 12 B
        { { 197, 197 }, {}, 4, false }, // dst row-major
    };
    for (const tc &c : cases) {
        dims_t st[4];
        st[3] = c.dst_strides;
        const si::select_folded f = si::fold_select(full_nd(c.d, st, c.w));
        EXPECT_EQ(si::dst_block_staged(f), c.staged) << si::folded2str(f);
    }
}

TEST(kernel_layouts_tiles, ScratchPitch) {
    // Scratch rows stay back to back unless more than 8 rows of a tile fall
    // into one of an L1D's 64 sets (address bits 6-11); then the stride is
    // the next multiple of 64 bytes that spreads them
    // (src/parallel_execute.cpp).
    struct tc {
        int64_t bytes, rows, pitch;
    };
    const std::vector<tc> cases = {
        // [2047, 2047] f32 and bf16: rows 4 bytes (2 bytes) short of 8 KiB
        // (4 KiB) fall into one or two sets; 8192 and 4096 put them all in
        // one; 129 and 65 lines give each row of 64 its own set.
        { 8188, 128, 8256 },  { 4094, 128, 4160 },
        { 8192, 128, 8256 },  // [2048, 2048] f32
        { 2048, 256, 2112 },  // a 1-byte cond, 256 rows: 2 sets -> 33 lines
        { 4608, 128, 4672 },  // 9 x 512: 8 sets, 16 rows each -> 73 lines
        { 1024, 128, 1088 },  // 4 sets, 32 rows each -> 17 lines
        { 1020, 128, 1020 },  // 4 bytes short of 1 KiB: 32 sets of 4 rows
        { 1024, 16, 1024 },   // a 16-row strip: 4 sets, 4 rows each
        { 1024, 32, 1024 },   // 8 rows in each of 4 sets: not over 8
        { 4352, 128, 4352 },  // 16 sets of 8 rows
        { 12544, 64, 12544 }, // L4's [64, 3136] f32: 16 sets of 4 rows
        { 788, 197, 788 },    // ViT's 197 f32: at most 5 rows to a set
        { 196, 512, 196 },    // [N, 512, 7, 7] f32: at most 4
        { 8188, 8, 8188 },    // 8 rows: never over 8
        { 6, 128, 6 },        // [N, 3, H, W] bf16: 12 lines, one set each
        { 12, 256, 12 },      // the same in f32
        { 1, 256, 1 },        // a 1-byte column: 4 lines
    };
    for (const tc &c : cases)
        EXPECT_EQ(si::scratch_pitch(c.bytes, c.rows), c.pitch)
                << c.bytes << " bytes, " << c.rows << " rows";
    // The same predicate decides the bands of a transposed dst: rows of
    // [2047, 2047] and [1023, 300] dst transposed crowd (1-2 sets), L5's dst
    // pixels (256 and 128 bytes: 8 and 4 rows to a set) and rows of 560
    // bytes do not; 8 rows never do, 9 of 4 KiB do.
    EXPECT_TRUE(si::rows_crowd_l1_sets(8188, 2047));
    EXPECT_TRUE(si::rows_crowd_l1_sets(4092, 300));
    EXPECT_TRUE(si::rows_crowd_l1_sets(2046, 300));
    EXPECT_FALSE(si::rows_crowd_l1_sets(256, 3136));
    EXPECT_FALSE(si::rows_crowd_l1_sets(128, 3136));
    EXPECT_FALSE(si::rows_crowd_l1_sets(560, 1023));
    EXPECT_FALSE(si::rows_crowd_l1_sets(4096, 8));
    EXPECT_TRUE(si::rows_crowd_l1_sets(4096, 9));
    // Rows asked to start cache lines (whole_lines): the next multiple of
    // 64 bytes, still spread over the sets; rows of whole lines unchanged.
    EXPECT_EQ(si::scratch_pitch(788, 128, true), 832);
    EXPECT_EQ(si::scratch_pitch(520, 128, true), 576);
    EXPECT_EQ(si::scratch_pitch(1000, 128, true), 1088); // not 1024: 4 sets
    EXPECT_EQ(si::scratch_pitch(12544, 64, true), 12544);
    EXPECT_EQ(si::scratch_pitch(8188, 128, true), 8256);
}

TEST(kernel_layouts_tiles, InputScratchWholeLines) {
    // A transposed input's scratch rows start cache lines for AVX-512's
    // kernels of 4-byte elements, rows of 512 bytes and more; every other
    // kernel, and shorter rows, keep them back to back.
    const auto key = [](si::kernel_isa isa, int w) {
        si::transpose_key k;
        k.isa = isa;
        k.elem_size = static_cast<uint8_t>(w);
        return k;
    };
    const si::kernel_isa z = si::kernel_isa::avx512_core,
                         y = si::kernel_isa::avx2;
    EXPECT_TRUE(si::input_scratch_whole_lines(key(z, 4), 788));
    EXPECT_TRUE(si::input_scratch_whole_lines(key(z, 4), 512));
    EXPECT_FALSE(si::input_scratch_whole_lines(key(z, 4), 508));
    EXPECT_FALSE(si::input_scratch_whole_lines(key(z, 4), 196));
    EXPECT_FALSE(si::input_scratch_whole_lines(key(z, 2), 788));
    EXPECT_FALSE(si::input_scratch_whole_lines(key(z, 1), 788));
    EXPECT_FALSE(si::input_scratch_whole_lines(key(z, 8), 788));
    EXPECT_FALSE(si::input_scratch_whole_lines(key(y, 4), 788));
}

TEST(kernel_layouts_tiles, TransposedDstBands) {
    // A transposed dst's rows (a tile's columns) that one call of its
    // transposing kernel writes: 128 where they crowd a few L1 sets, at
    // most 1 MiB of dst's rows otherwise, in multiples of 64 rows, at least
    // 64; 0 where the tile has no more rows than that.
    struct tc {
        int64_t pitch, rows, band;
    };
    const std::vector<tc> cases = {
        { 4001, 4096, 256 },  // L23: [4001, 4096] s8, 262 rows to 1 MiB
        { 4001, 256, 0 },     // a tile of 256 rows: one call
        { 4001, 257, 256 },   // one more row: a band and a row
        { 8002, 4096, 128 },  // [4001, 4096] bf16: 131 rows to 1 MiB
        { 8188, 2047, 128 },  // L12 f32: crowded, and 128 rows to 1 MiB
        { 4094, 2047, 128 },  // L12 bf16: crowded (256 rows to 1 MiB)
        { 4000, 2047, 256 },  // not crowded: 1 MiB
        { 2000, 4096, 512 },  // 524 rows to 1 MiB
        { 1000, 4096, 1024 }, // 1048 rows to 1 MiB
        { 1000, 1024, 0 },    // no more rows than that
        { 100000, 4096, 64 }, // rows over 16 KiB apart: 64 still
        { 256, 3136, 0 },     // L5's dst pixels: 4096 rows to 1 MiB
        { 788, 197, 0 },      // L15
    };
    for (const tc &c : cases)
        EXPECT_EQ(si::transposed_dst_band(c.pitch, c.rows), c.band)
                << "pitch " << c.pitch << ", " << c.rows << " rows";
}

TEST(kernel_layouts_tiles, StreamingTiles) {
    // Where every transposed input's lines hold the whole tile dim back to
    // back, start cache lines (or fit one strip) and a tile of all rows and
    // columns fits 256 KiB of them, tiles are whole matrices run in strips
    // of 64 bytes of rows of the narrowest transposed operand, and stream
    // (src/parallel_execute.cpp).
    struct tc {
        dims_t d;
        int op, w, nthreads;
        bool stream;
        int64_t rows, cols, strip;
    };
    const std::vector<tc> cases = {
        { { 64, 256, 256 }, 1, 4, 1, true, 256, 256, 16 }, // 256 KiB
        { { 64, 256, 256 }, 1, 2, 2, true, 256, 256, 32 },
        { { 64, 256, 256 }, 0, 4, 16, true, 256, 256, 64 }, // cond
        { { 64, 256, 257 }, 1, 4, 1, false, 128, 257, 0 },  // 257 KiB
        { { 8, 256, 256 }, 2, 8, 1, false, 128, 256, 0 },   // 512 KiB
        // 3 matrices on 2 threads: column halves, each thread 3.
        { { 3, 128, 128 }, 1, 4, 2, false, 128, 64, 0 },
        { { 4, 96, 50 }, 2, 4, 2, true, 96, 50, 16 },
        { { 4, 100, 50 }, 2, 4, 2, false, 100, 50, 0 }, // lines of 400 bytes
        { { 4, 10, 50 }, 2, 4, 1, true, 10, 50, 10 },   // rows < strip
        { { 4, 10, 50 }, 2, 8, 1, false, 10, 50, 0 },   // 80 bytes, 2 strips
        { { 4, 100, 50 }, 3, 4, 1, false, 100, 50, 0 }, // dst
        { { 64, 192, 192 }, 1, 4, 1, true, 192, 192, 16 },
        { { 64, 197, 197 }, 1, 4, 1, false, 128, 197, 0 }, // 788 bytes
    };
    for (const tc &c : cases) {
        dims_t st[4];
        st[c.op] = perm_strides(c.d, { 0, 2, 1 });
        const si::select_folded f = si::fold_select(full_nd(c.d, st, c.w));
        ASSERT_TRUE(f.has_transposed()) << si::folded2str(f);
        const si::tile_shape t = si::plan_tiles(f, c.nthreads);
        const std::string desc =
                si::folded2str(f) + " nthreads " + std::to_string(c.nthreads);
        EXPECT_EQ(t.stream, c.stream) << desc;
        EXPECT_EQ(t.rows, c.rows) << desc;
        EXPECT_EQ(t.cols, c.cols) << desc;
        if (c.stream) {
            EXPECT_EQ(t.strip, c.strip) << desc;
        }
    }
}

TEST(kernel_layouts_tiles, TransposingKernelIsa) {
    // The rules (src/dispatch.hpp): on every CPU, an AVX-512 plan's
    // transposed input of 2 to 8 bytes whose tile dim holds 32 to 63 bytes
    // of each line uses the AVX2 kernel; on Zen 4, so do an AVX-512 plan's
    // transposed inputs of 2 and 4 bytes whose tiles never stream, and on
    // Zen 5 those of 4 bytes, and those of 2 bytes whose lines crowd one
    // L1 set over a register tile, where a call moves 8 lines (columns) or
    // more; on every CPU, dst's carried nt transpose
    // (lines off the cache lines) of 1-byte elements in an AVX-512 plan
    // does, but on Zen 5 with AVX512_VBMI where the tile spans 64 columns
    // and 64 lines or more, and on Zen 5 dst's nt transpose of every size
    // whose lines lie a multiple of 256 bytes apart. dst otherwise (its regular
    // transpose, whatever its line stride), 8-byte elements of longer tiles,
    // streamed tiles and every other CPU keep the plan's ISA.
    using K = si::kernel_isa;
    const K z = K::avx512_core, y = K::avx2;
    for (int op = 0; op < 4; ++op)
        for (int w : { 1, 2, 4, 8 })
            for (int64_t rows :
                 { 1, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 65, 128, 2048 })
                for (int64_t lines : { 5, 7, 8, 26, 63, 64, 4076 })
                    for (bool may_stream : { false, true })
                        for (int64_t ld :
                             { 64, 384, 512, 768, 4008, 4160, 4096, 8192 })
                            for (bool nt : { false, true })
                                for (si::cpu_kind k :
                                     { si::cpu_kind::other, si::cpu_kind::amd,
                                       si::cpu_kind::amd_zen4,
                                       si::cpu_kind::amd_zen5 }) {
                                    const si::cpu_tuning t = si::tuning_of(k);
                                    const bool short_in =
                                            op != si::op_dst && w > 1
                                            && rows * w >= 32 && rows * w < 64;
                                    // Zen 4: inputs of 2 and 4 bytes; Zen 5: of
                                    // 4, and of 2 where 16 lines crowd one L1
                                    // set (4096 and 8192 bytes apart; 4008 and
                                    // 4160 spread them).
                                    const bool crowded =
                                            ld == 4096 || ld == 8192;
                                    // Calls of fewer than 8 lines keep
                                    // AVX-512's masked partial tiles.
                                    const bool in_ymm =
                                            op != si::op_dst && !may_stream
                                            && lines >= 8
                                            && ((k == si::cpu_kind::amd_zen4
                                                 && (w == 2 || w == 4))
                                                || (k == si::cpu_kind::amd_zen5
                                                    && (w == 4
                                                        || (w == 2
                                                            && crowded))));
                                    // dst's nt transpose: carried (1 byte, but
                                    // on Intel, Zen 4 and 5 with
                                    // AVX512_VBMI), and on Zen 4 and 5 lines a
                                    // multiple of 256 bytes apart (every
                                    // size); its regular one keeps the plan's
                                    // ISA.
                                    const bool zen45 =
                                            k == si::cpu_kind::amd_zen4
                                            || k == si::cpu_kind::amd_zen5;
                                    const bool zmm_carry =
                                            k != si::cpu_kind::amd;
                                    const bool dst_nt = op == si::op_dst && nt;
                                    const bool dst_ymm =
                                            dst_nt
                                            && ((ld % 64 != 0 && w == 1
                                                 && !(zmm_carry
                                                      && si::cpu_has_avx512_vbmi()
                                                      && rows >= 64
                                                      && lines >= 64))
                                                || (zen45
                                                    && (ld == 512 || ld == 768
                                                        || ld == 4096
                                                        || ld == 8192)));
                                    const std::string desc =
                                            "operand " + std::to_string(op)
                                            + " w " + std::to_string(w)
                                            + " rows " + std::to_string(rows)
                                            + " lines " + std::to_string(lines)
                                            + (may_stream ? " stream" : "")
                                            + " ld " + std::to_string(ld)
                                            + (nt ? " nt" : "") + " cpu kind "
                                            + std::to_string(
                                                    static_cast<int>(k));
                                    EXPECT_EQ(si::transpose_kernel_isa(
                                                      z, op, w, rows, lines,
                                                      may_stream, ld, nt, t),
                                              short_in || in_ymm || dst_ymm ? y
                                                                            : z)
                                            << desc;
                                    EXPECT_EQ(si::transpose_kernel_isa(
                                                      y, op, w, rows, lines,
                                                      may_stream, ld, nt, t),
                                              y)
                                            << desc;
                                }
    // tiles_may_stream: the shape half of the streaming rule, whatever the
    // thread count (plan_tiles adds the threads' balance).
    struct tc {
        dims_t d;
        int op, w;
        bool may;
    };
    const std::vector<tc> cases = {
        { { 64, 256, 256 }, 1, 4, true },  { { 3, 128, 128 }, 1, 4, true },
        { { 64, 256, 257 }, 1, 4, false }, { { 8, 256, 256 }, 2, 8, false },
        { { 4, 100, 50 }, 3, 4, false },   { { 16, 64, 3136 }, 1, 4, false },
        { { 16, 64, 3136 }, 0, 4, true },  { { 4, 256, 256 }, 0, 2, true },
        { { 8, 197, 197 }, 1, 4, false },  { { 8, 10, 64 }, 1, 4, true },
    };
    for (const tc &c : cases) {
        dims_t st[4];
        st[c.op] = perm_strides(c.d, { 0, 2, 1 });
        const si::select_folded f = si::fold_select(full_nd(c.d, st, c.w));
        ASSERT_TRUE(f.has_transposed()) << si::folded2str(f);
        EXPECT_EQ(si::tiles_may_stream(f), c.may) << si::folded2str(f);
        // At one thread the tiles always balance; at more, streaming may
        // give way to panels, never the other way round.
        EXPECT_EQ(si::plan_tiles(f, 1).stream, c.may) << si::folded2str(f);
        for (int nthr : { 2, 3, 16 })
            EXPECT_TRUE(c.may || !si::plan_tiles(f, nthr).stream)
                    << si::folded2str(f) << " nthreads " << nthr;
    }
}

TEST(kernel_layouts_tiles, CpuKindOfVendorAndFamily) {
    // Zen 4 is AMD family 19h with AVX-512 (Zen 3 shares the family without
    // it), Zen 5 family 1Ah with AVX-512; every other AMD CPU is `amd`, and
    // every other vendor `other`, whatever its family.
    using C = si::cpu_kind;
    EXPECT_EQ(si::cpu_kind_of(false, 6, true), C::other);
    EXPECT_EQ(si::cpu_kind_of(false, 0x19, true), C::other);
    EXPECT_EQ(si::cpu_kind_of(true, 0x17, false), C::amd);
    EXPECT_EQ(si::cpu_kind_of(true, 0x19, false), C::amd);
    EXPECT_EQ(si::cpu_kind_of(true, 0x19, true), C::amd_zen4);
    EXPECT_EQ(si::cpu_kind_of(true, 0x1a, true), C::amd_zen5);
    EXPECT_EQ(si::cpu_kind_of(true, 0x1a, false), C::amd);
    EXPECT_EQ(si::cpu_kind_of(true, 0x1b, true), C::amd);
}

TEST(kernel_layouts_tiles, CpuTuningPerKind) {
    // Each CPU kind's choices as docs/performance.md records them measured:
    // Intel takes the 2-byte dst blocks, AVX-512's byte carry and the
    // block kernel over a transposed dst's padded short rows alone;
    // every AMD CPU splits a transposed dst of few matrices by panels; Zen
    // 4 takes all of its own rules; Zen 5 only the AVX2 transposes of
    // 4-byte inputs, the 2-byte dst blocks, the packed kernel's prefetch
    // and AVX2's packed kernels of 2-byte elements, and its own: AVX2's
    // transposes of 2-byte inputs whose lines crowd one L1 set, AVX2's nt
    // transposes of dst lines a multiple of 256 bytes apart and AVX-512's
    // byte carry, the last two taken by Zen 4 too. Zen 3 (`amd`) takes
    // neither of Intel's.
    using C = si::cpu_kind;
    for (C k : { C::other, C::amd, C::amd_zen4, C::amd_zen5 }) {
        const si::cpu_tuning t = si::tuning_of(k);
        const bool z4 = k == C::amd_zen4, z5 = k == C::amd_zen5;
        const std::string desc =
                "cpu kind " + std::to_string(static_cast<int>(k));
        EXPECT_EQ(t.ymm_input_transposes_words, z4) << desc;
        EXPECT_EQ(t.ymm_input_transposes_dwords, z4 || z5) << desc;
        EXPECT_EQ(t.ymm_input_transposes_crowded_words, z5) << desc;
        EXPECT_EQ(t.ymm_dst_nt_transposes_four_lines, z4 || z5) << desc;
        EXPECT_EQ(t.zmm_byte_carry, k != C::amd) << desc;
        EXPECT_EQ(t.split_permutes, z4) << desc;
        EXPECT_EQ(t.dt_words, k != C::amd) << desc;
        EXPECT_EQ(t.dt_prefetch_words, z4) << desc;
        EXPECT_EQ(t.dt_prefetch_dwords, z4) << desc;
        EXPECT_EQ(t.dt_prefetch_packed, z5) << desc;
        EXPECT_EQ(t.ymm_packed_dt_dwords, z4) << desc;
        EXPECT_EQ(t.ymm_packed_dt_words, z4 || z5) << desc;
        EXPECT_EQ(t.dst_rows_per_thread, k == C::other) << desc;
        EXPECT_EQ(t.dt_over_padded_dst_pieces, k == C::other) << desc;
    }
}

namespace {
// Every field of a cpu_tuning, in order, as 0 or 1.
std::string tuning_bits(const si::cpu_tuning &t) {
    const bool f[] = { t.ymm_input_transposes_words,
                       t.ymm_input_transposes_dwords,
                       t.ymm_input_transposes_crowded_words,
                       t.ymm_dst_nt_transposes_four_lines,
                       t.zmm_byte_carry,
                       t.split_permutes,
                       t.dt_words,
                       t.dt_prefetch_words,
                       t.dt_prefetch_dwords,
                       t.dt_prefetch_packed,
                       t.ymm_packed_dt_dwords,
                       t.ymm_packed_dt_words,
                       t.dst_rows_per_thread,
                       t.dt_over_padded_dst_pieces };
    static_assert(sizeof(f) == sizeof(si::cpu_tuning),
                  "tuning_bits lists every field of cpu_tuning");
    std::string s;
    for (bool b : f)
        s += b ? '1' : '0';
    return s;
}
} // namespace

TEST(kernel_layouts_tiles, CpuTuningOverride) {
    // SELGRAPH_CPU_TUNING's grammar: a kind's table first, then rules set
    // one by one; anything else rejected whole, naming the item.
    using C = si::cpu_kind;
    std::string why;
    si::cpu_tuning t = si::tuning_of(C::other);
    ASSERT_TRUE(si::apply_cpu_tuning("zen4", t, why)) << why;
    EXPECT_EQ(tuning_bits(t), tuning_bits(si::tuning_of(C::amd_zen4)));
    ASSERT_TRUE(si::apply_cpu_tuning("intel", t, why)) << why;
    EXPECT_EQ(tuning_bits(t), tuning_bits(si::tuning_of(C::other)));
    ASSERT_TRUE(si::apply_cpu_tuning("amd", t, why)) << why;
    EXPECT_EQ(tuning_bits(t), tuning_bits(si::tuning_of(C::amd)));

    // One rule on Intel's table: only that field moves.
    t = si::tuning_of(C::other);
    ASSERT_TRUE(si::apply_cpu_tuning("ymm_input_transposes_dwords", t, why))
            << why;
    EXPECT_EQ(tuning_bits(t), "01001010000011");
    // A kind, then rules taken and dropped, the last word on a rule winning.
    ASSERT_TRUE(si::apply_cpu_tuning(
            "zen5,dt_words=0,dst_rows_per_thread=1,split_permutes,"
            "split_permutes=0,dt_prefetch_words=1",
            t, why))
            << why;
    si::cpu_tuning want = si::tuning_of(C::amd_zen5);
    want.dt_words = false;
    want.dst_rows_per_thread = true;
    want.dt_prefetch_words = true;
    EXPECT_EQ(tuning_bits(t), tuning_bits(want));
    // Empty: nothing changes.
    ASSERT_TRUE(si::apply_cpu_tuning("", t, why)) << why;
    EXPECT_EQ(tuning_bits(t), tuning_bits(want));

    // Rejected, `t` untouched: a kind after the first item, an unknown
    // rule, a value other than 0 or 1, an empty item.
    for (const char *bad : { "dt_words,zen4", "dt_word", "dt_words=2",
                             "zen4,,dt_words", "zen6", "dt_words=" }) {
        si::cpu_tuning u = si::tuning_of(C::amd_zen4);
        why.clear();
        EXPECT_FALSE(si::apply_cpu_tuning(bad, u, why)) << bad;
        EXPECT_EQ(tuning_bits(u), tuning_bits(si::tuning_of(C::amd_zen4)))
                << bad;
        EXPECT_NE(why.find('\''), std::string::npos) << bad << ": " << why;
    }
    why.clear();
    si::cpu_tuning u;
    EXPECT_FALSE(si::apply_cpu_tuning("zen4,dt_word=1", u, why));
    EXPECT_NE(why.find("dt_word=1"), std::string::npos) << why;
}

TEST_P(kernel_layouts, TransposingKernelsOfAPlan) {
    // plan_select names the transposing kernels the rule gives for this
    // CPU: L4's geometry (src_0 channels-last, panels) and a streamed one.
    if (!jit())
        GTEST_SKIP() << "no transposing kernels for the reference ISA";
    const si::cpu_tuning &t = si::this_cpu_tuning();
    for (int w : { 1, 2, 4, 8 })
        for (const dims_t &d :
             { dims_t { 4, 128, 56, 56 }, dims_t { 4, 16, 32, 64 } }) {
            dims_t st[4];
            st[1] = perm_strides(d, { 0, 2, 3, 1 });
            const si::select_nd p = full_nd(d, st, w);
            const si::select_plan plan = si::plan_select(p, 0);
            ASSERT_TRUE(plan.transpose[si::op_src0]) << plan.kernel_str();
            const bool may = si::tiles_may_stream(plan.folded);
            EXPECT_EQ(may, d[1] == 16) << si::folded2str(plan.folded);
            const si::kernel_isa want = si::transpose_kernel_isa(
                    kisa(), si::op_src0, w,
                    plan.folded.dims[plan.folded.ndims - 2],
                    call_lines(plan.folded), may,
                    plan.folded.strides[si::op_src0][plan.folded.ndims - 1],
                    false, t);
            EXPECT_EQ(plan.transpose[si::op_src0]->name(),
                      si::transpose_kernel_name(
                              { want, static_cast<uint8_t>(w) }))
                    << plan.kernel_str();
        }
}

TEST_P(kernel_layouts, NamedLayouts) {
    // The layouts of the issue at small scale, every element size.
    auto &g = rng();
    int fails = 0;
    for (int w : { 8, 4, 2, 1 }) {
        for (const dims_t &d :
             { dims_t { 2, 8, 5, 7 }, dims_t { 1, 16, 4, 4 },
               dims_t { 2, 17, 3, 33 }, dims_t { 1, 64, 3, 65 },
               dims_t { 3, 3, 16, 1 } }) {
            const dims_t cl = nhwc(d);
            const dims_t chan = { 1, d[1], 1, 1 };
            std::vector<std::pair<std::string, nd_spec>> named;
            auto add = [&](const char *name, const dims_t &cs,
                           const dims_t &cst, const dims_t &ast,
                           const dims_t &bs, const dims_t &bst,
                           const dims_t &dst_st) {
                nd_spec s;
                s.w = w;
                s.dst_from_inputs = false;
                s.dst = d;
                s.in[0] = cs;
                s.in[1] = d;
                s.in[2] = bs;
                s.strides[0] = cst;
                s.strides[1] = ast;
                s.strides[2] = bst;
                s.strides[3] = dst_st;
                named.emplace_back(name, s);
            };
            add("all_nhwc", d, cl, cl, d, cl, cl);
            add("nhwc_per_channel_cond", chan, {}, cl, d, cl, cl);
            add("nhwc_per_channel_src1", d, cl, cl, chan, {}, cl);
            add("src0_nhwc_rest_nchw", d, {}, cl, d, {}, {});
            add("dst_nhwc_rest_nchw", d, {}, {}, d, {}, cl);
            add("dst_nhwc_per_channel_cond", chan, {}, {}, d, {}, cl);
            add("dst_nhwc_src1_0d", d, {}, {}, {}, {}, cl);
            add("src0_nhwc_per_channel_src1", d, {}, cl, chan, {}, {});
            for (const auto &nm : named) {
                const si::select_nd p = make_nd(nm.second);
                for (int nthr : { 1, 2 }) {
                    plan_run_opts o;
                    o.nthreads = nthr;
                    o.misd = nthr == 2 ? static_cast<size_t>(w) : 0;
                    KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                              nm.first + " " + nd_str(p));
                }
            }
        }
        for (int64_t n : { 2, 15, 16, 17, 33, 64, 65, 100 })
            for (int op : { 1, 0 }) {
                dims_t st[4];
                st[op] = { 1, n };
                const si::select_nd p = full_nd({ n, n }, st, w);
                const si::select_plan plan = si::plan_select(p, 0);
                KT_EXPECT(fails, plan_takes(plan, kisa(), jit()), nd_str(p));
                if (jit()) {
                    KT_EXPECT(fails,
                              ::testing::AssertionResult(
                                      plan.transpose[op] != nullptr
                                      && plan.transpose[1 - op] == nullptr)
                                      << plan.kernel_str(),
                              nd_str(p));
                }
                plan_run_opts o;
                o.working_set = n % 2 ? si::nt_candidate_bytes() : 0;
                KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                          (op ? "src0" : "cond") + std::string(" transposed ")
                                  + nd_str(p));
            }
        for (int64_t sq : { 3, 16, 17, 64 }) {
            const si::select_nd p =
                    make_nd(scores_with_mask(w, { 2, 4, sq, sq }, si::op_src0));
            KT_EXPECT(fails, run_plan_case(p, kisa(), plan_run_opts(), g),
                      "attention scores swapped " + nd_str(p));
        }
        for (int64_t sq : { 3, 17, 64, 197 }) {
            // ViT's scores written with the last two dims swapped (L14):
            // folded in dst's order, the mask, broadcast along the outer
            // dims, is transposed like the scores, and a thread keeps its
            // transposed block across the tiles of one matrix each.
            const si::select_nd p =
                    make_nd(scores_with_mask(w, { 2, 5, sq, sq }, si::op_dst));
            if (jit() && sq == 197) {
                const si::select_plan plan = si::plan_select(p, 0);
                KT_EXPECT(fails,
                          ::testing::AssertionResult(plan.transpose[si::op_cond]
                                                     != nullptr)
                                  << plan.kernel_str(),
                          "mask transposed " + nd_str(p));
            }
            for (int nthr : { 1, 3 }) {
                plan_run_opts o;
                o.nthreads = nthr;
                KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                          "scores written swapped, nthreads "
                                  + std::to_string(nthr) + " " + nd_str(p));
            }
        }
    }
}

TEST_P(kernel_layouts, FoldedByHand) {
    // Folded dims, byte strides and modes worked out by hand from the rule
    // (dims in dst's memory order, or a full input's where that transposes
    // fewer bytes, merged from the innermost outwards while every operand
    // is contiguous across, the row classified, the tile dim moved right
    // outside the row).
    using m = si::inner_mode;
    const m V = m::vector, S = m::scalar, T = m::transposed;
    for (int64_t w : { 4, 2, 1 }) {
        const int wi = static_cast<int>(w);
        const dims_t d = { 2, 8, 5, 7 };
        const dims_t cl = nhwc(d); // {280, 1, 56, 8}
        ASSERT_EQ(cl, (dims_t { 280, 1, 56, 8 }));
        // All NHWC: N, H, W, C in memory order, all contiguous: one row of
        // 560, as dense [2, 280].
        {
            const si::select_folded f =
                    si::fold_select(full_nd(d, { cl, cl, cl, cl }, wi));
            EXPECT_TRUE(folds_as(f, { { 560 },
                                      { { 1 }, { w }, { w }, { w } },
                                      { V, V, V, V },
                                      -1 }));
            EXPECT_TRUE(
                    same_fold(f, si::fold_select(make_nd({ 2, 280 }, { 2, 280 },
                                                         { 2, 280 }, wi))));
        }
        // src_0 NHWC, the rest NCHW: W and H merge (35), src_0 has stride 8
        // along them and 1 along C, which is the tile dim.
        {
            dims_t st[4];
            st[1] = cl;
            const si::select_folded f = si::fold_select(full_nd(d, st, wi));
            EXPECT_TRUE(folds_as(f, { { 2, 8, 35 },
                                      { { 280, 35, 1 },
                                        { 280 * w, w, 8 * w },
                                        { 280 * w, 35 * w, w },
                                        { 280 * w, 35 * w, w } },
                                      { V, T, V, V },
                                      1 }));
        }
        // dst NHWC, the rest NCHW: dst's order would transpose all three
        // inputs (1 + 2w bytes per element), the inputs' order dst alone
        // (w): the row is H*W (merged, 35), dst has stride 8 along it and 1
        // along C, the tile dim.
        {
            dims_t st[4];
            st[3] = cl;
            const si::select_folded f = si::fold_select(full_nd(d, st, wi));
            EXPECT_TRUE(folds_as(f, { { 2, 8, 35 },
                                      { { 280, 35, 1 },
                                        { 280 * w, 35 * w, w },
                                        { 280 * w, 35 * w, w },
                                        { 280 * w, w, 8 * w } },
                                      { V, V, V, T },
                                      1 }));
        }
        // dst NHWC, cond per channel, the sources NCHW: the sources' order
        // (dst transposed, w bytes) beats dst's (both sources, 2w); cond is
        // a scalar along H*W.
        {
            nd_spec s;
            s.w = wi;
            s.dst_from_inputs = false;
            s.dst = d;
            s.in[0] = { 1, 8, 1, 1 };
            s.in[1] = d;
            s.in[2] = d;
            s.strides[3] = cl;
            const si::select_folded f = si::fold_select(make_nd(s));
            EXPECT_TRUE(folds_as(f, { { 2, 8, 35 },
                                      { { 0, 1, 0 },
                                        { 280 * w, 35 * w, w },
                                        { 280 * w, 35 * w, w },
                                        { 280 * w, w, 8 * w } },
                                      { S, V, V, T },
                                      1 }));
        }
        // NHWC [2,64,5,7] with a per-channel cond: rows of C = 64, N*H*W =
        // 70 of them, cond a row vector: widened by 14 (the largest divisor
        // of 70 with 14 * 64 <= 1024) into 5 rows of 896.
        for (int port : { 0, 2 }) {
            const dims_t d2 = { 2, 64, 5, 7 };
            const dims_t cl2 = nhwc(d2);
            nd_spec s;
            s.w = wi;
            s.dst_from_inputs = false;
            s.dst = d2;
            for (int op = 0; op < 3; ++op) {
                s.in[op] = op == port ? dims_t { 1, 64, 1, 1 } : d2;
                if (op != port)
                    s.strides[op] = cl2;
            }
            s.strides[3] = cl2;
            const si::select_folded f = si::fold_select(make_nd(s));
            const int64_t data_row = 896 * w;
            hand_fold h { { 5, 896 },
                          { { 896, 1 },
                            { data_row, w },
                            { data_row, w },
                            { data_row, w } },
                          { V, V, V, V },
                          -1 };
            h.strides[port] = { 0, port == 0 ? 1 : w };
            EXPECT_TRUE(folds_as(f, h)) << "port " << port;
            EXPECT_EQ(f.rep, 14);
            EXPECT_EQ(f.rep_mask, 1u << port);
        }
        // [33,33], src_0 or cond with strides {1,33}: the tile dim is the
        // rows (dim 0).
        {
            dims_t st[4];
            st[1] = { 1, 33 };
            EXPECT_TRUE(folds_as(si::fold_select(full_nd({ 33, 33 }, st, wi)),
                                 { { 33, 33 },
                                   { { 33, 1 },
                                     { w, 33 * w },
                                     { 33 * w, w },
                                     { 33 * w, w } },
                                   { V, T, V, V },
                                   0 }));
            dims_t sc[4];
            sc[0] = { 1, 33 };
            EXPECT_TRUE(folds_as(si::fold_select(full_nd({ 33, 33 }, sc, wi)),
                                 { { 33, 33 },
                                   { { 1, 33 },
                                     { 33 * w, w },
                                     { 33 * w, w },
                                     { 33 * w, w } },
                                   { T, V, V, V },
                                   0 }));
        }
        // Attention [2,3,17,17], scores with the last two dims swapped,
        // mask [1,1,17,17], 0-D src_1: B and H merge (6), the two S dims
        // stay apart; src_0 contiguous along dim 1 (tile rows).
        {
            nd_spec s;
            s.w = wi;
            s.dst_from_inputs = false;
            s.dst = { 2, 3, 17, 17 };
            s.in[0] = { 1, 1, 17, 17 };
            s.in[1] = s.dst;
            s.in[2] = {};
            s.strides[1] = { 867, 289, 1, 17 };
            EXPECT_TRUE(folds_as(si::fold_select(make_nd(s)),
                                 { { 6, 17, 17 },
                                   { { 0, 17, 1 },
                                     { 289 * w, w, 17 * w },
                                     { 0, 0, 0 },
                                     { 289 * w, 17 * w, w } },
                                   { V, T, S, V },
                                   1 }));
            // dst swapped like the scores: the row is dim 2, where the mask
            // has stride 17 and is contiguous along dim 3.
            s.strides[3] = s.strides[1];
            EXPECT_TRUE(folds_as(si::fold_select(make_nd(s)),
                                 { { 6, 17, 17 },
                                   { { 0, 1, 17 },
                                     { 289 * w, 17 * w, w },
                                     { 0, 0, 0 },
                                     { 289 * w, 17 * w, w } },
                                   { T, V, S, V },
                                   1 }));
            // dst alone swapped (the scores row-major): dst's order
            // transposes the scores (w bytes per element) and the mask,
            // which is the same for every outer index and small, so costs
            // nothing; the scores' order transposes dst (w). A tie: dst's
            // order, the row dim 2, the mask and the scores contiguous
            // along dim 3 (tile rows).
            s.strides[1] = {};
            EXPECT_TRUE(folds_as(si::fold_select(make_nd(s)),
                                 { { 6, 17, 17 },
                                   { { 0, 1, 17 },
                                     { 289 * w, w, 17 * w },
                                     { 0, 0, 0 },
                                     { 289 * w, 17 * w, w } },
                                   { T, T, S, V },
                                   1 }));
        }
        // Rows of D that no order transposes, [B, H, S, D] = [2, 3, 5, 70]
        // with H and S swapped in memory for some operands: no two dims
        // merge in any order, and the order whose operands walk the fewest
        // bytes per element in runs under 1 KiB wins (ties: dst's order).
        {
            const dims_t dh = { 2, 3, 5, 70 };
            const dims_t rm = perm_strides(dh, { 0, 1, 2, 3 });
            const dims_t sw =
                    perm_strides(dh, { 0, 2, 1, 3 }); // {1050,70,210,1}
            ASSERT_EQ(sw, (dims_t { 1050, 70, 210, 1 }));
            const dims_t in_order[4] = { { 1050, 350, 70, 1 },
                                         { 1050 * w, 350 * w, 70 * w, w },
                                         { 1050 * w, 350 * w, 70 * w, w },
                                         { 1050 * w, 70 * w, 210 * w, w } };
            // dst alone swapped: dst's order walks the three inputs in rows
            // of 70 (1 + 2w bytes per element), theirs dst alone (w).
            EXPECT_TRUE(folds_as(
                    si::fold_select(full_nd(dh, { rm, rm, rm, sw }, wi)),
                    { { 2, 3, 5, 70 },
                      { in_order[0], in_order[1], in_order[2], in_order[3] },
                      { V, V, V, V },
                      -1 }));
            // src_0 alone swapped: dst's order walks src_0 alone so (w),
            // src_0's order cond, src_1 and dst (1 + 2w): dst's order.
            EXPECT_TRUE(folds_as(
                    si::fold_select(full_nd(dh, { rm, sw, rm, rm }, wi)),
                    { { 2, 3, 5, 70 },
                      { { 1050, 350, 70, 1 },
                        { 1050 * w, 70 * w, 210 * w, w },
                        { 1050 * w, 350 * w, 70 * w, w },
                        { 1050 * w, 350 * w, 70 * w, w } },
                      { V, V, V, V },
                      -1 }));
            // Rows of 1 KiB and more (cond's too) are no short runs: a
            // tie, dst's order; 1-byte elements at the bound itself, and
            // one byte under it the inputs' order.
            for (const int64_t r :
                 { int64_t { 4100 }, w == 1 ? int64_t { 1024 } : 0,
                   w == 1 ? int64_t { 1023 } : 0 }) {
                if (r == 0)
                    continue;
                const dims_t dl = { 2, 3, 5, r };
                const dims_t rml = perm_strides(dl, { 0, 1, 2, 3 });
                const dims_t swl = perm_strides(dl, { 0, 2, 1, 3 });
                const si::select_folded f = si::fold_select(
                        full_nd(dl, { rml, rml, rml, swl }, wi));
                if (r >= 1024)
                    EXPECT_TRUE(folds_as(
                            f, { { 2, 5, 3, r },
                                 { { 15 * r, r, 5 * r, 1 },
                                   { 15 * r * w, r * w, 5 * r * w, w },
                                   { 15 * r * w, r * w, 5 * r * w, w },
                                   { 15 * r * w, 3 * r * w, r * w, w } },
                                 { V, V, V, V },
                                 -1 }))
                            << "rows of " << r;
                else
                    EXPECT_TRUE(folds_as(f, { { 2, 3, 5, r },
                                              { { 15 * r, 5 * r, r, 1 },
                                                { 15 * r, 5 * r, r, 1 },
                                                { 15 * r, 5 * r, r, 1 },
                                                { 15 * r, r, 3 * r, 1 } },
                                              { V, V, V, V },
                                              -1 }))
                            << "rows of " << r;
            }
        }
        // The same with a mask of more than 64 KiB ([1, 300, 300]): it
        // counts, dst's order costs w + 1 and the scores' order (dst
        // transposed, w) wins.
        {
            nd_spec s;
            s.w = wi;
            s.dst_from_inputs = false;
            s.dst = { 2, 300, 300 };
            s.in[0] = { 1, 300, 300 };
            s.in[1] = s.dst;
            s.in[2] = {};
            s.strides[3] = { 90000, 1, 300 };
            EXPECT_TRUE(folds_as(si::fold_select(make_nd(s)),
                                 { { 2, 300, 300 },
                                   { { 0, 300, 1 },
                                     { 90000 * w, 300 * w, w },
                                     { 0, 0, 0 },
                                     { 90000 * w, w, 300 * w } },
                                   { V, V, S, T },
                                   1 }));
        }
    }
}

// Threads, the non-temporal kernels and dst and src_0 offsets at random,
// for the random layouts below (elements of `w` bytes).
plan_run_opts random_run_opts(std::mt19937_64 &g, int w) {
    plan_run_opts o;
    o.nthreads = 1 + static_cast<int>(g() % 3);
    o.working_set = g() % 4 == 0 ? si::nt_candidate_bytes() : 0;
    o.misd = (g() % 3) * static_cast<size_t>(w);
    o.mis0 = (g() % 2) * static_cast<size_t>(w);
    return o;
}

TEST_P(kernel_layouts, RandomPermutedLayouts) {
    // Random ranks 2 to 5, dims around tile and vector sizes, inputs
    // broadcast along random dims, dst in a random memory order (sometimes
    // padded), each input in dst's order, row-major or its own random
    // order (sometimes padded); threads, dst offsets and the non-temporal
    // kernel at random. run_plan_case decides JIT or reference from
    // expect_jit_able and compares with ref_select and the naive oracle.
    std::mt19937_64 g(test_seed(4242));
    int fails = 0, jit_able = 0, tiled = 0;
    const int count = 1000;
    for (int i = 0; i < count; ++i) {
        const nd_spec s = random_layout_spec(g, 4, 20000, 8 >> (i % 4),
                                             [](int) { return 1; });
        const si::select_nd p = make_nd(s);
        jit_able += expect_jit_able(p);
        tiled += si::fold_select(p).has_transposed();
        const plan_run_opts o = random_run_opts(g, s.w);
        KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                  "random case " + std::to_string(i) + " " + nd_str(p)
                          + " nthreads " + std::to_string(o.nthreads));
    }
    // The generator must produce mostly JIT-able problems and a good share
    // of tiled ones, so that those are what it tests.
    EXPECT_GT(jit_able, count / 2);
    EXPECT_GT(tiled, count / 5);
}

TEST_P(kernel_layouts, RandomLargeTiledLayouts) {
    // Random problems of 50 thousand to 1.5 million elements, large enough
    // for every shape of tile plan_tiles makes (streamed tiles, panels of
    // one or several row blocks, tiles narrower than the row, a staged dst,
    // dst bands) and for the thread split: ranks 2 to 4 with two dims from
    // the sizes around those tiles' edges (197, 255-257, 2047-2049, 3136),
    // one operand or dst in its own memory order (the last two of dst's
    // dims swapped, or a random order), the rest in dst's, padded pitches
    // (some a few bytes off 4 KiB multiples, whose rows crowd one L1 set),
    // broadcast inputs, operands off the cache-line grid, 1 to 4 threads,
    // the non-temporal kernels at random; each case runs once between
    // canaries and once with every tensor against a guard page.
    // SELGRAPH_TEST_RANDOM_LARGE raises the number of cases above 48.
    std::mt19937_64 g(test_seed(777));
    int fails = 0, tiled = 0;
    // Tiled cases streamed, in panels of fewer than all rows, in tiles
    // narrower than the row, with a staged dst, with dst bands.
    int kinds[5] = {};
    int count = 48;
    if (const char *e = std::getenv("SELGRAPH_TEST_RANDOM_LARGE"))
        count = std::max(count, std::atoi(e));
    const int64_t big[] = {
        63,  64,  65,   127,  128,  129,  197,  255,  256,
        257, 511, 1023, 1025, 2047, 2048, 2049, 3136, 4097
    };
    const int64_t small[] = { 1, 2, 3, 7, 12, 16, 17 };
    const int n_big = static_cast<int>(sizeof(big) / sizeof(big[0]));
    for (int i = 0; i < count; ++i) {
        const int rank = 2 + static_cast<int>(g() % 3);
        const int w = 8 >> (g() % 4);
        dims_t d(static_cast<size_t>(rank));
        for (auto &x : d)
            x = small[g() % 7];
        // Two big dims, often the last two.
        const int a = g() % 2 ? rank - 1 : static_cast<int>(g() % rank);
        int b = g() % 2 ? rank - 2 : static_cast<int>(g() % rank);
        if (b == a)
            b = (a + 1) % rank;
        d[static_cast<size_t>(a)] = big[g() % n_big];
        d[static_cast<size_t>(b)] = big[g() % n_big];
        const int64_t cap = 50000 + static_cast<int64_t>(g() % 1450000);
        auto elems = [&] {
            int64_t n = 1;
            for (auto x : d)
                n *= x;
            return n;
        };
        while (elems() > cap) {
            // Halve a small dim first, so that the big ones keep their
            // edges.
            auto it = std::max_element(
                    d.begin(), d.end(), [&](int64_t x, int64_t y) {
                        return (x <= 17 ? x : 0) < (y <= 17 ? y : 0);
                    });
            if (*it <= 1)
                it = std::max_element(d.begin(), d.end());
            *it = (*it + 1) / 2;
        }
        // Strides in memory order `perm`, the pitch after the fastest dim
        // sometimes padded by 1 to 17 elements or, for lines of 2 KiB or
        // more, rounded to a multiple of 4 KiB +- one element.
        auto strides = [&](const dims_t &dd, const perm_t &perm,
                           uint64_t kind) {
            dims_t s(dd.size());
            int64_t acc = 1;
            bool first = true;
            for (size_t k = perm.size(); k-- > 0;) {
                const auto j = static_cast<size_t>(perm[k]);
                s[j] = acc;
                acc *= std::max<int64_t>(dd[j], 1);
                if (first && acc > 1) {
                    first = false;
                    if (kind == 0)
                        acc += 1 + static_cast<int64_t>(g() % 17);
                    else if (kind == 1 && acc * w >= 2048) {
                        const int64_t q = 4096 / w;
                        acc = (acc + q - 1) / q * q
                              + static_cast<int64_t>(g() % 3) - 1;
                        acc = std::max<int64_t>(acc, dd[j] * s[j]);
                    }
                }
            }
            return s;
        };
        perm_t dperm = identity(rank);
        if (g() % 3 == 0)
            std::shuffle(dperm.begin(), dperm.end(), g);
        perm_t swapped = dperm;
        std::swap(swapped[static_cast<size_t>(rank - 1)],
                  swapped[static_cast<size_t>(rank - 2)]);
        nd_spec s = full_spec(d, w);
        random_broadcasts(s, g, 3, 8);
        // The odd operand (3: dst), its order and its pitch, in turn.
        const int odd = i % 4;
        perm_t oorder = swapped;
        if (g() % 3 == 0)
            std::shuffle(oorder.begin(), oorder.end(), g);
        for (int op = 0; op < 4; ++op) {
            const dims_t &dd = op < 3 ? s.in[op] : d;
            const perm_t &order = op == odd ? oorder : dperm;
            s.strides[op] = strides(dd, order, op == odd ? i / 4 % 3 : g() % 3);
        }
        const si::select_nd p = make_nd(s);
        plan_run_opts o;
        o.nthreads = 1 + static_cast<int>(g() % 4);
        o.working_set = g() % 2 ? si::nt_candidate_bytes() : 0;
        const si::select_folded f = si::fold_select(p);
        if (f.has_transposed()) {
            ++tiled;
            const si::tile_shape t = si::plan_tiles(f, o.nthreads);
            const int64_t rows = f.dims[f.ndims - 2];
            const int64_t inner = f.dims[f.ndims - 1];
            kinds[0] += t.stream;
            kinds[1] += !t.stream && t.rows < rows && t.cols == inner;
            kinds[2] += t.cols < inner;
            kinds[3] += t.rows == rows && si::dst_block_staged(f);
            kinds[4] += f.mode[si::op_dst] == si::inner_mode::transposed
                        && si::transposed_dst_band(
                                   f.strides[si::op_dst][f.ndims - 1], inner)
                                   > 0;
        }
        const size_t offs[] = { 0, 1, 2, 16, 32 };
        o.misd =
                offs[g() % 5] / static_cast<size_t>(w) * static_cast<size_t>(w);
        o.mis0 =
                offs[g() % 5] / static_cast<size_t>(w) * static_cast<size_t>(w);
        o.mis1 =
                offs[g() % 5] / static_cast<size_t>(w) * static_cast<size_t>(w);
        o.misc = offs[g() % 5];
        o.check_naive = false;
        const std::string desc = "large random case " + std::to_string(i) + " "
                                 + nd_str(p) + " nthreads "
                                 + std::to_string(o.nthreads);
        KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                  desc + " misd " + std::to_string(o.misd)
                          + (o.working_set ? " nt" : ""));
        // Again with every tensor against a guard page, ending right
        // before one or starting right after one.
        size_t span = 0;
        for (int op = 0; op < 4; ++op)
            span = std::max(span, span_bytes(p, op));
        guard_set gs(span);
        ASSERT_TRUE(gs.ok()) << "mmap/mprotect failed";
        gs.fill(g);
        const bool at_end = i % 2 == 0;
        KT_EXPECT(fails,
                  run_guarded(gs, p, si::plan_select(p, o.working_set), at_end,
                              o.nthreads),
                  desc
                          + (at_end ? " against the upper guards"
                                    : " against the lower guards")
                          + (o.working_set ? " nt" : ""));
    }
    // The generator must reach every kind of tile, so that those are what
    // it tests.
    EXPECT_GT(tiled, count / 3);
    const char *kind_names[5] = { "streamed", "panels", "narrow tiles",
                                  "staged dst", "dst bands" };
    for (int k = 0; k < 5; ++k)
        EXPECT_GT(kinds[k], 0)
                << kind_names[k] << " in none of " << count << " cases";
}

TEST_P(kernel_layouts, LayoutsLeftToTheReference) {
    // The layouts no kernel takes, staged inputs or not: an operand whose
    // smallest stride is past the stepped kernel's 255 elements, with no
    // stride-1 dim. They must run the reference kernel (checked by
    // run_plan_case through expect_jit_able, and here directly), and run
    // it right.
    auto &g = rng();
    int fails = 0;
    for (int w : { 4, 2, 1 })
        for (int64_t n : { 16, 17, 33 }) {
            struct ref_case {
                const char *name;
                dims_t d;
                dims_t st[4];
            };
            const ref_case cases[] = {
                { "dst_step_256", { 5, n }, { {}, {}, {}, { 256 * n, 256 } } },
                { "dst_column_step_300",
                  { 5, n },
                  { {}, {}, {}, { 300, 1500 } } },
                { "src0_step_256", { 5, n }, { {}, { 256 * n, 256 }, {}, {} } },
                // Channels-last [N, C, H, W] (n channels) with dst's
                // channels 256 apart: the reference walks it in memory
                // order (select_plan::ref).
                { "channels_last_dst_step256",
                  { 2, n, 3, 4 },
                  { { 12 * n, 1, 4 * n, n },
                    { 12 * n, 1, 4 * n, n },
                    { 12 * n, 1, 4 * n, n },
                    { 3072 * n, 256, 1024 * n, 256 * n } } },
            };
            for (const auto &rc : cases) {
                const si::select_nd p = full_nd(rc.d, rc.st, w);
                EXPECT_FALSE(expect_jit_able(p)) << rc.name;
                KT_EXPECT(fails,
                          plan_takes(si::plan_select(p, 0), kisa(), false),
                          std::string(rc.name) + " " + nd_str(p));
                KT_EXPECT(fails, run_plan_case(p, kisa(), plan_run_opts(), g),
                          std::string(rc.name) + " " + nd_str(p));
            }
        }
    // One long coalesced row (dst every 256th element of [3, 700]: 2100
    // elements) runs in blocks over the threads; rows of a few blocks and
    // a last partial one, at 1 to 3 threads.
    for (int w : { 4, 2, 1, 8 })
        for (int nthr : { 1, 2, 3 }) {
            const si::select_nd p =
                    full_nd({ 3, 700 }, { {}, {}, {}, { 700 * 256, 256 } }, w);
            const si::select_plan plan = si::plan_select(p, 0);
            EXPECT_FALSE(plan.kernel);
            EXPECT_EQ(plan.ref.ndims, 1) << nd_str(plan.ref);
            plan_run_opts o;
            o.nthreads = nthr;
            KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                      "long row at " + std::to_string(nthr) + " threads "
                              + nd_str(p));
        }
}

TEST_P(kernel_layouts, SteppedInputs) {
    // Inputs with no stride-1 dim, a slice with a step of 2 to 255 along
    // their fastest dim. In a fold without tiles, the stepped kernel
    // (kernel_key::src0_step) gathers each call's rows of them into a
    // buffer that the row kernel reads ("+a:<stepped kernel>"); where the
    // fold has tiles, they are staged, copied dense in their own memory
    // order by the same kernel ("+stage_a[...]"); a Select of a per-row or
    // 0-D cond and a 0-D other source runs the stepped kernel itself.
    // run_plan_case checks the staged set and the kernel against the model
    // (kernel_test_utils.hpp), and dst bit for bit against the reference,
    // with and without non-temporal stores, at 1 and 3 threads.
    if (!jit())
        GTEST_SKIP() << "no stepped kernels without a JIT ISA";
    auto &g = rng();
    int fails = 0;
    for (int w : { 4, 2, 1, 8 })
        for (int64_t n : { 16, 17, 33 }) {
            struct step_case {
                const char *name;
                dims_t d;
                dims_t st[4];
                dims_t bc[3];       // input shapes; empty: d
                const char *kernel; // in the plan's kernels
            };
            const dims_t nhwc = { 12 * n, 1, 4 * n, n };
            const step_case cases[] = {
                { "src0_every_other",
                  { 5, n },
                  { {}, { 2 * n, 2 }, {}, {} },
                  {},
                  "+a:" },
                { "src1_step3_padded_rows",
                  { 5, n },
                  { {}, {}, { 3 * n + 5, 3 }, {} },
                  {},
                  "+b:" },
                // The cond's bytes with a step: a 1-byte gather.
                { "cond_step5",
                  { 5, n },
                  { { 5 * n, 5 }, {}, {}, {} },
                  {},
                  "+c:" },
                // A column with a step, strides {2, 10}: gathered along
                // the row, 10 apart.
                { "src0_transposed_step2",
                  { 5, n },
                  { {}, { 2, 10 }, {}, {} },
                  {},
                  "+a:" },
                // cond in another order would be transposed in tiles,
                // where nothing is gathered: cond (1 byte) is staged, then
                // src_0 gathered.
                { "cond_another_order_src0_no_unit_stride",
                  { 4, 6, n },
                  { { 1, 4, 24 }, { 12 * n, 2 * n, 2 }, {}, {} },
                  {},
                  "+stage_c[" },
                // src_0 gathered beside cond transposed would need both in
                // tiles: src_0 is staged (2 x 4 bytes of a [5, n] against
                // cond's 1 x n, but staging cond leaves src_1 transposed
                // too), copied by the stepped kernel.
                { "src0_step_cond_and_src1_transposed",
                  { 5, n },
                  { { 1, 5 }, { 2 * n, 2 }, { 1, 5 }, {} },
                  {},
                  "+stage_a[" },
                // Layout case L29: channels-last [N, C, H, W] (n channels),
                // src_0 every other channel of a 2n-channel tensor.
                { "channels_last_src0_step2",
                  { 2, n, 3, 4 },
                  { nhwc, { 24 * n, 2, 8 * n, 2 * n }, nhwc, nhwc },
                  {},
                  "+a:" },
                // A per-channel src_1 [1, C, 1, 1] with a step, over
                // channels-last data.
                { "channels_last_src1_per_channel_step4",
                  { 2, n, 3, 4 },
                  { nhwc, nhwc, { 0, 4, 0, 0 }, nhwc },
                  { {}, {}, { 1, n, 1, 1 } },
                  "+b:" },
                // A per-row cond and a 0-D src_1: the stepped kernel runs
                // the Select itself.
                { "per_row_cond_src0_step2_src1_0d",
                  { 5, n },
                  { { 1, 0 }, { 2 * n, 2 }, {}, {} },
                  { { 5, 1 }, {}, { 1 } },
                  "_cs_ax2_bs_u1" },
                // The same with the sources' roles swapped.
                { "cond_0d_src0_0d_src1_step7",
                  { 5, n },
                  { {}, {}, { 7 * n, 7 }, {} },
                  { { 1 }, { 1 }, {} },
                  "_csn_ax7_bs_u1" },
                // A step past the vector path's: one element at a time.
                { "src0_step_100",
                  { 5, n },
                  { {}, { 100 * n, 100 }, {}, {} },
                  {},
                  "_ax100_" },
                // dst with a step: the row kernel writes a buffer, the
                // stepped kernel dst's elements from it.
                { "dst_every_other",
                  { 5, n },
                  { {}, {}, {}, { 2 * n, 2 } },
                  {},
                  "_dx2" },
                // dst's fastest dim, with a step of 2: the inputs, row-major,
                // move n apart along it, 64 bytes or less for cond
                // (gathered), more for the sources (staged, transposed into
                // dst's memory order).
                { "dst_column_step2",
                  { 5, n },
                  { {}, {}, {}, { 2, 10 } },
                  {},
                  "_dx2" },
                // Channels-last [N, C, H, W] (n channels) with dst every
                // other element, padded.
                { "channels_last_dst_step2_padded",
                  { 2, n, 3, 4 },
                  { nhwc,
                    nhwc,
                    nhwc,
                    { 24 * n + 16, 2, 8 * n + 4, 2 * n + 1 } },
                  {},
                  "_dx2" },
                // src_0 and dst with steps, a 0-D src_1.
                { "src0_step3_dst_step5_src1_0d",
                  { 5, n },
                  { {}, { 3 * n + 2, 3 }, {}, { 5 * n, 5 } },
                  { {}, {}, { 1 } },
                  "_dx5" },
            };
            for (const auto &sc : cases) {
                nd_spec s = full_spec(sc.d, w);
                for (int op = 0; op < 3; ++op)
                    if (!sc.bc[op].empty())
                        s.in[op] = sc.bc[op];
                for (int op = 0; op < 4; ++op)
                    if (!sc.st[op].empty())
                        s.strides[op] = sc.st[op];
                    else
                        s.strides[op] = dense_strides(op < 3 ? s.in[op] : sc.d);
                const si::select_nd p = make_nd(s);
                const std::string desc = std::string(sc.name) + " " + nd_str(p);
                EXPECT_TRUE(expect_jit_able(p)) << desc;
                const si::select_plan plan = si::plan_select(p, 0);
                EXPECT_NE(plan.kernel_str().find(sc.kernel), std::string::npos)
                        << desc << ": " << plan.kernel_str();
                EXPECT_TRUE(plan.kernel_str().find("_ax") != std::string::npos
                            || plan.kernel_str().find("_dx")
                                       != std::string::npos)
                        << desc << ": " << plan.kernel_str();
                for (int nthr : { 1, 3 })
                    for (size_t ws :
                         { size_t { 0 }, si::nt_candidate_bytes() }) {
                        plan_run_opts o;
                        o.nthreads = nthr;
                        o.working_set = ws;
                        o.mis0 = static_cast<size_t>(w) * (nthr == 3);
                        KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                                  desc + " at " + std::to_string(nthr)
                                          + " threads");
                    }
            }
        }
    // Gathers in calls of at most gather_chunk_bytes of each input: one
    // long row (src_0 every other element of [3, 20000]: 60000 elements
    // at stride 2, in column chunks), and many short rows that no dim
    // merges (rows of 3 elements 7 apart, in row chunks), at 1 to 3
    // threads, with and without non-temporal stores.
    for (int w : { 4, 2, 1, 8 })
        for (int nthr : { 1, 2, 3 })
            for (size_t ws : { size_t { 0 }, si::nt_candidate_bytes() }) {
                const si::select_nd ps[] = {
                    full_nd({ 3, 20000 }, { {}, { 40000, 2 }, {}, {} }, w),
                    full_nd({ 5000, 3 }, { {}, {}, { 7, 2 }, {} }, w),
                };
                for (const si::select_nd &p : ps) {
                    const si::select_plan plan = si::plan_select(p, ws);
                    EXPECT_TRUE(plan.gather[si::op_src0]
                                || plan.gather[si::op_src1])
                            << nd_str(p) << ": " << plan.kernel_str();
                    plan_run_opts o;
                    o.nthreads = nthr;
                    o.working_set = ws;
                    KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                              nd_str(p) + " at " + std::to_string(nthr)
                                      + " threads");
                }
            }
}

TEST_P(kernel_layouts, RandomSteppedLayouts) {
    // Random ranks 2 to 4, dims around the vector sizes, inputs broadcast
    // along random dims, every operand in its own random order (sometimes
    // padded), some operands (dst too) with a step of 2 to 17 (now and then
    // 300: the reference) along their fastest dim; threads and the
    // non-temporal kernels at random. run_plan_case decides JIT or reference
    // from the model (gathered, inputs or dst staged, or neither) and compares
    // with ref_select and the naive oracle.
    std::mt19937_64 g(test_seed(2929));
    int fails = 0, jit_able = 0, staged = 0, gathered = 0, dst_staged = 0;
    const int count = jit() ? 400 : 100;
    const int64_t steps[] = { 2, 2, 3, 4, 5, 8, 9, 16, 17, 300 };
    for (int i = 0; i < count; ++i) {
        // Operands with a step (a mask of 1 to 15, drawn at dst, which
        // is asked first).
        unsigned stepped = 0;
        const nd_spec s =
                random_layout_spec(g, 3, 6000, 8 >> (i % 4), [&](int op) {
                    if (op == si::op_dst)
                        stepped = 1u + static_cast<unsigned>(g() % 15);
                    return (stepped >> op) & 1 ? steps[g() % 10] : 1;
                });
        const si::select_nd p = make_nd(s);
        jit_able += expect_jit_able(p);
        staged += expected_fold(p).staged != 0;
        dst_staged += (expected_fold(p).staged >> si::op_dst) & 1;
        gathered += expected_fold(p).gathered != 0;
        const plan_run_opts o = random_run_opts(g, s.w);
        KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                  "random case " + std::to_string(i) + " " + nd_str(p)
                          + " nthreads " + std::to_string(o.nthreads));
    }
    // Mostly JIT-able through gathers and staged copies (some with dst
    // staged): what the test is for.
    EXPECT_GT(jit_able, count / 2);
    EXPECT_GT(gathered, count / 4);
    EXPECT_GT(staged, count / 8);
    EXPECT_GT(dst_staged, count / 100);
}

TEST(kernel_layouts_fold, ReferenceWalksDstsMemoryOrder) {
    // coalesce_select: dims of 1 dropped, the rest in dst's memory order and
    // merged where every operand is contiguous across two. Channels-last
    // [N, C, H, W] = [2, 5, 3, 4], src_0 every other element, dst's
    // channels padded to 8: the rows of 5 channels stay apart in dst, the
    // pixels merge into one dim of 24.
    dims_t d = { 2, 5, 3, 4 };
    const dims_t nhwc = { 60, 1, 20, 5 };
    const si::select_nd p =
            full_nd(d, { nhwc, { 120, 2, 40, 10 }, nhwc, { 96, 1, 32, 8 } }, 4);
    const si::select_nd c = si::coalesce_select(p);
    ASSERT_EQ(c.ndims, 2);
    EXPECT_EQ(c.dims[0], 24);
    EXPECT_EQ(c.dims[1], 5);
    const int64_t want[4][2] = { { 5, 1 }, { 10, 2 }, { 5, 1 }, { 8, 1 } };
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 2; ++j)
            EXPECT_EQ(c.strides[i][j], want[i][j]) << i << " " << j;
    // dst unpadded: one dim of 120, src_0 at stride 2.
    const si::select_nd q = si::coalesce_select(
            full_nd(d, { nhwc, { 120, 2, 40, 10 }, nhwc, nhwc }, 4));
    ASSERT_EQ(q.ndims, 1);
    EXPECT_EQ(q.dims[0], 120);
    EXPECT_EQ(q.strides[1][0], 2);
    // A per-channel cond [1, 5, 1, 1] keeps the channels apart; dims of 1
    // go: [1, 5, 1, 4] row-major is [5, 4].
    si::select_nd r = full_nd({ 1, 5, 1, 4 }, { {}, {}, {}, {} }, 2);
    const si::select_nd rc = si::coalesce_select(r);
    ASSERT_EQ(rc.ndims, 1);
    EXPECT_EQ(rc.dims[0], 20);
    r = full_nd(d, { { 0, 1, 0, 0 }, nhwc, nhwc, nhwc }, 4);
    const si::select_nd pc = si::coalesce_select(r);
    ASSERT_EQ(pc.ndims, 2);
    EXPECT_EQ(pc.dims[0], 24);
    EXPECT_EQ(pc.strides[0][0], 0);
    EXPECT_EQ(pc.strides[0][1], 1);
    // Row-major inputs and a dst transposed with a step of 2: in dst's
    // order the row costs 7 + 28 + 28 + 8 bytes of lines per f32 element,
    // in the inputs' 1 + 4 + 4 + 40; the inputs' order is walked.
    const si::select_nd t = si::coalesce_select(
            full_nd({ 5, 7 }, { {}, {}, {}, { 2, 10 } }, 4));
    ASSERT_EQ(t.ndims, 2);
    EXPECT_EQ(t.dims[0], 5);
    EXPECT_EQ(t.dims[1], 7);
    EXPECT_EQ(t.strides[3][0], 2);
    EXPECT_EQ(t.strides[3][1], 10);
    EXPECT_EQ(t.strides[1][1], 1);
    // Column-major inputs and a row-major dst with a step of 2: dst's
    // order costs 5 + 20 + 20 + 8 bytes, the inputs' 1 + 4 + 4 + 56: dst's
    // order.
    const dims_t cm = { 1, 5 };
    const si::select_nd u = si::coalesce_select(
            full_nd({ 5, 7 }, { cm, cm, cm, { 14, 2 } }, 4));
    ASSERT_EQ(u.ndims, 2);
    EXPECT_EQ(u.dims[0], 5);
    EXPECT_EQ(u.dims[1], 7);
    EXPECT_EQ(u.strides[3][1], 2);
    EXPECT_EQ(u.strides[1][1], 5);
}

TEST_P(kernel_layouts, StagedInputsBitExact) {
    // Inputs in three or four dim orders, which no fold runs: the inputs
    // of the fewest bytes are copied dense in dst's order first
    // (src/dispatch.cpp, staged_inputs), then the plan runs as for two
    // orders. run_plan_case checks the staged set against the model, the
    // kernels, and dst bit for bit against the reference, at 1 to 3
    // threads, with and without non-temporal stores.
    if (!jit())
        GTEST_SKIP() << "no staging without a JIT ISA";
    auto &g = rng();
    int fails = 0;
    int staged_cases = 0;
    for (int w : { 4, 2, 1, 8 })
        for (int64_t n : { 16, 17, 33 }) {
            struct staged_case {
                const char *name;
                dims_t d;
                perm_t order[4]; // empty: row-major
                dims_t bc[3];    // input shapes; empty: d
            };
            const staged_case cases[] = {
                // cond one way, src_0 another, dst and src_1 row-major.
                { "rank3_cond_and_src0_orders",
                  { 4, 6, n },
                  { { 2, 1, 0 }, { 0, 2, 1 }, {}, {} },
                  {} },
                // The survey's s8 case: src_1 0-D.
                { "rank4_cond_src0_dst_orders_src1_0d",
                  { 3, 5, 7, n },
                  { { 2, 3, 1, 0 }, { 0, 3, 2, 1 }, {}, {} },
                  { {}, {}, { 1 } } },
                // Four orders: two inputs staged.
                { "rank4_four_orders",
                  { 3, 5, n, 6 },
                  { { 3, 2, 1, 0 }, { 1, 3, 0, 2 }, { 2, 0, 3, 1 }, {} },
                  {} },
                // A staged input broadcast along a dim keeps it.
                { "rank4_broadcast_input_staged",
                  { 2, 5, 7, n },
                  { { 0, 2, 3, 1 }, { 3, 0, 1, 2 }, {}, {} },
                  { { 1, 5, 7, n }, {}, {} } },
                // dst in its own order too.
                { "rank3_dst_order_inputs_two_more",
                  { 5, n, 7 },
                  { { 1, 0, 2 }, { 2, 1, 0 }, {}, { 0, 2, 1 } },
                  {} },
            };
            for (const auto &sc : cases) {
                nd_spec s = full_spec(sc.d, w);
                for (int op = 0; op < 3; ++op)
                    if (!sc.bc[op].empty())
                        s.in[op] = sc.bc[op];
                for (int op = 0; op < 4; ++op) {
                    const dims_t &od = op < 3 ? s.in[op] : s.dst;
                    const int r = static_cast<int>(od.size());
                    if (!sc.order[op].empty() && r == int(sc.d.size()))
                        s.strides[op] = perm_strides(od, sc.order[op]);
                }
                const si::select_nd p = make_nd(s);
                const std::string desc = std::string(sc.name) + " " + nd_str(p);
                // Staged, not folded as it stands.
                KT_EXPECT(fails,
                          ::testing::AssertionResult(
                                  !expected_fold_unstaged(p).jit
                                  && expected_fold(p).staged != 0)
                                  << "the case does not need staging",
                          desc);
                const si::select_plan plan = si::plan_select(p, 0);
                KT_EXPECT(fails,
                          ::testing::AssertionResult(!plan.staged.empty())
                                  << plan.kernel_str(),
                          "staged: " + desc);
                staged_cases += !plan.staged.empty();
                for (int t = 1; t <= 3; ++t) {
                    plan_run_opts o;
                    o.nthreads = t;
                    o.working_set = t == 2 ? si::nt_candidate_bytes() : 0;
                    KT_EXPECT(fails, run_plan_case(p, kisa(), o, g),
                              desc + " nthreads " + std::to_string(t));
                }
            }
        }
    EXPECT_EQ(staged_cases, 4 * 3 * 5);
}

SELGRAPH_INSTANTIATE_PER_ISA(kernel_layouts);

} // namespace
} // namespace selgraph_test
