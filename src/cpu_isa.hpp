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

/// An AMD family 19h CPU with AVX-512 (Zen 4), whose 512-bit operations run
/// on 256-bit units. The transposing kernels' ISA depends on it
/// (transpose_kernel_isa, dispatch.hpp).
bool cpu_is_amd_zen4();

/// An AMD CPU (any family). How a transposed dst's tiles split among
/// threads depends on it (plan_tiles, dispatch.hpp).
bool cpu_is_amd();

/// The CPU runs PREFETCHW (CPUID PRFCHW), a prefetch with intent to write,
/// rather than as a no-op. The AVX2 non-temporal row kernels emit it only
/// then (jit_select.cpp).
bool cpu_has_prefetchw();

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

/// Parses "AVX512_CORE", "AVX2", "NONE", "ALL" (case-insensitive).
bool parse_cpu_isa(const char *s, cpu_isa &isa);

} // namespace impl
} // namespace selgraph

#endif
