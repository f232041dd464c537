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
    size_t working_set = 0; ///< bytes an execute touches
    bool cache_hit = false; ///< every kernel came from the cache

    const char *impl_str() const {
        return isa == kernel_isa::avx512_core ? "jit:avx512_core"
               : isa == kernel_isa::avx2      ? "jit:avx2"
                                              : "ref";
    }
    std::string kernel_str() const;
};

/// Folds `p`, picks the ISA and the kernel variant. `working_set` is the
/// bytes the op touches (select_touched_bytes), which decides whether
/// non-temporal stores pay.
select_plan plan_select(const select_nd &p, size_t working_set);

/// Bytes of working set from which an execute on `nthreads` threads uses
/// non-temporal stores (measured; see dispatch.cpp). A plan carries the
/// non-temporal kernel from the one-thread threshold on, the lowest.
size_t nt_threshold_bytes(int nthreads = 1);

/// Bytes one execute of `p` touches: every distinct element of cond, of the
/// sources and of dst; where cond is constant along the rows (per-row or 0-D
/// cond) a row reads one source only, and the larger source is counted.
size_t select_touched_bytes(const select_nd &p);

/// The team execute_plan uses for `plan` with at most `nthreads` threads:
/// one thread per 64 KiB moved, at least one.
int plan_threads(const select_plan &plan, int nthreads);

/// Does execute_plan use the non-temporal kernel on `nthreads` threads (for
/// a dst aligned to its elements)?
bool plan_uses_nt(const select_plan &plan, int nthreads);

/// Runs a plan: the JIT kernel over threads, or the reference kernel.
/// nthreads <= 0: the OpenMP default. Returns the kernel that ran (null:
/// the reference kernel).
const select_kernel *execute_plan(const select_plan &plan, const select_nd &p,
                                  const void *cond, const void *src0,
                                  const void *src1, void *dst,
                                  int nthreads = 0);

} // namespace impl
} // namespace selgraph

#endif
