// The kernels through the public API (graph, partition::compile,
// compiled_partition::execute), per ISA: results bit for bit against the
// same partition compiled with the NONE cap and against the naive oracle
// for every data type Select takes, with a boolean or a u8 cond; the JIT of the
// ISA taken by compile (through the global cache, and through SELGRAPH_VERBOSE
// / SELGRAPH_JIT_DUMP in a child process); compiling again hits the cache; many
// std::threads executing one compiled partition at once; in-place and strided
// dst; W^X of the generated code.
#include <sys/wait.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <thread>

#include "kernel_test_utils.hpp"

namespace selgraph_test {
namespace {

using dt = sg::logical_tensor::data_type;
using lt_layout = sg::logical_tensor::layout_type;

using kernel_api = isa_test;

/// Every type Select takes, with its size in bytes and its name (written
/// out here, not taken from the library).
struct type_info {
    dt t;
    int size;
    const char *name;
};
const std::vector<type_info> &select_types() {
    static const std::vector<type_info> v = {
        { dt::f32, 4, "f32" },         { dt::bf16, 2, "bf16" },
        { dt::f16, 2, "f16" },         { dt::f64, 8, "f64" },
        { dt::s64, 8, "s64" },         { dt::u64, 8, "u64" },
        { dt::s32, 4, "s32" },         { dt::u32, 4, "u32" },
        { dt::s16, 2, "s16" },         { dt::u16, 2, "u16" },
        { dt::s8, 1, "s8" },           { dt::u8, 1, "u8" },
        { dt::f8_e5m2, 1, "f8_e5m2" }, { dt::f8_e4m3, 1, "f8_e4m3" },
        { dt::boolean, 1, "boolean" },
    };
    return v;
}
int dt_size(dt t) {
    for (const auto &ti : select_types())
        if (ti.t == t)
            return ti.size;
    return 0;
}
const char *dt_name(dt t) {
    for (const auto &ti : select_types())
        if (ti.t == t)
            return ti.name;
    return "?";
}

sg::engine &cpu_engine() {
    static sg::engine e(sg::engine::kind::cpu, 0);
    return e;
}

/// One Select partition compiled for concrete shapes.
struct api_select {
    sg::logical_tensor in[3];
    sg::logical_tensor dst;
    sg::compiled_partition cp;
    si::select_nd nd; ///< the same problem for the oracles
};

api_select compile_select(dt t, const dims_t &c, const dims_t &a,
                          const dims_t &b, const dims_t &dst_strides = {},
                          dt cond_t = dt::boolean) {
    api_select s;
    s.in[0] = sg::logical_tensor(1, cond_t, c, lt_layout::strided);
    s.in[1] = sg::logical_tensor(2, t, a, lt_layout::strided);
    s.in[2] = sg::logical_tensor(3, t, b, lt_layout::strided);
    const sg::logical_tensor dst_decl(4, t, lt_layout::strided);
    sg::op sel(10, sg::op::kind::Select, { s.in[0], s.in[1], s.in[2] },
               { dst_decl }, "select");
    sg::graph g(sg::engine::kind::cpu);
    g.add_op(sel);
    g.finalize();
    const auto parts = g.get_partitions();
    const sg::logical_tensor dst_c =
            dst_strides.empty()
                    ? dst_decl
                    : sg::logical_tensor(4, t, bcast_dims(a, b), dst_strides);
    s.cp = parts.at(0).compile({ s.in[0], s.in[1], s.in[2] }, { dst_c },
                               cpu_engine());
    s.dst = s.cp.query_logical_tensor(4);
    nd_spec spec;
    spec.in[0] = c;
    spec.in[1] = a;
    spec.in[2] = b;
    spec.strides[3] = dst_strides;
    spec.w = dt_size(t);
    s.nd = make_nd(spec);
    return s;
}

void execute(const api_select &s, const void *c, const void *a, const void *b,
             void *d) {
    sg::stream strm(cpu_engine());
    s.cp.execute(strm,
                 { sg::tensor(s.in[0], cpu_engine(), const_cast<void *>(c)),
                   sg::tensor(s.in[1], cpu_engine(), const_cast<void *>(a)),
                   sg::tensor(s.in[2], cpu_engine(), const_cast<void *>(b)) },
                 { sg::tensor(s.dst, cpu_engine(), d) });
}

/// Empties the global cache (capacity 0, then back).
void clear_global_cache() {
    const int cap = sg::get_kernel_cache_capacity();
    sg::set_kernel_cache_capacity(0);
    sg::set_kernel_cache_capacity(cap);
}

TEST_P(kernel_api, MatchesNoneCapAndOracle) {
    auto &g = rng();
    int fails = 0;
    EXPECT_EQ(to_kernel_isa(sg::get_effective_cpu_isa()), kisa());
    const std::vector<int64_t> all_n = { 1, 15, 16, 17, 33, 64, 129, 1000 };
    const std::vector<int64_t> few_n = { 1, 17, 129 };
    int k = 0;
    for (const auto &ti : select_types())
        for (int64_t n : ti.t == dt::f32 || ti.size == 8 ? all_n : few_n)
            for (const auto &pt : broadcast_patterns(3, n)) {
                const dt t = ti.t;
                // cond alternates between boolean and u8 (DirectML's).
                const dt ct = ++k % 2 ? dt::boolean : dt::u8;
                const api_select s =
                        compile_select(t, pt.c, pt.a, pt.b, {}, ct);
                api_select ref;
                {
                    sg::impl::scoped_isa_cap none(sg::cpu_isa::none);
                    ref = compile_select(t, pt.c, pt.a, pt.b, {}, ct);
                }
                const int w = dt_size(t);
                EXPECT_EQ(s.dst.get_mem_size(), span_bytes(s.nd, 3));
                nd_buffers b(s.nd, g);
                std::vector<uint8_t> want(b.dst.data(),
                                          b.dst.data() + b.dst.size());
                std::vector<uint8_t> none_dst(want);
                naive_select(s.nd, b.cond.data(), b.src0.data(), b.src1.data(),
                             want.data());
                execute(s, b.cond.data(), b.src0.data(), b.src1.data(),
                        b.dst.data());
                execute(ref, b.cond.data(), b.src0.data(), b.src1.data(),
                        none_dst.data());
                const std::string desc = std::string(dt_name(t)) + " cond "
                                         + dt_name(ct) + " " + pt.name + " "
                                         + nd_str(s.nd);
                KT_EXPECT(fails,
                          bytes_equal(b.dst.data(), none_dst.data(),
                                      b.dst.size(), w),
                          desc + " (vs the NONE cap)");
                KT_EXPECT(
                        fails,
                        bytes_equal(b.dst.data(), want.data(), b.dst.size(), w),
                        desc + " (vs the naive oracle)");
                KT_EXPECT(fails, b.canaries_ok(), desc);
            }
}

TEST_P(kernel_api, CompileTakesTheJitOfTheIsa) {
    // With an empty global cache, compile must generate exactly the kernel
    // of the ISA under test (none for NONE), and a second identical
    // compile must hit the cache.
    for (dt t : { dt::f32, dt::bf16, dt::f16, dt::f64, dt::s8 })
        for (const auto &pt : broadcast_patterns(4, 100)) {
            clear_global_cache();
            auto &cache = si::kernel_cache::global();
            const long c0 = cache.creations();
            const api_select s = compile_select(t, pt.c, pt.a, pt.b);
            const long c1 = cache.creations();
            EXPECT_EQ(c1 - c0, jit() ? 1 : 0)
                    << dt_name(t) << " " << pt.name << " " << nd_str(s.nd);
            const api_select s2 = compile_select(t, pt.c, pt.a, pt.b);
            EXPECT_EQ(cache.creations(), c1)
                    << "an identical compile generated a kernel again: "
                    << dt_name(t) << " " << pt.name;
            if (jit()) {
                bool hit = false;
                si::kernel_ptr k;
                const si::kernel_key want = expected_key(s.nd, kisa(), false);
                try {
                    k = cache.get_or_create(
                            want,
                            []() -> si::kernel_ptr {
                                throw std::logic_error("not in the cache");
                            },
                            &hit);
                } catch (const std::logic_error &) {
                }
                EXPECT_TRUE(hit)
                        << "compile did not generate " << si::kernel_name(want)
                        << " for " << dt_name(t) << " " << pt.name;
                if (k) {
                    EXPECT_EQ(k->name(), si::kernel_name(want));
                }
            }
        }
}

TEST_P(kernel_api, PdpdRunsTheKernelOfItsNumpyEquivalent) {
    // A pdpd Select becomes the N-d problem of the numpy Select whose
    // inputs have their dims where pdpd lays them: the same kernel (a cache
    // hit, no generation) and the same bytes.
    struct pdpd_case {
        dims_t c, a, b;
        int64_t axis;
        dims_t c_np, b_np; // the same placement written for numpy
    };
    const std::vector<pdpd_case> cases = {
        { { 4 }, { 4, 6, 40 }, { 4, 6 }, 0, { 4, 1, 1 }, { 4, 6, 1 } },
        { { 6, 1 }, { 4, 6, 40 }, { 6, 40 }, 1, { 6, 1 }, { 6, 40 } },
        { { 3, 4 }, { 2, 3, 4, 33 }, { 3, 1 }, 1, { 3, 4, 1 }, { 3, 1, 1 } },
        { { 1 }, { 5, 70 }, {}, 1, {}, {} },
    };
    auto &g = rng();
    for (dt t : { dt::f64, dt::s8, dt::f32 })
        for (const auto &pc : cases) {
            const std::string desc = std::string(dt_name(t)) + " pdpd "
                                     + dims_str(pc.c) + " " + dims_str(pc.a)
                                     + " " + dims_str(pc.b) + " axis "
                                     + std::to_string(pc.axis);
            const sg::logical_tensor lc(1, dt::boolean, pc.c,
                                        lt_layout::strided);
            const sg::logical_tensor la(2, t, pc.a, lt_layout::strided);
            const sg::logical_tensor lb(3, t, pc.b, lt_layout::strided);
            const sg::logical_tensor ld(4, t, lt_layout::strided);
            sg::op sel(11, sg::op::kind::Select, { lc, la, lb }, { ld });
            sel.set_attr(sg::op::attr::auto_broadcast, "pdpd");
            sel.set_attr<int64_t>(sg::op::attr::axis, pc.axis);
            sg::graph gr(sg::engine::kind::cpu);
            gr.add_op(sel);
            gr.finalize();
            clear_global_cache();
            auto &cache = si::kernel_cache::global();
            const long c0 = cache.creations();
            const sg::compiled_partition cp = gr.get_partitions().at(0).compile(
                    { lc, la, lb }, { ld }, cpu_engine());
            EXPECT_EQ(cache.creations() - c0, jit() ? 1 : 0) << desc;
            const long c1 = cache.creations();
            const api_select np = compile_select(t, pc.c_np, pc.a, pc.b_np);
            EXPECT_EQ(cache.creations(), c1)
                    << "the numpy equivalent needed another kernel: " << desc;
            const sg::logical_tensor qd = cp.query_logical_tensor(4);
            EXPECT_EQ(qd.get_dims(), pc.a) << desc;
            nd_buffers b(np.nd, g);
            std::vector<uint8_t> want(b.dst.data(),
                                      b.dst.data() + b.dst.size());
            std::vector<uint8_t> got(want);
            execute(np, b.cond.data(), b.src0.data(), b.src1.data(),
                    want.data());
            sg::stream strm(cpu_engine());
            cp.execute(strm,
                       { sg::tensor(lc, cpu_engine(), b.cond.data()),
                         sg::tensor(la, cpu_engine(), b.src0.data()),
                         sg::tensor(lb, cpu_engine(), b.src1.data()) },
                       { sg::tensor(qd, cpu_engine(), got.data()) });
            EXPECT_TRUE(bytes_equal(got.data(), want.data(), got.size(),
                                    dt_size(t)))
                    << desc;
            std::vector<uint8_t> naive(b.dst.data(),
                                       b.dst.data() + b.dst.size());
            naive_select(np.nd, b.cond.data(), b.src0.data(), b.src1.data(),
                         naive.data());
            EXPECT_TRUE(bytes_equal(got.data(), naive.data(), got.size(),
                                    dt_size(t)))
                    << desc << " (vs the naive oracle)";
        }
}

TEST_P(kernel_api, AttentionMaskPublic) {
    // Also the workload of the verbose/JIT-dump child process.
    auto &g = rng();
    for (dt t : { dt::f32, dt::bf16 }) {
        const api_select s =
                compile_select(t, { 1, 1, 8, 8 }, { 2, 3, 8, 8 }, {});
        EXPECT_EQ(s.dst.get_dims(), dims_t({ 2, 3, 8, 8 }));
        nd_buffers b(s.nd, g);
        std::vector<uint8_t> want(b.dst.data(), b.dst.data() + b.dst.size());
        naive_select(s.nd, b.cond.data(), b.src0.data(), b.src1.data(),
                     want.data());
        execute(s, b.cond.data(), b.src0.data(), b.src1.data(), b.dst.data());
        EXPECT_TRUE(bytes_equal(b.dst.data(), want.data(), b.dst.size(),
                                dt_size(t)));
    }
}

TEST_P(kernel_api, InPlaceAndStridedDst) {
    auto &g = rng();
    int fails = 0;
    for (dt t : { dt::f32, dt::f16, dt::s64 })
        for (int64_t n : { 1, 16, 17, 100, 257 }) {
            const int w = dt_size(t);
            // In place: dst shares src_0's buffer, as get_inplace_ports says.
            const api_select s = compile_select(t, { n }, { 3, n }, {});
            const auto ip = s.cp.get_inplace_ports();
            ASSERT_EQ(ip.size(), 1u);
            EXPECT_EQ(ip[0], std::make_pair(size_t(2), size_t(4)));
            nd_buffers b(s.nd, g);
            std::vector<uint8_t> want(b.src0.data(),
                                      b.src0.data() + b.src0.size());
            std::vector<uint8_t> src0_copy(want);
            naive_select(s.nd, b.cond.data(), src0_copy.data(), b.src1.data(),
                         want.data());
            execute(s, b.cond.data(), b.src0.data(), b.src1.data(),
                    b.src0.data());
            KT_EXPECT(fails,
                      bytes_equal(b.src0.data(), want.data(), want.size(), w),
                      "in place " + nd_str(s.nd));
            // Padded dst rows: the gaps keep their bytes.
            const api_select p = compile_select(t, { 3, 1 }, { 3, n }, { 1, n },
                                                { n + 9, 1 });
            EXPECT_EQ(p.dst.get_strides(), dims_t({ n + 9, 1 }));
            nd_buffers pb(p.nd, g);
            std::vector<uint8_t> pwant(pb.dst.data(),
                                       pb.dst.data() + pb.dst.size());
            naive_select(p.nd, pb.cond.data(), pb.src0.data(), pb.src1.data(),
                         pwant.data());
            execute(p, pb.cond.data(), pb.src0.data(), pb.src1.data(),
                    pb.dst.data());
            KT_EXPECT(fails,
                      bytes_equal(pb.dst.data(), pwant.data(), pwant.size(), w),
                      "padded dst " + nd_str(p.nd));
            KT_EXPECT(fails, pb.canaries_ok(), "padded dst " + nd_str(p.nd));
        }
}

TEST_P(kernel_api, ManyThreadsExecuteOneCompiledPartition) {
    struct workload {
        dt t;
        dims_t c, a, b;
    };
    const std::vector<workload> loads = {
        { dt::bf16, { 1, 1, 64, 64 }, { 2, 4, 64, 64 }, {} },
        { dt::f32, { 1, 1, 128, 128 }, { 2, 4, 128, 128 }, {} }, // threads
        { dt::f16, { 37, 1 }, { 37, 301 }, { 301 } },
    };
    for (const auto &wl : loads) {
        const api_select s = compile_select(wl.t, wl.c, wl.a, wl.b);
        const int w = dt_size(wl.t);
        // Four input sets, each shared (read-only) by two threads.
        constexpr int nsets = 4, nthreads = 8, iters = 6;
        std::vector<std::unique_ptr<nd_buffers>> sets;
        std::vector<std::vector<uint8_t>> want;
        std::mt19937_64 g(99);
        for (int i = 0; i < nsets; ++i) {
            sets.push_back(std::make_unique<nd_buffers>(s.nd, g));
            want.emplace_back(sets[i]->dst.size());
            naive_select(s.nd, sets[i]->cond.data(), sets[i]->src0.data(),
                         sets[i]->src1.data(), want[i].data());
        }
        std::atomic<int> bad { 0 }, errors { 0 }, done { 0 };
        std::atomic<int> started { 0 };
        std::vector<std::thread> ts;
        for (int t = 0; t < nthreads; ++t)
            ts.emplace_back([&, t] {
                const nd_buffers &in = *sets[t % nsets];
                std::vector<uint8_t> dst(in.dst.size());
                ++started;
                while (started.load() < nthreads)
                    std::this_thread::yield();
                for (int it = 0; it < iters; ++it) {
                    std::fill(dst.begin(), dst.end(),
                              static_cast<uint8_t>(it * 31 + t));
                    try {
                        execute(s, in.cond.data(), in.src0.data(),
                                in.src1.data(), dst.data());
                    } catch (...) {
                        ++errors;
                        continue;
                    }
                    if (std::memcmp(dst.data(), want[t % nsets].data(),
                                    dst.size())
                        != 0)
                        ++bad;
                    ++done;
                }
            });
        for (auto &th : ts)
            th.join();
        EXPECT_EQ(errors.load(), 0) << nd_str(s.nd);
        EXPECT_EQ(bad.load(), 0) << "executions with wrong results, "
                                 << nd_str(s.nd) << " w=" << w;
        EXPECT_EQ(done.load(), nthreads * iters);
    }
}

/// Mappings of this process that are writable and executable at once.
std::vector<std::string> wx_mappings() {
    std::vector<std::string> bad;
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        const auto sp = line.find(' ');
        if (sp == std::string::npos || line.size() < sp + 5)
            continue;
        const std::string perms = line.substr(sp + 1, 4);
        if (perms[1] == 'w' && perms[2] == 'x')
            bad.push_back(line);
    }
    return bad;
}

/// The permissions of the mapping holding `addr` ("" if none).
std::string perms_of(const void *addr) {
    const auto a = reinterpret_cast<uintptr_t>(addr);
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        unsigned long lo = 0, hi = 0;
        char perms[5] = {};
        if (std::sscanf(line.c_str(), "%lx-%lx %4s", &lo, &hi, perms) == 3
            && a >= lo && a < hi)
            return perms;
    }
    return "";
}

TEST_P(kernel_api, GeneratedCodeIsNeverWritableAndExecutable) {
    std::vector<si::kernel_ptr> keep;
    if (jit()) {
        for (int w : { 1, 2, 4, 8 })
            for (int nt = 0; nt < 2; ++nt)
                for (int cs = 0; cs < 2; ++cs) {
                    si::kernel_key k {};
                    k.isa = kisa();
                    k.elem_size = static_cast<uint8_t>(w);
                    k.nt_stores = static_cast<uint8_t>(nt);
                    k.cond_scalar = static_cast<uint8_t>(cs);
                    k.src1_scalar = 1;
                    k.unroll = 4;
                    keep.push_back(si::create_jit_select_kernel(k));
                }
    }
    // And through compile.
    const api_select s = compile_select(dt::f32, { 5, 1 }, { 5, 77 }, {});
    const auto bad = wx_mappings();
    std::string all;
    for (const auto &l : bad)
        all += l + "\n";
    EXPECT_TRUE(bad.empty()) << "W+X mappings:\n" << all;
    for (const auto &k : keep) {
        const std::string perms =
                perms_of(reinterpret_cast<const void *>(k->fn()));
        EXPECT_EQ(perms.substr(0, 3), "r-x")
                << k->name() << " is in a " << perms << " mapping";
    }
    // The generated code runs from there.
    if (!keep.empty()) {
        const uint8_t cond[3] = { 1, 0, 2 };
        const uint32_t a[3] = { 1, 2, 3 }, b = 9;
        uint32_t d[3] = {};
        si::select_call_args args {};
        args.cond = cond;
        args.src0 = a;
        args.src1 = &b;
        args.dst = d;
        args.n = 3;
        args.rows = 1;
        const auto it =
                std::find_if(keep.begin(), keep.end(), [](const auto &k) {
                    return k->key().elem_size == 4 && !k->key().nt_stores
                           && !k->key().cond_scalar;
                });
        ASSERT_NE(it, keep.end());
        (*it)->fn()(&args); // e4, cond vector, src_1 scalar
        EXPECT_EQ(d[0], 1u);
        EXPECT_EQ(d[1], 9u);
        EXPECT_EQ(d[2], 3u);
    }
}

/// `path` made absolute against the current directory.
std::string absolute(const std::string &path) {
    if (!path.empty() && path[0] == '/')
        return path;
    std::string cwd(4096, '\0');
    if (!getcwd(&cwd[0], cwd.size()))
        return path;
    return std::string(cwd.c_str()) + "/" + path;
}

/// The command that started this process, up to the program: the
/// executable alone, or, where the program was started through the dynamic
/// loader (`ld-linux-x86-64.so.2 --library-path lib ./prog`, as on a
/// machine without the libraries installed, whose /proc/self/exe is then
/// the loader), the loader, its options and the program, with the paths
/// made absolute. Empty if /proc cannot be read.
std::vector<std::string> self_command() {
    std::string exe(4096, '\0');
    const ssize_t len = readlink("/proc/self/exe", &exe[0], exe.size() - 1);
    if (len <= 0)
        return {};
    exe.resize(static_cast<size_t>(len));
    const std::string base = exe.substr(exe.rfind('/') + 1);
    if (base.rfind("ld-", 0) != 0)
        return { exe };
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    std::vector<std::string> args;
    for (std::string a; std::getline(in, a, '\0');)
        args.push_back(a);
    std::vector<std::string> cmd = { exe };
    size_t i = 1;
    for (; i < args.size() && args[i].rfind("--", 0) == 0; ++i) {
        cmd.push_back(args[i]);
        const bool path_list = args[i] == "--library-path";
        if ((path_list || args[i] == "--preload" || args[i] == "--audit"
             || args[i] == "--argv0")
            && i + 1 < args.size()) {
            std::string v = args[++i];
            if (path_list) {
                std::string abs_list;
                for (size_t b = 0; b <= v.size();) {
                    const size_t e = std::min(v.find(':', b), v.size());
                    abs_list += (b ? ":" : "") + absolute(v.substr(b, e - b));
                    b = e + 1;
                }
                v = abs_list;
            }
            cmd.push_back(v);
        }
    }
    if (i >= args.size())
        return {};
    cmd.push_back(absolute(args[i]));
    return cmd;
}

/// Runs this binary with `filter` and extra environment in `dir`; returns
/// its exit status and stdout (and in `child_pid`, where given, its pid).
int run_child(const std::string &filter, const std::vector<std::string> &env,
              const std::string &dir, std::string &out,
              pid_t *child_pid = nullptr) {
    std::vector<std::string> cmd = self_command();
    if (cmd.empty())
        return -1;
    const std::string flag = "--gtest_filter=" + filter;
    std::vector<std::string> envs(env);
    for (char **e = environ; *e; ++e) {
        const std::string kv(*e);
        if (kv.rfind("SELGRAPH_", 0) != 0 && kv.rfind("GTEST_", 0) != 0)
            envs.push_back(kv);
    }
    std::vector<char *> argv;
    for (auto &a : cmd)
        argv.push_back(&a[0]);
    argv.push_back(const_cast<char *>(flag.c_str()));
    argv.push_back(nullptr);
    std::vector<char *> envp;
    for (auto &s : envs)
        envp.push_back(&s[0]);
    envp.push_back(nullptr);
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    const pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (child_pid)
        *child_pid = pid;
    if (pid == 0) {
        // Only async-signal-safe calls before exec. A perf map left by an
        // earlier process of this pid is removed, so that what the test
        // finds there is the child's.
        char map[40] = "/tmp/perf-";
        size_t len = std::strlen(map);
        char digits[20];
        int nd = 0;
        for (long v = getpid(); v > 0; v /= 10)
            digits[nd++] = static_cast<char>('0' + v % 10);
        while (nd > 0)
            map[len++] = digits[--nd];
        std::memcpy(map + len, ".map", 5);
        unlink(map);
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        if (chdir(dir.c_str()) != 0)
            _exit(126);
        execve(argv[0], argv.data(), envp.data());
        _exit(127);
    }
    close(fds[1]);
    char buf[4096];
    ssize_t r;
    while ((r = read(fds[0], buf, sizeof(buf))) > 0
           || (r < 0 && errno == EINTR))
        if (r > 0)
            out.append(buf, static_cast<size_t>(r));
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_P(kernel_api, VerboseAndJitDumpInAChildProcess) {
    // SELGRAPH_VERBOSE, SELGRAPH_JIT_DUMP and SELGRAPH_JIT_PROFILE are read
    // once per process: run AttentionMaskPublic of this ISA in a child with
    // them set, and the ISA capped by SELGRAPH_MAX_CPU_ISA.
    char tmpl[] = "/tmp/selgraph_kernel_test_XXXXXX";
    const char *dir = mkdtemp(tmpl);
    ASSERT_NE(dir, nullptr);
    const std::string isa = isa_param_str(GetParam());
    std::string out;
    pid_t pid = 0;
    const int rc = run_child("Isa/kernel_api.AttentionMaskPublic/" + isa,
                             { "SELGRAPH_VERBOSE=2", "SELGRAPH_JIT_DUMP=1",
                               "SELGRAPH_JIT_PROFILE=1",
                               "SELGRAPH_MAX_CPU_ISA=" + isa },
                             dir, out, &pid);
    // The child's perf map: "<start> <size> selgraph_<name>" per kernel,
    // in hex.
    ASSERT_GT(pid, 0);
    const std::string map_file = "/tmp/perf-" + std::to_string(pid) + ".map";
    std::vector<std::string> map_lines;
    {
        std::ifstream m(map_file);
        for (std::string line; std::getline(m, line);)
            map_lines.push_back(line);
    }
    std::remove(map_file.c_str());
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("[  PASSED  ] 1 test"), std::string::npos) << out;
    const std::string impl =
            jit() ? std::string("jit:") + si::kernel_isa2str(kisa())
                  : std::string("ref");
    const std::string kname =
            jit() ? std::string(si::kernel_isa2str(kisa())) + "_e4_cv_av_bs_u4"
                  : std::string("ref_nd");
    const std::string desc = "cond:boolean src_0:f32 src_1:f32 dst:f32,"
                             "cond:1x1x8x8 src_0:2x3x8x8 src_1: dst:2x3x8x8";
    EXPECT_NE(out.find("selgraph_verbose,compile,cpu,select," + impl + ","
                       + kname + "," + desc),
              std::string::npos)
            << out;
    EXPECT_NE(out.find("selgraph_verbose,exec,cpu,select," + impl + "," + kname
                       + "," + desc),
              std::string::npos)
            << out;
    // The dumped kernels: one per generated kernel, starting with the
    // preamble (push rbx; push r12).
    std::vector<std::string> files;
    if (DIR *d = opendir(dir)) {
        while (const dirent *e = readdir(d)) {
            const std::string name = e->d_name;
            if (name != "." && name != "..")
                files.push_back(name);
        }
        closedir(d);
    }
    if (jit()) {
        const std::string want = "selgraph_jit_" + kname + ".bin";
        EXPECT_NE(std::find(files.begin(), files.end(), want), files.end())
                << "no " << want << " in " << dir;
        std::ifstream f(std::string(dir) + "/" + want, std::ios::binary);
        std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                                std::istreambuf_iterator<char>());
        EXPECT_GE(bytes.size(), 3u);
        if (bytes.size() >= 3) {
            EXPECT_EQ(static_cast<uint8_t>(bytes[0]), 0x53); // push rbx
            EXPECT_EQ(static_cast<uint8_t>(bytes[1]), 0x41); // push r12
            EXPECT_EQ(static_cast<uint8_t>(bytes[2]), 0x54);
        }
        // The perf map names the kernel with the size of its dumped code,
        // at a nonzero address.
        bool found = false;
        for (const auto &line : map_lines) {
            unsigned long long start = 0, size = 0;
            char name[256] = {};
            const int fields = std::sscanf(line.c_str(), "%llx %llx %255s",
                                           &start, &size, name);
            EXPECT_EQ(fields, 3) << line;
            if (fields != 3 || std::string(name) != "selgraph_" + kname)
                continue;
            found = true;
            EXPECT_NE(start, 0u) << line;
            EXPECT_EQ(size, bytes.size()) << line;
        }
        EXPECT_TRUE(found) << "no selgraph_" << kname << " in " << map_file;
    } else {
        EXPECT_TRUE(files.empty()) << "the reference ISA dumped " << files[0];
        EXPECT_TRUE(map_lines.empty())
                << "the reference ISA mapped " << map_lines[0];
    }
    for (const auto &f : files)
        std::remove((std::string(dir) + "/" + f).c_str());
    rmdir(dir);
}

SELGRAPH_INSTANTIATE_PER_ISA(kernel_api);

} // namespace
} // namespace selgraph_test
