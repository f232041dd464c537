// The portable reference kernel: executes every valid Select (any rank, any
// broadcast, any non-negative strides) and is the oracle of the JIT kernels.
// It moves bits: elements are copied as raw 1-, 2-, 4- or 8-byte words.
#ifndef SELGRAPH_KERNELS_REF_SELECT_HPP
#define SELGRAPH_KERNELS_REF_SELECT_HPP

#include "select_problem.hpp"

namespace selgraph {
namespace impl {

/// Runs `p` in its own dim order with up to `nthreads` OpenMP threads over
/// its rows, long rows in blocks (nthreads <= 0: the OpenMP default).
void ref_select(const select_nd &p, const void *cond, const void *src0,
                const void *src1, void *dst, int nthreads = 0);

} // namespace impl
} // namespace selgraph

#endif
