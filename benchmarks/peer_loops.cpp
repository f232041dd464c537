// The bandwidth limit (a stream kernel with Select's byte mix, memcpy) and
// the plain C++ peers, as a user would write them: -O3 -march=native and
// OpenMP.
#include <algorithm>
#include <cstring>

#include <immintrin.h>
#include <omp.h>

#include "bench_suite.hpp"

namespace sgbench {

namespace {

// [begin, end) of thread t's share of n elements, in multiples of `align`
// elements, so that no two threads write one cache line and non-temporal
// stores start aligned.
void thread_range(int64_t n, int64_t align, int t, int team, int64_t &begin,
                  int64_t &end) {
    const int64_t blocks = (n + align - 1) / align;
    begin = std::min(n, blocks * t / team * align);
    end = std::min(n, blocks * (t + 1) / team * align);
}

// --- the stream kernel ---------------------------------------------------
//
// Select's byte mix with as little work as possible per byte: for every 64
// elements, one 64-byte load of cond, the elements of a and b, one
// vpternlogd (d = a ^ b ^ cond bytes) per output vector and its store,
// regular or non-temporal. The cond cache line is XORed into each output
// vector as it is, not widened per element: the bytes are read, and the
// kernel never costs more instructions than a select would (a widening
// vpmovzxbd per vector made it slower than selgraph on cache-resident S1).
// A build without AVX-512 (-march=x86-64-v3) runs the same with 32-byte
// vectors and two XORs (below).
template <typename T>
void stream_scalar(int64_t i0, int64_t i1, const uint8_t *c, const T *a,
                   const T *b, T *d) {
    for (int64_t i = i0; i < i1; ++i)
        d[i] = static_cast<T>(a[i] ^ b[i] ^ c[i]);
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
// The benchmark's label, per store kind.
const char *const stream_labels[2] = { "d=a^b^c, _mm512_storeu_si512",
                                       "d=a^b^c, _mm512_stream_si512" };

template <bool nt>
inline void store_vec(void *p, __m512i v) {
    if (nt)
        _mm512_stream_si512(static_cast<__m512i *>(p), v);
    else
        _mm512_storeu_si512(p, v);
}

// T: the element type; 64 elements are 64 / (64 / sizeof T) vectors.
template <typename T, bool nt>
void stream_simd(int64_t i0, int64_t i1, const uint8_t *c, const T *a,
                 const T *b, T *d) {
    constexpr int lanes = 64 / sizeof(T);
    int64_t i = i0;
    for (; i + 64 <= i1; i += 64) {
        const __m512i vc = _mm512_loadu_si512(c + i);
        for (int k = 0; k < 64 / lanes; ++k) {
            const int64_t j = i + lanes * k;
            const __m512i va = _mm512_loadu_si512(a + j);
            const __m512i vb = _mm512_loadu_si512(b + j);
            store_vec<nt>(d + j, _mm512_ternarylogic_epi32(va, vb, vc, 0x96));
        }
    }
    stream_scalar(i, i1, c, a, b, d);
}
#elif defined(__AVX2__)
// The same byte mix for a build without AVX-512 (-march=x86-64-v3, an
// AVX2-only CPU): 32-byte vectors, two XORs in place of vpternlogd, each
// output vector XORed with one of the two cond vectors of its 64 elements.
const char *const stream_labels[2] = { "d=a^b^c, _mm256_storeu_si256",
                                       "d=a^b^c, _mm256_stream_si256" };

template <bool nt>
inline void store_vec(void *p, __m256i v) {
    if (nt)
        _mm256_stream_si256(static_cast<__m256i *>(p), v);
    else
        _mm256_storeu_si256(static_cast<__m256i *>(p), v);
}

template <typename T, bool nt>
void stream_simd(int64_t i0, int64_t i1, const uint8_t *c, const T *a,
                 const T *b, T *d) {
    constexpr int lanes = 32 / sizeof(T);
    int64_t i = i0;
    for (; i + 64 <= i1; i += 64) {
        const __m256i vc[2] = {
            _mm256_loadu_si256(reinterpret_cast<const __m256i *>(c + i)),
            _mm256_loadu_si256(reinterpret_cast<const __m256i *>(c + i + 32))
        };
        for (int k = 0; k < 64 / lanes; ++k) {
            const int64_t j = i + lanes * k;
            const __m256i va = _mm256_loadu_si256(
                    reinterpret_cast<const __m256i *>(a + j));
            const __m256i vb = _mm256_loadu_si256(
                    reinterpret_cast<const __m256i *>(b + j));
            store_vec<nt>(d + j, _mm256_xor_si256(_mm256_xor_si256(va, vb),
                                                  vc[k & 1]));
        }
    }
    stream_scalar(i, i1, c, a, b, d);
}
#else
#error "the stream kernel needs AVX-512BW or AVX2 (-march=native, x86-64-v3 or v4)"
#endif

template <typename T>
void stream_range(int64_t i0, int64_t i1, const uint8_t *c, const void *a,
                  const void *b, void *d, bool nt) {
    const T *pa = static_cast<const T *>(a);
    const T *pb = static_cast<const T *>(b);
    T *pd = static_cast<T *>(d);
    if (nt)
        stream_simd<T, true>(i0, i1, c, pa, pb, pd);
    else
        stream_simd<T, false>(i0, i1, c, pa, pb, pd);
}

} // namespace

const char *stream_label(bool nt) {
    return stream_labels[nt ? 1 : 0];
}

void stream_mix(int64_t n, int w, const uint8_t *c, const void *a,
                const void *b, void *d, bool nt) {
    // One thread: no parallel region, whose ~1-2 us would show on S1.
    auto run = [&](int t, int team) {
        int64_t i0, i1;
        thread_range(n, 64, t, team, i0, i1);
        switch (w) {
            case 8: stream_range<uint64_t>(i0, i1, c, a, b, d, nt); break;
            case 4: stream_range<uint32_t>(i0, i1, c, a, b, d, nt); break;
            case 1: stream_range<uint8_t>(i0, i1, c, a, b, d, nt); break;
            default: stream_range<uint16_t>(i0, i1, c, a, b, d, nt); break;
        }
        if (nt)
            _mm_sfence();
    };
    if (omp_get_max_threads() == 1) {
        run(0, 1);
        return;
    }
#pragma omp parallel
    run(omp_get_thread_num(), omp_get_num_threads());
}

void memcpy_mt(void *dst, const void *src, size_t bytes) {
    auto run = [&](int t, int team) {
        int64_t b0, b1;
        thread_range(static_cast<int64_t>(bytes), 4096, t, team, b0, b1);
        if (b1 > b0)
            std::memcpy(static_cast<char *>(dst) + b0,
                        static_cast<const char *>(src) + b0,
                        static_cast<size_t>(b1 - b0));
    };
    if (omp_get_max_threads() == 1) {
        run(0, 1);
        return;
    }
#pragma omp parallel
    run(omp_get_thread_num(), omp_get_num_threads());
}

// --- (a) run-time strides ------------------------------------------------

namespace {

template <typename T>
void loop_rt_t(const problem2d &p, const operands &o) {
    const uint8_t *c = o.cond;
    const T *a = static_cast<const T *>(o.src0);
    const T *b = static_cast<const T *>(o.src1);
    T *d = static_cast<T *>(o.dst);
    const int64_t rows = p.rows, n = p.inner;
    const int64_t crs = p.row_stride(op_cond), cis = p.inner_stride(op_cond);
    const int64_t ars = p.row_stride(op_src0), ais = p.inner_stride(op_src0);
    const int64_t brs = p.row_stride(op_src1), bis = p.inner_stride(op_src1);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const uint8_t *cr = c + r * crs;
        const T *ar = a + r * ars;
        const T *br = b + r * brs;
        T *dr = d + r * n;
        for (int64_t i = 0; i < n; ++i)
            dr[i] = cr[i * cis] ? ar[i * ais] : br[i * bis];
    }
}

template <typename T>
void loop_nd_t(int nd, const int64_t *dims, const int64_t (*st)[8],
               const operands &o, int nthreads) {
    const uint8_t *c = o.cond;
    const T *a = static_cast<const T *>(o.src0);
    const T *b = static_cast<const T *>(o.src1);
    T *d = static_cast<T *>(o.dst);
    const int64_t inner = nd > 0 ? dims[nd - 1] : 1;
    int64_t outer = 1;
    for (int i = 0; i + 1 < nd; ++i)
        outer *= dims[i];
    const int last = nd > 0 ? nd - 1 : 0;
    const int64_t sc = nd ? st[op_cond][last] : 0;
    const int64_t s0 = nd ? st[op_src0][last] : 0;
    const int64_t s1 = nd ? st[op_src1][last] : 0;
    const int64_t sd = nd ? st[op_dst][last] : 0;
#pragma omp parallel for schedule(static) num_threads(nthreads)
    for (int64_t r = 0; r < outer; ++r) {
        int64_t off[4] = { 0, 0, 0, 0 }, rem = r;
        for (int i = nd - 2; i >= 0; --i) {
            const int64_t idx = rem % dims[i];
            rem /= dims[i];
            for (int op = 0; op < 4; ++op)
                off[op] += idx * st[op][i];
        }
        for (int64_t i = 0; i < inner; ++i)
            d[off[3] + i * sd] = c[off[0] + i * sc] ? a[off[1] + i * s0]
                                                    : b[off[2] + i * s1];
    }
}

// --- (b) compile-time strides ---------------------------------------------
// One instantiation per role pattern of the suite: the strides are
// constants, so GCC vectorizes each row loop (and hoists what is constant
// along a row).

template <role k>
constexpr int64_t row_off(int64_t r, int64_t n) {
    return k == role::full ? r * n : k == role::col ? r : 0;
}
template <role k>
constexpr int64_t in_off(int64_t i) {
    return k == role::full || k == role::row ? i : 0;
}

template <typename T, role rc, role ra, role rb>
void loop_ct_t(const problem2d &p, const operands &o) {
    const uint8_t *__restrict c = o.cond;
    const T *__restrict a = static_cast<const T *>(o.src0);
    const T *__restrict b = static_cast<const T *>(o.src1);
    T *__restrict d = static_cast<T *>(o.dst);
    const int64_t rows = p.rows, n = p.inner;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const uint8_t *__restrict cr = c + row_off<rc>(r, n);
        const T *__restrict ar = a + row_off<ra>(r, n);
        const T *__restrict br = b + row_off<rb>(r, n);
        T *__restrict dr = d + r * n;
        for (int64_t i = 0; i < n; ++i) {
            // Both sources read unconditionally: written as
            // `dr[i] = cr[i] ? ar[i] : br[i]`, GCC 12 makes the reads
            // masked loads and gives up on 4 of the 14 instantiations (those
            // with a source constant along the row).
            const T x = ar[in_off<ra>(i)];
            const T y = br[in_off<rb>(i)];
            dr[i] = cr[in_off<rc>(i)] ? x : y;
        }
    }
}

template <typename T>
void loop_ct_dispatch(const problem2d &p, const operands &o) {
    using r = role;
    const r c = p.roles[op_cond], a = p.roles[op_src0], b = p.roles[op_src1];
#define SGBENCH_PATTERN(C, A, B)                                               \
    if (c == r::C && a == r::A && b == r::B)                                   \
        return loop_ct_t<T, r::C, r::A, r::B>(p, o);
    SGBENCH_PATTERN(full, full, full)   // S1, S2
    SGBENCH_PATTERN(row, full, scalar)  // S3
    SGBENCH_PATTERN(col, full, full)    // S4
    SGBENCH_PATTERN(scalar, full, full) // S5
    SGBENCH_PATTERN(full, full, row)    // S6
    SGBENCH_PATTERN(row, full, full)    // S7
    SGBENCH_PATTERN(full, col, row)     // S8
#undef SGBENCH_PATTERN
    // A pattern outside the suite: the run-time loop.
    loop_rt_t<T>(p, o);
}

} // namespace

void loop_rt(const problem2d &p, int w, const operands &o) {
    switch (w) {
        case 8: loop_rt_t<double>(p, o); break;
        case 4: loop_rt_t<float>(p, o); break;
        case 1: loop_rt_t<int8_t>(p, o); break;
        default: loop_rt_t<uint16_t>(p, o); break;
    }
}

void loop_nd(int nd, const int64_t *dims, const int64_t (*st)[8], int w,
             const operands &o, int nthreads) {
    switch (w) {
        case 1: loop_nd_t<uint8_t>(nd, dims, st, o, nthreads); break;
        case 2: loop_nd_t<uint16_t>(nd, dims, st, o, nthreads); break;
        case 8: loop_nd_t<uint64_t>(nd, dims, st, o, nthreads); break;
        default: loop_nd_t<uint32_t>(nd, dims, st, o, nthreads); break;
    }
}

void loop_nd_strides(int nd, const std::vector<int64_t> &d,
                     const std::vector<int64_t> &strides, int64_t *out) {
    const int shift = nd - static_cast<int>(d.size());
    for (int i = 0; i < nd; ++i) {
        const int j = i - shift;
        out[i] = j < 0 || d[static_cast<size_t>(j)] == 1
                         ? 0
                         : strides[static_cast<size_t>(j)];
    }
}

void loop_ct(const problem2d &p, int w, const operands &o) {
    switch (w) {
        case 8: loop_ct_dispatch<double>(p, o); break;
        case 4: loop_ct_dispatch<float>(p, o); break;
        case 1: loop_ct_dispatch<int8_t>(p, o); break;
        default: loop_ct_dispatch<uint16_t>(p, o); break;
    }
}

void loop_serial(int64_t n, int w, const operands &o) {
    const uint8_t *__restrict c = o.cond;
    if (w == 4) {
        const float *__restrict a = static_cast<const float *>(o.src0);
        const float *__restrict b = static_cast<const float *>(o.src1);
        float *__restrict d = static_cast<float *>(o.dst);
        for (int64_t i = 0; i < n; ++i)
            d[i] = c[i] ? a[i] : b[i];
    } else {
        const uint16_t *__restrict a = static_cast<const uint16_t *>(o.src0);
        const uint16_t *__restrict b = static_cast<const uint16_t *>(o.src1);
        uint16_t *__restrict d = static_cast<uint16_t *>(o.dst);
        for (int64_t i = 0; i < n; ++i)
            d[i] = c[i] ? a[i] : b[i];
    }
}

} // namespace sgbench
