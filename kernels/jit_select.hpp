#ifndef SELGRAPH_KERNELS_JIT_SELECT_HPP
#define SELGRAPH_KERNELS_JIT_SELECT_HPP

#include <memory>

#include "select_kernel.hpp"

namespace selgraph {
namespace impl {

/// Generates the Xbyak kernel for `key` (isa avx2 or avx512_core). The code
/// pages are made read+execute, never writable and executable at once. A
/// generation failure throws selgraph::error, never crashes.
std::shared_ptr<const select_kernel>
create_jit_select_kernel(const kernel_key &key);

} // namespace impl
} // namespace selgraph

#endif
