#ifndef SELGRAPH_KERNELS_JIT_SELECT_HPP
#define SELGRAPH_KERNELS_JIT_SELECT_HPP

#include <cstdint>
#include <memory>

#include "select_kernel.hpp"

namespace selgraph {
namespace impl {

/// Generates the Xbyak kernel for `key` (isa avx2 or avx512_core). The code
/// pages are made read+execute, never writable and executable at once. A
/// generation failure throws selgraph::error, never crashes.
std::shared_ptr<const select_kernel>
create_jit_select_kernel(const kernel_key &key);

/// Whether a kernel generated for one row length exists for `k`
/// (kernel_key::row_len: padded short rows with kernel_key::row_pitch,
/// short rows without; the rest of the key as for any kernel).
bool row_len_supported(const kernel_key &k);

/// Whether a kernel writing a transposed dst exists for `k`
/// (kernel_key::dst_transposed; the rest of the key as for any kernel).
bool dst_transposed_supported(const kernel_key &k);

/// The generator of those kernels (kernels/jit_select_dt.cpp), for
/// create_jit_select_kernel: `key` must be supported.
std::shared_ptr<const select_kernel>
create_jit_select_dt_kernel(const kernel_key &key);

/// The packed ones (kernel_key::dt_cols > 0;
/// kernels/jit_select_dt_packed.cpp), for dst_transposed_supported and
/// create_jit_select_dt_kernel.
bool dst_transposed_packed_supported(const kernel_key &k);
std::shared_ptr<const select_kernel>
create_jit_select_dt_packed_kernel(const kernel_key &key);

/// Whether a kernel reading src_0 with a step exists for `k`
/// (kernel_key::src0_step), and its generator
/// (kernels/jit_select_stepped.cpp), for create_jit_select_kernel.
bool stepped_supported(const kernel_key &k);
std::shared_ptr<const select_kernel>
create_jit_select_stepped_kernel(const kernel_key &key);

} // namespace impl
} // namespace selgraph

#endif
