// ISA cap (SELGRAPH_MAX_CPU_ISA / set_max_cpu_isa / get_effective_cpu_isa)
// and the kernel cache capacity.
#include <cctype>

#include "tests/api_test_utils.hpp"

using namespace sgt;
using selgraph::cpu_isa;

namespace {

// The best ISA of this CPU, detected independently of the library (GCC's
// CPUID helpers rather than Xbyak).
cpu_isa cpu_best_isa() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
        && __builtin_cpu_supports("avx512vl")
        && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("bmi2"))
        return cpu_isa::avx512_core;
    if (__builtin_cpu_supports("avx2"))
        return cpu_isa::avx2;
    return cpu_isa::none;
}

std::string env_cap() {
    const char *v = std::getenv("SELGRAPH_MAX_CPU_ISA");
    std::string s = v ? v : "";
    for (auto &ch : s)
        ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return s.empty() ? "ALL" : s;
}

cpu_isa cap_from_env() {
    const std::string s = env_cap();
    if (s == "NONE")
        return cpu_isa::none;
    if (s == "AVX2")
        return cpu_isa::avx2;
    if (s == "AVX512_CORE")
        return cpu_isa::avx512_core;
    return cpu_isa::isa_all;
}

cpu_isa expected_effective() {
    const cpu_isa cap = cap_from_env();
    const cpu_isa best = cpu_best_isa();
    if (cap == cpu_isa::isa_all)
        return best;
    return static_cast<int>(cap) < static_cast<int>(best) ? cap : best;
}

const char *isa_name(cpu_isa i) {
    switch (i) {
        case cpu_isa::none: return "none";
        case cpu_isa::avx2: return "avx2";
        case cpu_isa::avx512_core: return "avx512_core";
        default: return "isa_all";
    }
}

// A small compile + execute, checked against the independent reference.
void small_select(dt t) {
    select_case sc;
    sc.type = t;
    sc.cond = { { 3, 1 }, {} };
    sc.src0 = { { 3, 70 }, {} };
    sc.src1 = { { 70 }, {} };
    sc.dst = { { 3, 70 }, {} };
    run_select_case(sc);
}

} // namespace

TEST(ApiIsa, EffectiveIsaMatchesEnvironment) {
    const cpu_isa want = expected_effective();
    EXPECT_EQ(selgraph::get_effective_cpu_isa(), want)
            << "SELGRAPH_MAX_CPU_ISA=" << env_cap() << ", expected "
            << isa_name(want) << ", got "
            << isa_name(selgraph::get_effective_cpu_isa());
    if (env_cap() == "NONE") {
        EXPECT_EQ(selgraph::get_effective_cpu_isa(), cpu_isa::none);
    }
    if (env_cap() == "AVX2" && cpu_best_isa() != cpu_isa::none) {
        EXPECT_EQ(selgraph::get_effective_cpu_isa(), cpu_isa::avx2);
    }
}

TEST(ApiIsa, SetMaxCpuIsaAfterFirstCompileThrows) {
    small_select(dt::f32); // compiles: the cap is now in use
    const cpu_isa before = selgraph::get_effective_cpu_isa();
    const cpu_isa cap = cap_from_env();
    const cpu_isa other = cap == cpu_isa::none ? cpu_isa::avx2 : cpu_isa::none;
    EXPECT_SG_ERROR(selgraph::set_max_cpu_isa(other), status::invalid_arguments,
                    "set_max_cpu_isa");
    EXPECT_EQ(selgraph::get_effective_cpu_isa(), before);
    // Asking for the cap already in force is accepted.
    EXPECT_NO_THROW(selgraph::set_max_cpu_isa(cap));
    EXPECT_EQ(selgraph::get_effective_cpu_isa(), before);
    // Still computes correctly afterwards.
    small_select(dt::f32);
    small_select(dt::bf16);
}

TEST(ApiIsa, KernelCacheCapacity) {
    const int cap0 = selgraph::get_kernel_cache_capacity();
    EXPECT_GE(cap0, 0);
    EXPECT_SG_ERROR(selgraph::set_kernel_cache_capacity(-1),
                    status::invalid_arguments, "-1");
    EXPECT_EQ(selgraph::get_kernel_cache_capacity(), cap0);
    selgraph::set_kernel_cache_capacity(1);
    EXPECT_EQ(selgraph::get_kernel_cache_capacity(), 1);
    // Kernels evicted while compiled partitions still use them keep working.
    small_select(dt::f32);
    small_select(dt::f16);
    small_select(dt::f32);
    selgraph::set_kernel_cache_capacity(0); // caching disabled
    EXPECT_EQ(selgraph::get_kernel_cache_capacity(), 0);
    small_select(dt::bf16);
    selgraph::set_kernel_cache_capacity(cap0);
    EXPECT_EQ(selgraph::get_kernel_cache_capacity(), cap0);
}

TEST(ApiIsa, CompiledPartitionOutlivesEvictedKernel) {
    const int cap0 = selgraph::get_kernel_cache_capacity();
    selgraph::set_kernel_cache_capacity(1);
    const lt c(0, dt::boolean, { 2, 100 }, lyt::strided);
    const lt a(1, dt::f32, { 2, 100 }, lyt::strided);
    const lt b(2, dt::f32, dims {}, lyt::strided);
    const lt d(3, dt::f32, { 2, 100 }, lyt::strided);
    auto cp = compile_select(c, a, b, d);
    // Another variant evicts the first kernel from the cache.
    small_select(dt::f16);
    small_select(dt::bf16);
    std::vector<uint8_t> cond(200);
    std::vector<float> src0(200), dst(200, 7.f);
    for (int i = 0; i < 200; ++i) {
        cond[i] = static_cast<uint8_t>(i % 3 == 0);
        src0[i] = static_cast<float>(i);
    }
    float s1 = -5.f;
    cp.execute(cpu_stream(),
               { selgraph::tensor(c, cpu_engine(), cond.data()),
                 selgraph::tensor(a, cpu_engine(), src0.data()),
                 selgraph::tensor(b, cpu_engine(), &s1) },
               { selgraph::tensor(d, cpu_engine(), dst.data()) });
    for (int i = 0; i < 200; ++i)
        ASSERT_EQ(dst[i], i % 3 == 0 ? static_cast<float>(i) : -5.f) << i;
    selgraph::set_kernel_cache_capacity(cap0);
}
