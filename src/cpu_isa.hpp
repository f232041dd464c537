// The one place that knows which instruction sets kernels may use: CPUID
// (through Xbyak::util::Cpu) AND the user's cap (set_max_cpu_isa or
// SELGRAPH_MAX_CPU_ISA), as oneDNN's cpu_isa_traits and ONEDNN_MAX_CPU_ISA.
#ifndef SELGRAPH_SRC_CPU_ISA_HPP
#define SELGRAPH_SRC_CPU_ISA_HPP

#include "kernels/select_kernel.hpp"
#include "selgraph/selgraph.hpp"

namespace selgraph {
namespace impl {

/// Does the CPU (and OS) support the kernels of this ISA?
bool cpu_has(kernel_isa isa);

/// The best kernel ISA allowed by the cap and the CPU; freezes the cap.
kernel_isa max_kernel_isa();

/// The CPUs whose measurements the dispatcher's tuning tells apart
/// (cpu_tuning, dispatch.hpp): AMD Zen 4 (family 19h with AVX-512, whose
/// 512-bit operations run on 256-bit units), AMD Zen 5 (family 1Ah with
/// AVX-512), other AMD CPUs (Zen 3 and before, later families) and every
/// other x86 CPU (Intel's).
enum class cpu_kind { other, amd, amd_zen4, amd_zen5 };

/// The kind of a CPU from its vendor (`amd`), CPUID display family and
/// whether it runs the AVX-512 kernels.
cpu_kind cpu_kind_of(bool amd, unsigned family, bool avx512);

/// This CPU's kind, from CPUID (the ISA cap does not change it).
cpu_kind this_cpu_kind();

/// The CPU runs PREFETCHW (CPUID PRFCHW), a prefetch with intent to write,
/// rather than as a no-op. The AVX2 non-temporal row kernels emit it only
/// then (jit_select.cpp).
bool cpu_has_prefetchw();

/// The CPU runs AVX512_VBMI (CPUID), whose byte permutes (vpermi2b) let
/// AVX-512's non-temporal byte transposes join a dst row's partial lines
/// (the carry) and its packed blocks move bytes as words
/// (kernels/jit_transpose.cpp). False on a thread under scoped_no_vbmi.
bool cpu_has_avx512_vbmi();

/// Test hook: lowers the cap for the calling thread while alive, so that
/// one test binary can exercise every ISA (Highway's per-target tests).
class scoped_isa_cap {
public:
    explicit scoped_isa_cap(cpu_isa isa);
    ~scoped_isa_cap();
    scoped_isa_cap(const scoped_isa_cap &) = delete;
    scoped_isa_cap &operator=(const scoped_isa_cap &) = delete;

private:
    int prev_;
};

/// Test hook: the calling thread sees no AVX512_VBMI while alive, so that
/// a kernel generated meanwhile (create_jit_transpose_kernel, not the
/// caches, which keep what they generated before) takes its paths for
/// AVX-512 CPUs without it on a CPU with it.
class scoped_no_vbmi {
public:
    scoped_no_vbmi();
    ~scoped_no_vbmi();
    scoped_no_vbmi(const scoped_no_vbmi &) = delete;
    scoped_no_vbmi &operator=(const scoped_no_vbmi &) = delete;

private:
    bool prev_;
};

/// Parses "AVX512_CORE", "AVX2", "NONE", "ALL" (case-insensitive).
bool parse_cpu_isa(const char *s, cpu_isa &isa);

} // namespace impl
} // namespace selgraph

#endif
