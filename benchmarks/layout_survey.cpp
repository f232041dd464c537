// selgraph_layout_survey: Select over random layouts, outside the layout
// cases the suite was tuned on, each timed against the dense row-major
// Select of the same shapes in the same process.
//
//   selgraph_layout_survey [--cases N] [--seed S] [--case K] [--check]
//                          [--step K]
//
// Each case draws a rank (2-4), dims whose product gives 2-16 MiB per full
// operand, an element type (f32, bf16, s8, f64), a broadcast (none, a
// partial cond, a 0-D src_1, or one operand broadcast along random dims)
// and a layout: every operand in one random dim order, one input or dst in
// another, or src_0 and dst each in another; a quarter of the cases pad
// every operand's innermost dim by 1-17 elements. Per case: the median of
// three rounds, each round the median of 7 executes of each (after the
// store policy's warm-up), as the dense Select's time over selgraph's
// ("x dense"), with the GB/s of both and of the plain loop over the same
// strides (the median of three runs; bytes as the suite counts them) and
// the plan (verbose names); at the end, the spread of x dense and the
// cases slower than the plain loop. `--case K` runs case K of the seed alone,
// to look at one again. `--check` times nothing: each case's dst, padding
// included, after each execute of the store policy's warm-up and two more
// is compared byte for byte with the plain loop's from the same bytes, the
// inputs must come out unchanged, and the exit status is 1 where any case
// differs or fails. OMP_NUM_THREADS sets the threads. docs/performance.md
// ("Outside the suite's layouts") has what a run found. `--step K` (K >= 2)
// also gives one operand of each case (drawn among those with dims) a step
// of K along its innermost dim, as a slice x[..., ::K] has: a layout that no
// kernel covers where that operand has no other stride-1 dim (the draws of
// the cases after the first differ from a run without it).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <omp.h>

#include "bench_selgraph.hpp"
#include "bench_suite.hpp"

namespace {

using namespace sgbench;
using dims_t = std::vector<int64_t>;

int64_t product(const dims_t &d) {
    int64_t n = 1;
    for (int64_t x : d)
        n *= x;
    return n;
}

// Element strides of `d` stored in `order` (outermost first), the innermost
// dim padded by `pad` elements, its elements `step` apart.
dims_t strides_in(const dims_t &d, const std::vector<int> &order, int64_t pad,
                  int64_t step) {
    dims_t s(d.size());
    int64_t acc = step;
    for (size_t k = order.size(); k-- > 0;) {
        const auto i = static_cast<size_t>(order[k]);
        s[i] = acc;
        acc *= d[i];
        if (k + 1 == order.size())
            acc += pad;
    }
    return s;
}

// Elements from the first to the last one addressed, plus one.
int64_t span(const dims_t &d, const dims_t &s) {
    int64_t m = 1;
    for (size_t i = 0; i < d.size(); ++i)
        m += (d[i] - 1) * s[i];
    return m;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double time_executes(selgraph_select &sg,
                     const selgraph::compiled_partition &cp, int reps) {
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) {
        const auto a = std::chrono::steady_clock::now();
        sg.execute(cp);
        t.push_back(std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - a)
                            .count());
    }
    return median(t);
}

struct survey_case {
    dtype t = dtype::f32;
    dims_t d, dims[4];
    std::vector<int> order[4];
    int64_t pad = 0;
    int step_op = -1; ///< the operand with a step, -1: none
    int64_t step = 1;
};

survey_case draw(std::mt19937 &rng) {
    const auto pick = [&](int lo, int hi) {
        return std::uniform_int_distribution<int>(lo, hi)(rng);
    };
    survey_case c;
    const int nd = pick(2, 4);
    const dtype types[] = { dtype::f32, dtype::bf16, dtype::s8, dtype::f64 };
    c.t = types[pick(0, 3)];
    const double elems =
            static_cast<double>(int64_t(pick(2, 16)) << 20) / dtype_size(c.t);
    std::vector<double> share(static_cast<size_t>(nd));
    double sum = 0;
    for (double &s : share) {
        s = std::uniform_real_distribution<double>(0.2, 1.0)(rng);
        sum += s;
    }
    c.d.resize(static_cast<size_t>(nd));
    for (size_t i = 0; i < c.d.size(); ++i) {
        int64_t n = std::max<int64_t>(
                2, static_cast<int64_t>(std::pow(elems, share[i] / sum)));
        if (pick(0, 3) == 0)
            n += pick(-3, 3);
        c.d[i] = std::max<int64_t>(n, 2);
    }
    for (dims_t &x : c.dims)
        x = c.d;
    switch (pick(0, 5)) {
        case 1: // a cond broadcast along random dims
            for (int64_t &x : c.dims[op_cond])
                if (pick(0, 1))
                    x = 1;
            break;
        case 2: c.dims[op_src1].clear(); break; // 0-D src_1
        case 3: {
            dims_t &x = c.dims[pick(0, 2)];
            for (int64_t &v : x)
                if (pick(0, 2) == 0)
                    v = 1;
            break;
        }
        default: break;
    }
    std::vector<int> common(static_cast<size_t>(nd));
    for (int i = 0; i < nd; ++i)
        common[static_cast<size_t>(i)] = i;
    if (pick(0, 1))
        std::shuffle(common.begin(), common.end(), rng);
    const auto another = [&] {
        std::vector<int> p = common;
        for (int k = 0; k < 8 && p == common; ++k)
            std::shuffle(p.begin(), p.end(), rng);
        if (p == common)
            std::swap(p[p.size() - 1], p[p.size() - 2]);
        return p;
    };
    for (auto &o : c.order)
        o = common;
    switch (pick(0, 3)) {
        case 1: c.order[pick(0, 2)] = another(); break;
        case 2: c.order[op_dst] = another(); break;
        case 3:
            c.order[op_src0] = another();
            c.order[op_dst] = another();
            break;
        default: break;
    }
    if (pick(0, 3) == 0)
        c.pad = pick(1, 17);
    return c;
}

std::string describe(const dims_t &d, const std::vector<int> &order,
                     int64_t pad, int64_t step) {
    if (d.empty())
        return "0-D";
    std::string s;
    for (size_t i = 0; i < d.size(); ++i)
        s += (i ? "x" : "") + std::to_string(d[i]);
    s += " order ";
    for (int o : order)
        s += std::to_string(o);
    if (pad)
        s += " pad " + std::to_string(pad);
    if (step > 1)
        s += " step " + std::to_string(step);
    return s;
}

// "cond ... | src_0 ... | src_1 ... | dst ...": each operand's layout.
std::string layouts(const survey_case &c) {
    static const char *const name[4] = { "cond", "src_0", "src_1", "dst" };
    std::string s;
    for (int op = 0; op < 4; ++op)
        s += std::string(op ? " | " : "") + name[op] + " "
             + describe(c.dims[op], c.order[op], c.pad,
                        op == c.step_op ? c.step : 1);
    return s;
}

struct case_result {
    double x_dense, x_loop; // the dense Select's time, the loop's, over ours
};

// Runs one case.
case_result run_case(int k, const survey_case &c, std::mt19937_64 &rng,
                     bool check) {
    const int w = dtype_size(c.t);
    std::vector<int64_t> strides[4];
    buffer laid[4], dense[4];
    size_t laid_bytes[4]; // each operand's span, padding included
    for (int op = 0; op < 4; ++op) {
        const int ew = op == op_cond ? 1 : w;
        const dims_t &d = c.dims[op];
        int64_t n = 1;
        if (!d.empty()) {
            strides[op] = strides_in(d, c.order[op], c.pad,
                                     op == c.step_op ? c.step : 1);
            n = span(d, strides[op]);
        }
        laid_bytes[op] = static_cast<size_t>(n * ew);
        laid[op] = buffer(laid_bytes[op]);
        dense[op] = buffer(static_cast<size_t>(product(d) * ew));
        for (buffer *b : { &laid[op], &dense[op] }) {
            auto *p = b->as<uint8_t>();
            const size_t bytes =
                    static_cast<size_t>((b == &laid[op] ? n : product(d)) * ew);
            fill_random_bytes(p, bytes, op == op_cond, rng);
        }
    }
    const auto ops = [](const buffer *b) {
        return operands { b[op_cond].as<uint8_t>(), b[op_src0].get(),
                          b[op_src1].get(), b[op_dst].get() };
    };
    selgraph_select sg(c.dims, c.t, &strides), sd(c.dims, c.t);
    const selgraph::compiled_partition cp =
            sg.compile(selgraph::cpu_isa::isa_all);
    sg.bind(ops(laid));
    // The plain loop over the same strides, dims right-aligned to dst's.
    const dims_t &dd = c.dims[op_dst];
    const int nd = static_cast<int>(dd.size());
    int64_t ldims[8] = {}, lst[4][8] = {};
    for (int i = 0; i < nd; ++i)
        ldims[i] = dd[static_cast<size_t>(i)];
    for (int op = 0; op < 4; ++op)
        loop_nd_strides(nd, c.dims[op], strides[op], lst[op]);
    const int nthr = omp_get_max_threads();
    if (check) {
        // dst's whole span, padding included, after the plain loop and
        // after each execute, each from the same random bytes; the inputs,
        // which no execute may change.
        const auto bytes_of = [&](int op) {
            const uint8_t *const b = laid[op].as<uint8_t>();
            return std::vector<uint8_t>(b, b + laid_bytes[op]);
        };
        std::vector<uint8_t> in[op_dst];
        for (int op = 0; op < op_dst; ++op)
            in[op] = bytes_of(op);
        const std::vector<uint8_t> before = bytes_of(op_dst);
        loop_nd(nd, ldims, lst, w, ops(laid), nthr);
        const std::vector<uint8_t> want = bytes_of(op_dst);
        // Every execute of the store policy's warm-up, which tries each
        // store kind, and two after it.
        const size_t n = laid_bytes[op_dst];
        size_t bad = n;
        for (int i = 0; i < warmup_executes() + 2 && bad == n; ++i) {
            std::memcpy(laid[op_dst].get(), before.data(), n);
            sg.execute(cp);
            bad = static_cast<size_t>(std::mismatch(want.begin(), want.end(),
                                                    laid[op_dst].as<uint8_t>())
                                              .first
                                      - want.begin());
        }
        bool inputs_kept = true;
        for (int op = 0; op < op_dst; ++op)
            inputs_kept = inputs_kept && bytes_of(op) == in[op];
        const bool same = bad == n && inputs_kept;
        std::printf("%4d %s %-4s | %s | %s", k,
                    same          ? "same"
                    : inputs_kept ? "DIFFERS"
                                  : "INPUT CHANGED",
                    dtype_name(c.t), layouts(c).c_str(),
                    sg.plan_label(selgraph::cpu_isa::isa_all).c_str());
        if (bad < n)
            std::printf(" (first at dst byte %zu of %zu)", bad, n);
        std::printf("\n");
        std::fflush(stdout);
        return { same ? 1.0 : 0.0, 0 };
    }
    const selgraph::compiled_partition cpd =
            sd.compile(selgraph::cpu_isa::isa_all);
    sd.bind(ops(dense));
    for (int i = 0; i < warmup_executes() + 2; ++i) {
        sg.execute(cp);
        sd.execute(cpd);
    }
    const auto time_loop = [&] {
        const auto a = std::chrono::steady_clock::now();
        loop_nd(nd, ldims, lst, w, ops(laid), nthr);
        return std::chrono::duration<double>(std::chrono::steady_clock::now()
                                             - a)
                .count();
    };
    time_loop();
    std::vector<double> ratio, ts, td, tl;
    for (int round = 0; round < 3; ++round) {
        ts.push_back(time_executes(sg, cp, 7));
        td.push_back(time_executes(sd, cpd, 7));
        tl.push_back(time_loop());
        ratio.push_back(td.back() / ts.back());
    }
    const double bytes = static_cast<double>(
            product(c.dims[op_cond])
            + w
                      * (product(c.dims[op_src0]) + product(c.dims[op_src1])
                         + product(c.dims[op_dst])));
    const double x = median(ratio);
    std::printf("%4d %5.2f %-4s sel %6.1f GB/s dense %6.1f loop %6.1f | %s | "
                "%s\n",
                k, x, dtype_name(c.t), bytes / median(ts) / 1e9,
                bytes / median(td) / 1e9, bytes / median(tl) / 1e9,
                layouts(c).c_str(),
                sg.plan_label(selgraph::cpu_isa::isa_all).c_str());
    std::fflush(stdout);
    return { x, median(tl) / median(ts) };
}

} // namespace

int main(int argc, char **argv) {
    int cases = 40, only = -1, step = 1;
    unsigned seed = 1;
    bool check = false;
    const auto usage = [&] {
        std::fprintf(stderr,
                     "usage: %s [--cases N] [--seed S] [--case K] [--check] "
                     "[--step K]\n",
                     argv[0]);
        return 2;
    };
    for (int i = 1; i < argc; ++i) {
        const std::string o = argv[i];
        if (o == "--check") {
            check = true;
            continue;
        }
        if (i + 1 == argc)
            return usage();
        const int v = std::atoi(argv[++i]);
        if (o == "--cases" && v > 0)
            cases = v;
        else if (o == "--seed")
            seed = static_cast<unsigned>(v);
        else if (o == "--case" && v >= 0)
            only = v;
        else if (o == "--step" && v >= 2)
            step = v;
        else
            return usage();
    }
    std::mt19937 rng(seed);
    std::vector<double> all;
    std::vector<std::pair<double, int>> vs_loop;
    for (int k = 0; k < cases && (only < 0 || k <= only); ++k) {
        survey_case c = draw(rng);
        if (step > 1) {
            std::vector<int> with_dims;
            for (int op = 0; op < 4; ++op)
                if (!c.dims[op].empty())
                    with_dims.push_back(op);
            c.step_op = with_dims[std::uniform_int_distribution<size_t>(
                    0, with_dims.size() - 1)(rng)];
            c.step = step;
        }
        std::mt19937_64 fill(seed * 1000003u + static_cast<unsigned>(k));
        if (only >= 0 && k != only)
            continue;
        try {
            const case_result r = run_case(k, c, fill, check);
            all.push_back(r.x_dense);
            vs_loop.emplace_back(r.x_loop, k);
        } catch (const std::exception &e) {
            std::printf("%4d error: %s\n", k, e.what());
        }
    }
    if (check) {
        const auto same = std::count(all.begin(), all.end(), 1.0);
        std::printf("dst as the plain loop writes it, inputs unchanged: %ld "
                    "of %d cases\n",
                    static_cast<long>(same), only >= 0 ? 1 : cases);
        return same == (only >= 0 ? 1 : cases) ? 0 : 1;
    }
    if (all.size() > 1) {
        std::sort(all.begin(), all.end());
        const auto below = [&](double x) {
            return std::count_if(all.begin(), all.end(),
                                 [x](double r) { return r < x; });
        };
        std::printf("x dense over %zu cases: median %.2f, quartiles %.2f / "
                    "%.2f; below 0.25: %ld, below 0.5: %ld, below 0.85: %ld\n",
                    all.size(), all[all.size() / 2], all[all.size() / 4],
                    all[all.size() * 3 / 4], static_cast<long>(below(0.25)),
                    static_cast<long>(below(0.5)),
                    static_cast<long>(below(0.85)));
        std::sort(vs_loop.begin(), vs_loop.end());
        std::printf("x the plain loop (its time over selgraph's): lowest %.2f "
                    "(case %d), median %.2f; below 1: %ld\n",
                    vs_loop[0].first, vs_loop[0].second,
                    vs_loop[vs_loop.size() / 2].first,
                    static_cast<long>(
                            std::count_if(vs_loop.begin(), vs_loop.end(),
                                          [](const std::pair<double, int> &v) {
                                              return v.first < 1;
                                          })));
    }
    return 0;
}
