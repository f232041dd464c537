#include "ref_select.hpp"

#include <algorithm>
#include <cstring>

#include <omp.h>

namespace selgraph {
namespace impl {

namespace {

// Rows of more than ref_block elements run in blocks of it, so that a
// problem of few long rows (a whole tensor coalesced into one dim) still
// spreads over the threads.
constexpr int64_t ref_block = 16384;

template <typename T>
void ref_rows(const select_nd &p, const uint8_t *cond, const T *src0,
              const T *src1, T *dst, int nthreads) {
    const int nd = p.ndims;
    const int64_t inner = nd > 0 ? p.dims[nd - 1] : 1;
    const int64_t outer = inner > 0 ? p.nelems() / inner : 0;
    const int64_t blocks = (inner + ref_block - 1) / ref_block;
    const int64_t sc = nd > 0 ? p.strides[op_cond][nd - 1] : 0;
    const int64_t s0 = nd > 0 ? p.strides[op_src0][nd - 1] : 0;
    const int64_t s1 = nd > 0 ? p.strides[op_src1][nd - 1] : 0;
    const int64_t sd = nd > 0 ? p.strides[op_dst][nd - 1] : 0;
    // Threads only where there is enough work to pay for a parallel region.
    const bool parallel = outer * blocks > 1 && p.nelems() >= (1 << 15);
#pragma omp parallel for schedule(static) num_threads(nthreads) if (parallel)
    for (int64_t t = 0; t < outer * blocks; ++t) {
        // Offsets of row o: decompose o over dims 0..nd-2.
        const int64_t o = t / blocks, i0 = t % blocks * ref_block;
        const int64_t i1 = std::min(inner, i0 + ref_block);
        int64_t off[n_operands] = { 0, 0, 0, 0 };
        int64_t rem = o;
        for (int d = nd - 2; d >= 0; --d) {
            const int64_t idx = rem % p.dims[d];
            rem /= p.dims[d];
            for (int i = 0; i < n_operands; ++i)
                off[i] += idx * p.strides[i][d];
        }
        const uint8_t *c = cond + off[op_cond];
        const T *a = src0 + off[op_src0];
        const T *b = src1 + off[op_src1];
        T *d = dst + off[op_dst];
        // memcpy: callers may pass buffers aligned to less than T (the
        // kernels take any address); compilers emit one plain move.
        for (int64_t i = i0; i < i1; ++i)
            std::memcpy(d + i * sd, c[i * sc] ? a + i * s0 : b + i * s1,
                        sizeof(T));
    }
}

} // namespace

void ref_select(const select_nd &p, const void *cond, const void *src0,
                const void *src1, void *dst, int nthreads) {
    if (p.nelems() == 0)
        return;
    if (nthreads <= 0)
        nthreads = omp_get_max_threads();
    const auto *c = static_cast<const uint8_t *>(cond);
    switch (p.elem_size) {
        case 1:
            ref_rows(p, c, static_cast<const uint8_t *>(src0),
                     static_cast<const uint8_t *>(src1),
                     static_cast<uint8_t *>(dst), nthreads);
            break;
        case 2:
            ref_rows(p, c, static_cast<const uint16_t *>(src0),
                     static_cast<const uint16_t *>(src1),
                     static_cast<uint16_t *>(dst), nthreads);
            break;
        case 4:
            ref_rows(p, c, static_cast<const uint32_t *>(src0),
                     static_cast<const uint32_t *>(src1),
                     static_cast<uint32_t *>(dst), nthreads);
            break;
        default:
            ref_rows(p, c, static_cast<const uint64_t *>(src0),
                     static_cast<const uint64_t *>(src1),
                     static_cast<uint64_t *>(dst), nthreads);
            break;
    }
}

} // namespace impl
} // namespace selgraph
