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

// One block [i0, i1) of a row. Where cond is one byte for the whole row
// (its stride 0), the source is chosen once and copied.
template <typename T>
void ref_block_of_row(const uint8_t *c, const T *a, const T *b, T *d,
                      int64_t sc, int64_t s0, int64_t s1, int64_t sd,
                      int64_t i0, int64_t i1) {
    // memcpy: callers may pass buffers aligned to less than T (the
    // kernels take any address); compilers emit one plain move.
    if (sc == 0) {
        const bool take_a = c[0] != 0;
        const T *s = take_a ? a : b;
        const int64_t ss = take_a ? s0 : s1;
        if (ss == 1 && sd == 1) {
            // memmove: dst may be the source itself (in place).
            std::memmove(d + i0, s + i0,
                         static_cast<size_t>(i1 - i0) * sizeof(T));
            return;
        }
        for (int64_t i = i0; i < i1; ++i)
            std::memcpy(d + i * sd, s + i * ss, sizeof(T));
        return;
    }
    for (int64_t i = i0; i < i1; ++i)
        std::memcpy(d + i * sd, c[i * sc] ? a + i * s0 : b + i * s1, sizeof(T));
}

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
    const int64_t total = outer * blocks;
    // Threads only where there is enough work to pay for a parallel region.
    const bool parallel = total > 1 && p.nelems() >= (1 << 15);
#pragma omp parallel num_threads(nthreads) if (parallel)
    {
        // Each thread a contiguous range of (row, block) pairs; the offsets
        // of its first row from its index, then of each next row by an
        // odometer over dims 0..nd-2 (no division per row: rows of a few
        // elements spent more time there than in their moves).
        const int64_t nt = omp_get_num_threads();
        const int64_t it = omp_get_thread_num();
        const int64_t t0 = total * it / nt, t1 = total * (it + 1) / nt;
        int64_t idx[max_ndims] = {};
        int64_t off[n_operands] = { 0, 0, 0, 0 };
        int64_t rem = t0 / blocks;
        for (int k = nd - 2; k >= 0; --k) {
            idx[k] = rem % p.dims[k];
            rem /= p.dims[k];
            for (int i = 0; i < n_operands; ++i)
                off[i] += idx[k] * p.strides[i][k];
        }
        int64_t blk = t0 % blocks;
        for (int64_t t = t0; t < t1; ++t) {
            const int64_t i0 = blk * ref_block;
            const int64_t i1 = std::min(inner, i0 + ref_block);
            ref_block_of_row(cond + off[op_cond], src0 + off[op_src0],
                             src1 + off[op_src1], dst + off[op_dst], sc, s0, s1,
                             sd, i0, i1);
            if (++blk < blocks)
                continue;
            blk = 0;
            for (int k = nd - 2; k >= 0; --k) {
                for (int i = 0; i < n_operands; ++i)
                    off[i] += p.strides[i][k];
                if (++idx[k] < p.dims[k])
                    break;
                for (int i = 0; i < n_operands; ++i)
                    off[i] -= idx[k] * p.strides[i][k];
                idx[k] = 0;
            }
        }
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
