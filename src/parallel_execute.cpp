// Execution of a plan: the folded problem is a grid of rows (all outer dims
// flattened) by `inner` elements. Threads get balanced, contiguous ranges of
// (row, chunk) items; chunks are multiples of 64 elements, so each thread's
// cond bytes and dst bytes start on a cache line relative to the tensors'
// bases and threads never share a dst cache line. Each thread hands the
// kernel whole runs of rows along the innermost outer dim.
#include <algorithm>
#include <cstdint>

#include <omp.h>

#include "dispatch.hpp"
#include "kernels/ref_select.hpp"

namespace selgraph {
namespace impl {

namespace {

// Below this many bytes per thread a parallel region costs more than it
// saves.
constexpr int64_t min_bytes_per_thread = 64 * 1024;
constexpr int64_t chunk_align = 64; // elements
constexpr int64_t items_per_thread = 8;

struct folded_runner {
    const select_folded &f;
    select_kernel_fn fn;
    const char *base[n_operands];
    const int64_t *stride[n_operands]; // per folded dim, bytes

    // Rows [r0, r1), columns [c0, c1).
    void run(int64_t r0, int64_t r1, int64_t c0, int64_t c1) const {
        const int nd = f.ndims;
        select_call_args a;
        a.n = static_cast<uint64_t>(c1 - c0);
        int64_t col_off[n_operands];
        for (int i = 0; i < n_operands; ++i)
            col_off[i] = c0 * stride[i][nd - 1];
        if (nd == 1) {
            set_ptrs(a, col_off);
            a.rows = 1;
            a.cond_stride = a.src0_stride = a.src1_stride = a.dst_stride = 0;
            fn(&a);
            return;
        }
        const int od = nd - 2; // the outer dim the kernel walks
        a.cond_stride = stride[op_cond][od];
        a.src0_stride = stride[op_src0][od];
        a.src1_stride = stride[op_src1][od];
        a.dst_stride = stride[op_dst][od];
        for (int64_t r = r0; r < r1;) {
            int64_t off[n_operands];
            int64_t rem = r / f.dims[od];
            const int64_t idx = r % f.dims[od];
            for (int i = 0; i < n_operands; ++i)
                off[i] = col_off[i] + idx * stride[i][od];
            for (int d = od - 1; d >= 0; --d) {
                const int64_t di = rem % f.dims[d];
                rem /= f.dims[d];
                for (int i = 0; i < n_operands; ++i)
                    off[i] += di * stride[i][d];
            }
            const int64_t len = std::min(r1 - r, f.dims[od] - idx);
            set_ptrs(a, off);
            a.rows = static_cast<uint64_t>(len);
            fn(&a);
            r += len;
        }
    }

    void set_ptrs(select_call_args &a, const int64_t *off) const {
        a.cond = base[op_cond] + off[op_cond];
        a.src0 = base[op_src0] + off[op_src0];
        a.src1 = base[op_src1] + off[op_src1];
        a.dst = const_cast<char *>(base[op_dst]) + off[op_dst];
    }
};

} // namespace

int plan_threads(const select_plan &plan, int nthreads) {
    const select_folded &f = plan.folded;
    const int64_t nelems = f.rows() * f.inner();
    const int64_t bytes = nelems > INT64_MAX / 16
                                  ? INT64_MAX
                                  : nelems * (1 + 3 * f.elem_size);
    return static_cast<int>(std::min<int64_t>(
            std::max(nthreads, 1),
            std::max<int64_t>(1, bytes / min_bytes_per_thread)));
}

namespace {

// The store rule for a team of `team` threads (crossovers in dispatch.cpp).
bool nt_for_team(const select_plan &plan, int team) {
    return plan.kernel_nt && plan.working_set >= nt_threshold_bytes(team);
}

} // namespace

bool plan_uses_nt(const select_plan &plan, int nthreads) {
    return nt_for_team(plan, plan_threads(plan, nthreads));
}

const select_kernel *execute_plan(const select_plan &plan, const select_nd &p,
                                  const void *cond, const void *src0,
                                  const void *src1, void *dst, int nthreads) {
    if (p.nelems() == 0)
        return nullptr;
    if (nthreads <= 0)
        nthreads = omp_get_max_threads();
    if (!plan.kernel) {
        ref_select(p, cond, src0, src1, dst, nthreads);
        return nullptr;
    }
    const select_folded &f = plan.folded;
    const int w = f.elem_size;
    const int64_t inner = f.inner();
    const int64_t rows = f.rows();
    const int nthr = plan_threads(plan, nthreads);
    // The kernel aligns dst to vectors itself, from any element-aligned dst.
    const bool nt =
            nt_for_team(plan, nthr)
            && reinterpret_cast<uintptr_t>(dst) % static_cast<unsigned>(w) == 0;
    const int a = plan.swap ? op_src1 : op_src0;
    const int b = plan.swap ? op_src0 : op_src1;
    const folded_runner runner {
        f,
        nt ? plan.kernel_nt->fn() : plan.kernel->fn(),
        { static_cast<const char *>(cond),
          static_cast<const char *>(plan.swap ? src1 : src0),
          static_cast<const char *>(plan.swap ? src0 : src1),
          static_cast<const char *>(dst) },
        { f.strides[op_cond], f.strides[a], f.strides[b], f.strides[op_dst] }
    };
    const select_kernel *used = nt ? plan.kernel_nt.get() : plan.kernel.get();
    if (nthr <= 1) {
        runner.run(0, rows, 0, inner);
        return used;
    }

    // Split rows into chunks only when there are too few rows to balance.
    int64_t csz = inner, cpr = 1;
    if (rows < items_per_thread * nthr) {
        const int64_t want = (items_per_thread * nthr + rows - 1) / rows;
        csz = (inner + want - 1) / want;
        csz = (csz + chunk_align - 1) / chunk_align * chunk_align;
        if (csz >= inner)
            csz = inner;
        cpr = (inner + csz - 1) / csz;
    }
    const int64_t items = rows * cpr;
#pragma omp parallel num_threads(static_cast <int>(nthr))
    {
        const int64_t t = omp_get_thread_num();
        const int64_t team = omp_get_num_threads();
        const int64_t i0 = items * t / team;
        const int64_t i1 = items * (t + 1) / team;
        if (cpr == 1) {
            if (i0 < i1)
                runner.run(i0, i1, 0, inner);
        } else {
            for (int64_t it = i0; it < i1;) {
                const int64_t r = it / cpr;
                const int64_t k0 = it % cpr;
                const int64_t k1 = std::min(cpr, k0 + (i1 - it));
                runner.run(r, r + 1, k0 * csz, std::min(k1 * csz, inner));
                it += k1 - k0;
            }
        }
    }
    return used;
}

} // namespace impl
} // namespace selgraph
