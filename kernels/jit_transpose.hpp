// Transposing a tile into a scratch buffer (stand-in: portable loops).
#ifndef SELGRAPH_KERNELS_JIT_TRANSPOSE_HPP
#define SELGRAPH_KERNELS_JIT_TRANSPOSE_HPP

#include <cstdint>
#include <memory>
#include <string>

#include "select_kernel.hpp"

namespace selgraph {
namespace impl {

struct transpose_call_args {
    const void *src; ///< element (r, c) at src + c * src_ld + r * w
    void *dst;       ///< element (r, c) at dst + r * dst_ld + c * w
    uint64_t rows;
    uint64_t cols;
    int64_t src_ld;
    int64_t dst_ld;
};

struct transpose_key {
    kernel_isa isa;
    uint8_t elem_size;
};

using transpose_kernel_fn = void (*)(const transpose_call_args *);

class transpose_kernel {
public:
    virtual ~transpose_kernel() = default;
    virtual transpose_kernel_fn fn() const = 0;
    virtual const std::string &name() const = 0;
};

const transpose_kernel *get_transpose_kernel(const transpose_key &key);
void ref_transpose(const transpose_call_args &a, int elem_size);

} // namespace impl
} // namespace selgraph

#endif
