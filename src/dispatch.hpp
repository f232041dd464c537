// The one dispatch point: folded problem + ISA cap -> kernel (or the
// reference kernel), through the kernel cache.
#ifndef SELGRAPH_SRC_DISPATCH_HPP
#define SELGRAPH_SRC_DISPATCH_HPP

#include "kernel_cache.hpp"
#include "kernels/select_problem.hpp"

namespace selgraph {
namespace impl {

struct select_plan {
    select_folded folded;
    kernel_isa isa = kernel_isa::ref;
    bool swap = false;      ///< the kernel's src_0 is the user's src_1
    kernel_ptr kernel;      ///< null: the reference kernel runs
    kernel_ptr kernel_nt;   ///< non-temporal variant, for large outputs
    bool cache_hit = false; ///< every kernel came from the cache

    const char *impl_str() const {
        return isa == kernel_isa::avx512_core ? "jit:avx512_core"
               : isa == kernel_isa::avx2      ? "jit:avx2"
                                              : "ref";
    }
    std::string kernel_str() const;
};

/// Folds `p`, picks the ISA and the kernel variant. `working_set` is the
/// bytes the op touches (inputs as stored plus dst), which decides whether
/// non-temporal stores pay.
select_plan plan_select(const select_nd &p, size_t working_set);

/// Bytes of working set from which non-temporal stores are used: a third of
/// the last-level cache (measured; see dispatch.cpp).
size_t nt_threshold_bytes();

/// Runs a plan: the JIT kernel over threads, or the reference kernel.
/// nthreads <= 0: the OpenMP default.
void execute_plan(const select_plan &plan, const select_nd &p, const void *cond,
                  const void *src0, const void *src1, void *dst,
                  int nthreads = 0);

} // namespace impl
} // namespace selgraph

#endif
