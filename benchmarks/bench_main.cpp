// selgraph_bench: the Select suite (S1..S8) for every type and thread count,
// each group measured back to back on the same buffers:
//
//   <case>/<type>/t<threads>/<impl>
//     limit_stream, limit_stream_nt  Select's byte mix (bench_suite.hpp)
//     memcpy                         dst bytes
//     selgraph_avx512/avx2/ref       compiled_partition::execute per ISA
//     diag_avx512_regular/_nt        the AVX-512 kernel with its stores
//                                    forced (internal dispatch; f32, bf16)
//     loop_rt, loop_ct               plain C++ loops (peer_loops.cpp)
//     eigen                          Eigen 3.4 Tensor (peer_eigen.cpp)
//     onednn                         oneDNN 2.6 binary (peer_onednn.cpp)
//   lat/<type>/n<elems>/t<threads>/<impl>   execute of tiny tensors
//   compile/<case>/<type>/<impl>/<cold|warm> partition::compile
//   tr<c>/e<w>/b<blocks>/<impl>             the transposing kernel alone
//                                            against memcpy (diagnostic,
//                                            bench_transpose.cpp)
//
// Counters: bytes (per call: effective bytes for Select, moved bytes for the
// limit and memcpy), GBps (bytes / real time, 1e9) and items_per_second
// (dst elements). Time is wall-clock (UseRealTime) and every benchmark
// reports the aggregates of --sg_reps repetitions; docs/performance.md and
// report.py use the medians.
//
// Options (besides Google Benchmark's): --sg_reps=N (default 5),
// --sg_min_time=S seconds per repetition (default 0.1), --sg_layout_scale=K
// (default 1): the layout cases with their outermost dim K times larger, to
// measure them beyond the caches of a machine whose L3 holds the default
// shapes.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "bench_harness.hpp"
#include "bench_selgraph.hpp"
#include "bench_suite.hpp"

namespace sgbench {

int g_reps = 5;
double g_min_time = 0.1;
int g_layout_scale = 1;

namespace {

const dtype all_types[] = { dtype::f32, dtype::bf16, dtype::f16, dtype::f64,
                            dtype::s8 };
const selgraph::cpu_isa all_isas[] = { selgraph::cpu_isa::avx512_core,
                                       selgraph::cpu_isa::avx2,
                                       selgraph::cpu_isa::none };

// --- buffers ---------------------------------------------------------------
// Every (case, type) keeps its buffers for the whole run (about 1.5 GB in
// all), so that repetitions can be interleaved across benchmarks
// (--benchmark_enable_random_interleaving, as run.sh does) without
// refilling them.
case_data &data_for(const bench_case &bc, dtype t) {
    static std::map<std::string, std::unique_ptr<case_data>> cache;
    std::unique_ptr<case_data> &d = cache[bc.id + "/" + dtype_name(t)];
    if (!d)
        d = std::make_unique<case_data>(bc.p, t);
    return *d;
}

// Full-size inputs of the stream kernel (the dst is the case's own), kept
// per (elements, width): S3..S8 share them.
struct stream_inputs {
    buffer c, a, b;
};
const stream_inputs &stream_inputs_for(int64_t n, int w) {
    static std::map<std::pair<int64_t, int>, stream_inputs> cache;
    auto it = cache.find({ n, w });
    if (it == cache.end()) {
        stream_inputs s;
        s.c = buffer(static_cast<size_t>(n));
        s.a = buffer(static_cast<size_t>(n * w));
        s.b = buffer(static_cast<size_t>(n * w));
        std::memset(s.c.get(), 1, static_cast<size_t>(n));
        std::memset(s.a.get(), 0x11, static_cast<size_t>(n * w));
        std::memset(s.b.get(), 0x22, static_cast<size_t>(n * w));
        it = cache.emplace(std::make_pair(n, w), std::move(s)).first;
    }
    return it->second;
}

// Each implementation's output is checked against the suite's definition
// once, before its first timed run.
bool verify_once(const std::string &name, case_data &d,
                 const std::function<void()> &fn, std::string &why) {
    static std::set<std::string> done;
    if (done.count(name))
        return true;
    poison_dst(d);
    fn();
    if (!check_dst(d, why))
        return false;
    done.insert(name);
    return true;
}

} // namespace

std::vector<int> thread_counts() {
    // 1, 2, 4, ... and every core present.
    const int all = omp_get_num_procs();
    std::vector<int> v;
    for (int t = 1; t < all; t *= 2)
        v.push_back(t);
    v.push_back(all);
    return v;
}

void set_counters(benchmark::State &st, int64_t bytes, int64_t elems,
                  int nthreads) {
    st.counters["bytes"] = static_cast<double>(bytes);
    st.counters["GBps"] =
            benchmark::Counter(static_cast<double>(bytes) * 1e-9,
                               benchmark::Counter::kIsIterationInvariantRate);
    st.counters["threads"] = nthreads;
    st.SetItemsProcessed(st.iterations() * elems);
}

void time_loop(benchmark::State &st, const std::function<void()> &fn) {
    fn(); // warm-up: caches, thread team, page tables
    for (auto _ : st)
        fn();
}

namespace {

// --- the suite ---------------------------------------------------------------

enum class impl_kind {
    limit_stream,
    limit_stream_nt,
    memcpy,
    selgraph,
    selgraph_regular, ///< diagnostic: AVX-512, stores forced regular
    selgraph_nt,      ///< diagnostic: AVX-512, stores forced non-temporal
    loop_rt,
    loop_ct,
    eigen,
    onednn,
};

struct case_args {
    const bench_case *bc;
    dtype type;
    int nthreads;
    impl_kind kind;
    selgraph::cpu_isa isa; // selgraph only
    std::string name;
};

void bm_case(benchmark::State &st, const case_args &a) {
    omp_set_num_threads(a.nthreads);
    case_data &d = data_for(*a.bc, a.type);
    const problem2d &p = d.p;
    const int w = dtype_size(a.type);
    const int64_t n = p.dst_elems();
    const operands o = d.ops();
    int64_t bytes = effective_bytes(p, w);
    std::function<void()> fn;
    std::string why;

    // Set-up, outside the timed region; these must outlive fn.
    bool fresh = false; // a selgraph partition compiled by this call
    std::unique_ptr<runner> peer;
    std::unique_ptr<selgraph_forced_stores> forced;
    bool check = true;

    switch (a.kind) {
        case impl_kind::limit_stream:
        case impl_kind::limit_stream_nt: {
            const stream_inputs &s = stream_inputs_for(n, w);
            const bool nt = a.kind == impl_kind::limit_stream_nt;
            bytes = n * (1 + 3 * w);
            fn = [&s, &o, n, w, nt] {
                stream_mix(n, w, s.c.as<uint8_t>(), s.a.get(), s.b.get(), o.dst,
                           nt);
            };
            check = false;
            st.SetLabel(stream_label(nt));
            break;
        }
        case impl_kind::memcpy: {
            const stream_inputs &s = stream_inputs_for(n, w);
            bytes = 2 * n * w;
            fn = [&s, &o, n, w] {
                memcpy_mt(o.dst, s.a.get(), static_cast<size_t>(n * w));
            };
            check = false;
            st.SetLabel("memcpy of dst bytes (read + write counted)");
            break;
        }
        case impl_kind::selgraph: {
            if (!cpu_runs(a.isa)) {
                st.SkipWithError("the CPU lacks this ISA");
                return;
            }
            compiled_select &cs = compiled_for(a.name, a.bc->dims, a.type,
                                               a.isa, nullptr, fresh);
            cs.sg->bind(o);
            fn = [&cs] { cs.sg->execute(cs.cp); };
            st.SetLabel(cs.sg->plan_label(a.isa));
            break;
        }
        case impl_kind::selgraph_regular:
        case impl_kind::selgraph_nt: {
            if (!cpu_runs(a.isa)) {
                st.SkipWithError("the CPU lacks this ISA");
                return;
            }
            forced = std::make_unique<selgraph_forced_stores>(
                    a.bc->dims, a.type, a.isa,
                    a.kind == impl_kind::selgraph_nt);
            const selgraph_forced_stores *f = forced.get();
            fn = [f, &o] { f->run(o); };
            st.SetLabel(forced->label());
            break;
        }
        case impl_kind::loop_rt: fn = [&p, &o, w] { loop_rt(p, w, o); }; break;
        case impl_kind::loop_ct: fn = [&p, &o, w] { loop_ct(p, w, o); }; break;
        case impl_kind::eigen:
        case impl_kind::onednn: {
            peer = a.kind == impl_kind::eigen ? make_eigen(d, a.nthreads, why)
                                              : make_onednn(d, why);
            if (!peer) {
                st.SkipWithError(why.c_str());
                return;
            }
            runner *r = peer.get();
            fn = [r] { r->run(); };
            st.SetLabel(peer->label());
            break;
        }
    }
    if (check && !verify_once(a.name, d, fn, why)) {
        st.SkipWithError(why.c_str());
        return;
    }
    for (int i = 0; fresh && i < warmup_executes(); ++i)
        fn();
    time_loop(st, fn);
    set_counters(st, bytes, n, a.nthreads);
}

std::string impl_name(impl_kind k, selgraph::cpu_isa isa) {
    switch (k) {
        case impl_kind::limit_stream: return "limit_stream";
        case impl_kind::limit_stream_nt: return "limit_stream_nt";
        case impl_kind::memcpy: return "memcpy";
        case impl_kind::selgraph:
            return std::string("selgraph_") + isa_short_name(isa);
        case impl_kind::selgraph_regular:
            return std::string("diag_") + isa_short_name(isa) + "_regular";
        case impl_kind::selgraph_nt:
            return std::string("diag_") + isa_short_name(isa) + "_nt";
        case impl_kind::loop_rt: return "loop_rt";
        case impl_kind::loop_ct: return "loop_ct";
        case impl_kind::eigen: return "eigen";
        default: return "onednn";
    }
}

} // namespace

void finish(benchmark::internal::Benchmark *b) {
    // "min" besides mean/median/stddev/cv: the best repetition's time, for
    // report.py --stat min on a machine too busy for medians (for the rate
    // counters it is the worst repetition; report.py uses bytes / time).
    b->UseRealTime()
            ->Unit(benchmark::kMicrosecond)
            ->MinTime(g_min_time)
            ->Repetitions(g_reps)
            ->ReportAggregatesOnly(true)
            ->ComputeStatistics("min", [](const std::vector<double> &v) {
                return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
            });
}

namespace {

void register_midsize() {
    for (const bench_case &bc : midsize_cases())
        for (int nthr : thread_counts())
            for (auto k : { impl_kind::selgraph, impl_kind::loop_rt,
                            impl_kind::loop_ct, impl_kind::limit_stream }) {
                const selgraph::cpu_isa isa =
                        k == impl_kind::selgraph
                                ? selgraph::cpu_isa::avx512_core
                                : selgraph::cpu_isa::isa_all;
                case_args a { &bc, dtype::f32, nthr, k, isa, "" };
                a.name = bc.id + "/f32/t" + std::to_string(nthr) + "/"
                         + impl_name(k, isa);
                finish(benchmark::RegisterBenchmark(
                        a.name.c_str(),
                        [a](benchmark::State &st) { bm_case(st, a); }));
            }
}

void register_suite() {
    for (const bench_case &bc : suite())
        for (dtype t : all_types) {
            // S9 (256M elements) only in the f32 and bf16: the
            // other types would hold 10 GB more for the whole run.
            if (bc.id == "S9" && t != dtype::f32 && t != dtype::bf16)
                continue;
            for (int nthr : thread_counts()) {
                std::vector<std::pair<impl_kind, selgraph::cpu_isa>> impls = {
                    { impl_kind::limit_stream, selgraph::cpu_isa::isa_all },
                    { impl_kind::limit_stream_nt, selgraph::cpu_isa::isa_all },
                    { impl_kind::memcpy, selgraph::cpu_isa::isa_all },
                };
                for (auto isa : all_isas)
                    impls.emplace_back(impl_kind::selgraph, isa);
                // The store choice, for the kernel tuning (f16 runs the
                // bf16 kernels).
                if (t != dtype::f16)
                    for (auto k : { impl_kind::selgraph_regular,
                                    impl_kind::selgraph_nt })
                        impls.emplace_back(k, selgraph::cpu_isa::avx512_core);
                for (auto k : { impl_kind::loop_rt, impl_kind::loop_ct,
                                impl_kind::eigen, impl_kind::onednn })
                    impls.emplace_back(k, selgraph::cpu_isa::isa_all);
                for (const auto &ki : impls) {
                    case_args a { &bc, t, nthr, ki.first, ki.second, "" };
                    a.name = bc.id + "/" + dtype_name(t) + "/t"
                             + std::to_string(nthr) + "/"
                             + impl_name(ki.first, ki.second);
                    finish(benchmark::RegisterBenchmark(
                            a.name.c_str(),
                            [a](benchmark::State &st) { bm_case(st, a); }));
                }
            }
        }
}

// --- latency: execute of tiny dense tensors ---------------------------------

void bm_latency(benchmark::State &st, int64_t n, int nthreads,
                selgraph::cpu_isa isa, bool peer) {
    omp_set_num_threads(nthreads);
    problem2d p;
    p.rows = 1;
    p.inner = n;
    case_data d(p, dtype::f32);
    const operands o = d.ops();
    std::function<void()> fn;
    std::unique_ptr<selgraph_select> sg;
    selgraph::compiled_partition cp;
    if (peer) {
        fn = [&o, n] { loop_serial(n, 4, o); };
    } else {
        if (!cpu_runs(isa)) {
            st.SkipWithError("the CPU lacks this ISA");
            return;
        }
        const std::vector<int64_t> dims[4] = { { n }, { n }, { n }, { n } };
        sg = std::make_unique<selgraph_select>(dims, dtype::f32);
        cp = sg->compile(isa);
        sg->bind(o);
        fn = [&sg, &cp] { sg->execute(cp); };
        st.SetLabel(sg->plan_label(isa));
    }
    std::string why;
    poison_dst(d);
    fn();
    if (!check_dst(d, why)) {
        st.SkipWithError(why.c_str());
        return;
    }
    time_loop(st, fn);
    set_counters(st, effective_bytes(p, 4), n, nthreads);
}

void register_latency() {
    for (int64_t n : { 1, 16, 1024 })
        for (int nthr : thread_counts()) {
            const std::string base = "lat/f32/n" + std::to_string(n) + "/t"
                                     + std::to_string(nthr) + "/";
            for (auto isa : all_isas)
                finish(benchmark::RegisterBenchmark(
                        (base + "selgraph_" + isa_short_name(isa)).c_str(),
                        [n, nthr, isa](benchmark::State &st) {
                            bm_latency(st, n, nthr, isa, false);
                        }));
            if (nthr == 1)
                finish(benchmark::RegisterBenchmark(
                        (base + "loop_serial").c_str(),
                        [n, nthr](benchmark::State &st) {
                            bm_latency(st, n, nthr, selgraph::cpu_isa::isa_all,
                                       true);
                        }));
        }
}

// --- compile time, kernel cache cold (capacity 0: every compile JITs) or
// warm (the kernels are in the cache) --------------------------------------

constexpr int default_cache_capacity = 1024;

void bm_compile(benchmark::State &st, const bench_case *bc,
                selgraph::cpu_isa isa, bool cold) {
    if (!cpu_runs(isa)) {
        st.SkipWithError("the CPU lacks this ISA");
        return;
    }
    selgraph_select sg(bc->dims, dtype::f32);
    st.SetLabel(sg.plan_label(isa));
    selgraph_select::set_cache_capacity(cold ? 0 : default_cache_capacity);
    benchmark::DoNotOptimize(sg.compile(isa)); // warm: fills the cache
    for (auto _ : st) {
        auto cp = sg.compile(isa);
        benchmark::DoNotOptimize(cp);
    }
    selgraph_select::set_cache_capacity(default_cache_capacity);
}

void register_compile() {
    for (const bench_case &bc : suite()) {
        if (bc.id != "S1" && bc.id != "S2" && bc.id != "S3")
            continue;
        for (auto isa : all_isas)
            for (bool cold : { true, false }) {
                const std::string name = "compile/" + bc.id + "/f32/selgraph_"
                                         + isa_short_name(isa) + "/"
                                         + (cold ? "cold" : "warm");
                finish(benchmark::RegisterBenchmark(
                        name.c_str(), [&bc, isa, cold](benchmark::State &st) {
                            bm_compile(st, &bc, isa, cold);
                        }));
            }
    }
}

std::string cpu_model() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0) {
            const auto pos = line.find(':');
            return pos == std::string::npos ? line : line.substr(pos + 2);
        }
    return "unknown";
}

// Removes --sg_* options from argv before Google Benchmark sees it.
void parse_own_flags(int &argc, char **argv) {
    int out = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string s = argv[i];
        if (s.rfind("--sg_reps=", 0) == 0)
            g_reps = std::max(1, std::atoi(s.c_str() + 10));
        else if (s.rfind("--sg_min_time=", 0) == 0)
            g_min_time = std::atof(s.c_str() + 14);
        else if (s.rfind("--sg_layout_scale=", 0) == 0) {
            g_layout_scale = std::atoi(s.c_str() + 18);
            // At 16 one f32 layout case holds 1.7 GB (its buffers, its
            // dense twin's and their oracles' dst).
            if (g_layout_scale < 1 || g_layout_scale > 16) {
                std::fprintf(stderr,
                             "--sg_layout_scale: %s is not a whole number "
                             "from 1 to 16\n",
                             s.c_str() + 18);
                std::exit(2);
            }
        } else
            argv[out++] = argv[i];
    }
    argc = out;
}

} // namespace
} // namespace sgbench

int main(int argc, char **argv) {
    using namespace sgbench;
    parse_own_flags(argc, argv);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    const dnnl_version_t *v = dnnl_version();
    benchmark::AddCustomContext("cpu_model", cpu_model());
    benchmark::AddCustomContext(
            "selgraph_best_isa",
            isa_short_name(selgraph::get_effective_cpu_isa()));
    benchmark::AddCustomContext(
            "onednn", std::to_string(v->major) + "." + std::to_string(v->minor)
                              + "." + std::to_string(v->patch));
    benchmark::AddCustomContext("eigen", eigen_version());
#if defined(__clang__)
    benchmark::AddCustomContext("compiler", "clang " __clang_version__);
#elif defined(__GNUC__)
    benchmark::AddCustomContext("compiler", "g++ " __VERSION__);
#endif
    benchmark::AddCustomContext("omp_max_threads",
                                std::to_string(omp_get_num_procs()));
    benchmark::AddCustomContext("reps", std::to_string(g_reps));
    benchmark::AddCustomContext("min_time_s", std::to_string(g_min_time));
    benchmark::AddCustomContext("layout_scale", std::to_string(g_layout_scale));
    register_suite();
    register_midsize();
    register_layouts(g_layout_scale);
    register_transpose();
    register_latency();
    register_compile();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
