// Shared helpers of the kernel tests (test_kernel*.cpp): the per-ISA test
// fixture (every kernel test runs once per ISA, the ISA in the test name, as
// Highway's TestWithParamTarget), problem builders, data generators with
// special bit patterns, an independent naive oracle, buffers with canaries
// and guard-paged memory.
#ifndef SELGRAPH_TESTS_KERNEL_TEST_UTILS_HPP
#define SELGRAPH_TESTS_KERNEL_TEST_UTILS_HPP

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <ostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <xbyak/xbyak.h>

#include "kernels/jit_select.hpp"
#include "kernels/ref_select.hpp"
#include "kernels/select_kernel.hpp"
#include "kernels/select_problem.hpp"
#include "selgraph/selgraph.hpp"
#include "src/broadcast.hpp"
#include "src/common.hpp"
#include "src/cpu_isa.hpp"
#include "src/dispatch.hpp"
#include "src/kernel_cache.hpp"

namespace selgraph {
/// Test names carry the ISA; failure messages print it too.
inline void PrintTo(cpu_isa isa, std::ostream *os) {
    *os << (isa == cpu_isa::avx512_core ? "AVX512_CORE"
            : isa == cpu_isa::avx2      ? "AVX2"
            : isa == cpu_isa::none      ? "NONE"
                                        : "ALL");
}
} // namespace selgraph

namespace selgraph_test {

namespace sg = selgraph;
namespace si = selgraph::impl;

/// A kernel key from its fields, in kernel_key's order.
/// The seed of a random test: `fallback`, or SELGRAPH_TEST_SEED where set
/// (to run the random layout tests over other seeds than CI's). Their
/// checks of what was drawn (so many tiled or staged cases, every kind of
/// tile) hold for the default seeds; under another seed only the
/// comparisons with the reference count.
inline uint64_t test_seed(uint64_t fallback) {
    const char *e = std::getenv("SELGRAPH_TEST_SEED");
    return e && *e ? std::strtoull(e, nullptr, 10) : fallback;
}

inline si::kernel_key make_key(si::kernel_isa isa, int elem_size,
                               int cond_scalar, int invert_cond,
                               int src0_scalar, int src1_scalar, int nt,
                               int unroll) {
    si::kernel_key k {};
    k.isa = isa;
    k.elem_size = static_cast<uint8_t>(elem_size);
    k.cond_scalar = static_cast<uint8_t>(cond_scalar);
    k.invert_cond = static_cast<uint8_t>(invert_cond);
    k.src0_scalar = static_cast<uint8_t>(src0_scalar);
    k.src1_scalar = static_cast<uint8_t>(src1_scalar);
    k.nt_stores = static_cast<uint8_t>(nt);
    k.unroll = static_cast<uint8_t>(unroll);
    return k;
}

/// make_key's non-temporal key with kernel_key::row_prefetch.
inline si::kernel_key make_pf_key(si::kernel_isa isa, int elem_size,
                                  int cond_scalar, int invert_cond,
                                  int src0_scalar, int src1_scalar,
                                  int unroll) {
    si::kernel_key k = make_key(isa, elem_size, cond_scalar, invert_cond,
                                src0_scalar, src1_scalar, 1, unroll);
    k.row_prefetch = 1;
    return k;
}

// ---------------------------------------------------------------------------
// The ISA parameter.

inline si::kernel_isa to_kernel_isa(sg::cpu_isa isa) {
    switch (isa) {
        case sg::cpu_isa::avx512_core: return si::kernel_isa::avx512_core;
        case sg::cpu_isa::avx2: return si::kernel_isa::avx2;
        default: return si::kernel_isa::ref;
    }
}

inline const char *isa_param_str(sg::cpu_isa isa) {
    switch (isa) {
        case sg::cpu_isa::avx512_core: return "AVX512_CORE";
        case sg::cpu_isa::avx2: return "AVX2";
        case sg::cpu_isa::none: return "NONE";
        default: return "ALL";
    }
}

struct isa_param_name {
    std::string
    operator()(const ::testing::TestParamInfo<sg::cpu_isa> &info) const {
        return isa_param_str(info.param);
    }
};

/// Vector length in bytes of a JIT ISA (for the reference, the AVX-512
/// numbers, so that size sweeps are the same).
inline int isa_vlen(si::kernel_isa isa) {
    return isa == si::kernel_isa::avx2 ? 32 : 64;
}

/// The fixture of every kernel test: skips where the CPU lacks the ISA,
/// caps this thread to it (impl::scoped_isa_cap) and checks the cap took.
class isa_test : public ::testing::TestWithParam<sg::cpu_isa> {
protected:
    void SetUp() override {
        kisa_ = to_kernel_isa(GetParam());
        if (!si::cpu_has(kisa_))
            GTEST_SKIP() << "the CPU lacks " << isa_param_str(GetParam())
                         << " (impl::cpu_has is false)";
        cap_ = std::make_unique<si::scoped_isa_cap>(GetParam());
        if (si::max_kernel_isa() != kisa_) {
            if (std::getenv("SELGRAPH_MAX_CPU_ISA"))
                GTEST_SKIP() << "SELGRAPH_MAX_CPU_ISA caps the process below "
                             << isa_param_str(GetParam());
            FAIL() << "scoped_isa_cap(" << isa_param_str(GetParam())
                   << ") did not take: max_kernel_isa() is "
                   << si::kernel_isa2str(si::max_kernel_isa());
        }
    }
    void TearDown() override { cap_.reset(); }

    si::kernel_isa kisa() const { return kisa_; }
    bool jit() const { return kisa_ != si::kernel_isa::ref; }
    int vlen() const { return isa_vlen(kisa_); }
    /// Lanes of one vector for `w`-byte elements.
    int lanes(int w) const { return vlen() / w; }

private:
    si::kernel_isa kisa_ = si::kernel_isa::ref;
    std::unique_ptr<si::scoped_isa_cap> cap_;
};

#define SELGRAPH_INSTANTIATE_PER_ISA(suite)                                    \
    INSTANTIATE_TEST_SUITE_P(                                                  \
            Isa, suite,                                                        \
            ::testing::Values(::selgraph::cpu_isa::avx512_core,                \
                              ::selgraph::cpu_isa::avx2,                       \
                              ::selgraph::cpu_isa::none),                      \
            ::selgraph_test::isa_param_name())

// Suites about generated code only: the JIT ISAs, without the reference.
#define SELGRAPH_INSTANTIATE_PER_JIT_ISA(suite)                                \
    INSTANTIATE_TEST_SUITE_P(                                                  \
            Isa, suite,                                                        \
            ::testing::Values(::selgraph::cpu_isa::avx512_core,                \
                              ::selgraph::cpu_isa::avx2),                      \
            ::selgraph_test::isa_param_name())

/// Reports a failing check and keeps going, up to a budget per test.
#define KT_EXPECT(budget, res, desc)                                           \
    do {                                                                       \
        const ::testing::AssertionResult kt_r_ = (res);                        \
        if (!kt_r_) {                                                          \
            ADD_FAILURE() << (desc) << "\n" << kt_r_.message();                \
            if (++(budget) >= 6)                                               \
                GTEST_FAIL() << "too many failures, stopping this test";       \
        }                                                                      \
    } while (0)

// ---------------------------------------------------------------------------
// Sizes.

/// Row lengths below, at, above and at multiples of the vector and unroll
/// widths of both ISAs and every element size.
inline const std::vector<uint64_t> &sweep_sizes() {
    static const std::vector<uint64_t> v = {
        1,  2,   3,   7,   8,   9,   15,  16,  17,  31,  32,   33,   63,   64,
        65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1000, 1023, 1024, 1025
    };
    return v;
}

// ---------------------------------------------------------------------------
// Data.

/// Bit patterns that a float-aware (instead of bit-moving) kernel would
/// change: NaN payloads, signalling NaNs, -0.0, denormals, infinities; for
/// 8 bytes also the s64/u64 extremes; for 1 byte the f8 NaNs and -0.0.
inline const std::vector<uint64_t> &special_bits(int w) {
    static const std::vector<uint64_t> s8 = {
        0x7ff8000000000001ull, // f64 quiet NaN with a payload
        0x7ff0000000000001ull, // f64 signalling NaN
        0xfff123456789abcdull, // negative NaN, payload
        0x8000000000000000ull, // -0.0, INT64_MIN
        0x0000000000000000ull,
        0x0000000000000001ull, // smallest denormal
        0x800fffffffffffffull, // negative denormal
        0x7ff0000000000000ull, // +inf
        0xfff0000000000000ull, // -inf
        0xffffffffffffffffull, // -1, UINT64_MAX
        0x7fffffffffffffffull, // INT64_MAX
        0x00000000ffffffffull, // differs from its neighbours in one half
        0xffffffff00000000ull,
    };
    static const std::vector<uint64_t> s4 = {
        0x7fc00001u, 0x7f800001u, 0xffbfffffu, 0xffc12345u,
        0x80000000u, 0x00000000u, 0x00000001u, 0x807fffffu,
        0x7f800000u, 0xff800000u, 0xffffffffu, 0x7fffffffu
    };
    static const std::vector<uint64_t> s2 = { 0x7fc1u, 0x7e01u, 0x7c01u,
                                              0xff81u, 0x8000u, 0x0000u,
                                              0x0001u, 0x8001u, 0x7f80u,
                                              0xfc00u, 0xffffu, 0x7fffu };
    static const std::vector<uint64_t> s1 = { 0x00u, 0x80u, 0xffu, 0x7fu,
                                              0x01u, 0xfeu, 0x7eu, 0xfcu };
    return w == 8 ? s8 : w == 4 ? s4 : w == 2 ? s2 : s1;
}

inline std::mt19937_64 &rng() {
    static std::mt19937_64 g(0x5e1ec7u);
    return g;
}

/// The bits the fill_* functions draw: SplitMix64 seeded by one draw of the
/// test's generator per fill. Its few arithmetic steps cost little in the
/// unoptimised sanitizer builds, where a draw of mt19937_64 per byte took a
/// third of the kernel tests' time.
struct fill_bits {
    uint64_t s;
    explicit fill_bits(std::mt19937_64 &g)
        : s(g()) {}
    uint64_t operator()() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
};

/// Fills `n` elements of `w` bytes: random bits, one in 8 a special pattern.
inline void fill_values(void *p, size_t n, int w, std::mt19937_64 &g) {
    auto *b = static_cast<uint8_t *>(p);
    const auto &sp = special_bits(w);
    fill_bits bits(g);
    for (size_t i = 0; i < n; ++i) {
        const uint64_t r = bits();
        uint64_t v = w == 8 ? bits() : r >> 32;
        if ((r & 7) == 0)
            v = sp[(r >> 3) % sp.size()];
        std::memcpy(b + i * w, &v, w); // little endian: the low bytes
    }
}

/// Cond bytes: half zero, the rest 1, 2, 0x80, 0xff or any non-zero byte.
inline void fill_cond(void *p, size_t n, std::mt19937_64 &g) {
    auto *b = static_cast<uint8_t *>(p);
    static const uint8_t nz[] = { 1, 2, 0x80, 0xff, 0x7f, 0x10 };
    fill_bits bits(g);
    for (size_t i = 0; i < n; ++i) {
        const uint64_t r = bits();
        if (r & 1)
            b[i] = 0;
        else if ((r >> 1) & 1)
            b[i] = nz[(r >> 2) % sizeof(nz)];
        else
            b[i] = static_cast<uint8_t>(1 + (r >> 8) % 255);
    }
}

/// Random bytes, eight a draw.
inline void fill_bytes(void *p, size_t n, std::mt19937_64 &g) {
    auto *b = static_cast<uint8_t *>(p);
    fill_bits bits(g);
    for (size_t i = 0; i < n; i += 8) {
        const uint64_t r = bits();
        std::memcpy(b + i, &r, std::min<size_t>(8, n - i));
    }
}

/// Bytewise equality of two buffers of `w`-byte elements, naming the first
/// differing element.
inline ::testing::AssertionResult bytes_equal(const void *got, const void *want,
                                              size_t bytes, int w) {
    const auto *g = static_cast<const uint8_t *>(got);
    const auto *e = static_cast<const uint8_t *>(want);
    if (bytes == 0 || std::memcmp(g, e, bytes) == 0)
        return ::testing::AssertionSuccess();
    size_t first = bytes, count = 0;
    for (size_t i = 0; i < bytes; i += w)
        if (std::memcmp(g + i, e + i, std::min<size_t>(w, bytes - i)) != 0) {
            if (first == bytes)
                first = i;
            ++count;
        }
    auto hex = [&](const uint8_t *p) {
        char buf[32];
        unsigned long long v = 0;
        std::memcpy(&v, p, std::min<size_t>(w, bytes - first));
        std::snprintf(buf, sizeof(buf), "0x%0*llx", 2 * w, v);
        return std::string(buf);
    };
    return ::testing::AssertionFailure()
           << count << " of " << bytes / w << " elements differ; first at byte "
           << first << " (element " << first / w << "): got " << hex(g + first)
           << ", expected " << hex(e + first);
}

// ---------------------------------------------------------------------------
// Buffers.

/// Heap memory with a 64-byte aligned base plus `misalign` bytes, and
/// canary bytes on both sides that must survive every kernel call.
class canary_buf {
public:
    static constexpr size_t pad = 256;

    explicit canary_buf(size_t bytes, size_t misalign = 0)
        : bytes_(bytes)
        , mem_(bytes + 2 * pad + 128 + misalign) {
        const auto raw = reinterpret_cast<uintptr_t>(mem_.data()) + pad;
        const uintptr_t aligned = (raw + 63) & ~uintptr_t(63);
        data_ = reinterpret_cast<uint8_t *>(aligned + misalign);
        for (size_t i = 0; i < pad; ++i) {
            data_[-static_cast<ptrdiff_t>(i) - 1] = canary(i);
            data_[bytes_ + i] = canary(i + 7);
        }
    }
    uint8_t *data() { return data_; }
    const uint8_t *data() const { return data_; }
    size_t size() const { return bytes_; }

    ::testing::AssertionResult canaries_ok() const {
        for (size_t i = 0; i < pad; ++i) {
            if (data_[-static_cast<ptrdiff_t>(i) - 1] != canary(i))
                return ::testing::AssertionFailure()
                       << "byte " << i + 1
                       << " before the buffer was overwritten";
            if (data_[bytes_ + i] != canary(i + 7))
                return ::testing::AssertionFailure()
                       << "byte " << i << " after the buffer (of " << bytes_
                       << " bytes) was overwritten";
        }
        return ::testing::AssertionSuccess();
    }

private:
    static uint8_t canary(size_t i) {
        return static_cast<uint8_t>(0x5a + i * 37);
    }
    size_t bytes_;
    std::vector<uint8_t> mem_;
    uint8_t *data_;
};

/// Read+write pages between two PROT_NONE pages: a tensor placed with
/// at_end() has its last byte right before the upper guard page, one placed
/// with at_begin() its first byte right after the lower guard page. Any
/// access outside crashes the test.
class guarded_mem {
public:
    explicit guarded_mem(size_t capacity) {
        page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        data_ = (std::max<size_t>(capacity, 1) + page_ - 1) / page_ * page_;
        total_ = data_ + 2 * page_;
        void *p = mmap(nullptr, total_, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            base_ = nullptr;
            return;
        }
        base_ = static_cast<uint8_t *>(p);
        if (mprotect(base_, page_, PROT_NONE) != 0
            || mprotect(base_ + page_ + data_, page_, PROT_NONE) != 0) {
            munmap(base_, total_);
            base_ = nullptr;
        }
    }
    ~guarded_mem() {
        if (base_)
            munmap(base_, total_);
    }
    guarded_mem(const guarded_mem &) = delete;
    guarded_mem &operator=(const guarded_mem &) = delete;

    bool ok() const { return base_ != nullptr; }
    size_t capacity() const { return data_; }
    uint8_t *at_begin() { return base_ + page_; }
    uint8_t *at_end(size_t bytes) { return base_ + page_ + data_ - bytes; }

private:
    size_t page_ = 4096, data_ = 0, total_ = 0;
    uint8_t *base_ = nullptr;
};

/// One guarded region per operand (cond, src_0, src_1, dst).
struct guard_set {
    std::unique_ptr<guarded_mem> m[4];
    explicit guard_set(size_t capacity) {
        for (auto &x : m)
            x = std::make_unique<guarded_mem>(capacity);
    }
    bool ok() const {
        for (const auto &x : m)
            if (!x->ok())
                return false;
        return true;
    }
    uint8_t *place(int op, size_t bytes, bool at_end) {
        return at_end ? m[op]->at_end(bytes) : m[op]->at_begin();
    }
    /// Random contents for the whole regions.
    void fill(std::mt19937_64 &g) {
        fill_cond(m[0]->at_begin(), m[0]->capacity(), g);
        for (int op = 1; op < 4; ++op)
            fill_bytes(m[op]->at_begin(), m[op]->capacity(), g);
    }
    /// Random contents for the first and the last `bytes` of every region
    /// (where tensors of up to `bytes` are placed).
    void fill(std::mt19937_64 &g, size_t bytes) {
        for (int op = 0; op < 4; ++op) {
            const size_t n = std::min(bytes, m[op]->capacity());
            for (uint8_t *p : { m[op]->at_begin(), m[op]->at_end(n) }) {
                if (op == 0)
                    fill_cond(p, n, g);
                else
                    fill_bytes(p, n, g);
            }
        }
    }
};

/// The want of a direct call of a kernel that writes a transposed dst
/// (`Case`: key, bytes(op) and nd(), with invert_cond's src_0 the nd's
/// src_1): ref_select into a copy of dst's bytes (gaps kept) and of the
/// `extra` bytes after them, which must not change.
template <typename Case>
std::vector<uint8_t> transposed_want(const Case &c, const void *const *ptr,
                                     size_t extra = 0) {
    const auto *d = static_cast<const uint8_t *>(ptr[3]);
    std::vector<uint8_t> want(d, d + c.bytes(si::op_dst) + extra);
    const void *a = c.key.invert_cond ? ptr[2] : ptr[1];
    const void *b = c.key.invert_cond ? ptr[1] : ptr[2];
    si::ref_select(c.nd(), ptr[0], a, b, want.data(), 1);
    return want;
}

/// One such call inside the guard pages, each operand at the end of its
/// region or at its start: placed (a non-temporal dst over whole cache
/// lines, its contract) and filled at random, then dst and the bytes after
/// it up to its last line compared bit for bit with transposed_want.
/// `make_args(ptr)` builds the call's arguments.
template <typename Case, typename MakeArgs>
::testing::AssertionResult
transposed_call_against_guards(guard_set &gs, std::mt19937_64 &g, const Case &c,
                               const si::select_kernel &kern, bool at_end,
                               MakeArgs make_args) {
    const bool nt = c.key.nt_stores != 0;
    const void *ptr[4];
    size_t most = 0;
    for (int op = 0; op < 4; ++op) {
        size_t span = c.bytes(op);
        if (op == si::op_dst && nt)
            span = (span + 63) / 64 * 64;
        ptr[op] = gs.place(op, span, at_end);
        most = std::max(most, c.bytes(op) + 64);
    }
    gs.fill(g, most);
    const size_t dbytes = c.bytes(si::op_dst);
    const size_t extra = nt ? (dbytes + 63) / 64 * 64 - dbytes : 0;
    const auto want = transposed_want(c, ptr, extra);
    const si::select_call_args a = make_args(ptr);
    kern.fn()(&a);
    return bytes_equal(ptr[3], want.data(), want.size(), c.key.elem_size);
}

// ---------------------------------------------------------------------------
// N-d problems.

using dims_t = std::vector<int64_t>;

inline std::string dims_str(const dims_t &d) {
    std::string s = "[";
    for (size_t i = 0; i < d.size(); ++i)
        s += (i ? "," : "") + std::to_string(d[i]);
    return s + "]";
}

inline dims_t dense_strides(const dims_t &d) {
    dims_t s(d.size());
    int64_t acc = 1;
    for (size_t i = d.size(); i-- > 0;) {
        s[i] = acc;
        acc *= std::max<int64_t>(d[i], 1);
    }
    return s;
}

/// Numpy broadcast of two shapes (assumed compatible).
inline dims_t bcast_dims(const dims_t &a, const dims_t &b) {
    const size_t r = std::max(a.size(), b.size());
    dims_t d(r);
    for (size_t i = 0; i < r; ++i) {
        const int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
        const int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
        d[i] = x == 1 ? y : x;
    }
    return d;
}

/// A Select as the user writes it: cond, src_0, src_1 shapes (numpy), and
/// optionally explicit element strides per operand (empty: dense).
struct nd_spec {
    dims_t in[3];
    dims_t strides[4];
    dims_t dst; ///< empty with dst_from_inputs: broadcast of src_0, src_1
    bool dst_from_inputs = true;
    int w = 4;
};

/// A memory order: perm[0] the outermost dim, perm.back() the contiguous
/// one.
using perm_t = std::vector<int>;

/// Element strides of dims `d` laid out in the memory order `perm`. Every
/// pitch above the first dim larger than 1 is `pad` elements longer than
/// needed (a padded row), so the contiguous dim keeps stride 1.
inline dims_t perm_strides(const dims_t &d, const perm_t &perm,
                           int64_t pad = 0) {
    dims_t s(d.size());
    int64_t acc = 1;
    for (size_t k = perm.size(); k-- > 0;) {
        const auto i = static_cast<size_t>(perm[k]);
        s[i] = acc;
        acc *= std::max<int64_t>(d[i], 1);
        if (acc > 1)
            acc += pad;
    }
    return s;
}

/// The select_nd of a spec, as partition::compile builds it: operands
/// right-aligned to dst, stride 0 where an operand's dim is 1 or missing.
inline si::select_nd make_nd(const nd_spec &s) {
    si::select_nd p;
    const dims_t dst = s.dst_from_inputs ? bcast_dims(s.in[1], s.in[2]) : s.dst;
    p.ndims = static_cast<int>(dst.size());
    p.elem_size = s.w;
    for (int i = 0; i < p.ndims; ++i)
        p.dims[i] = dst[i];
    for (int port = 0; port < si::n_operands; ++port) {
        const dims_t &d = port < 3 ? s.in[port] : dst;
        const dims_t st =
                s.strides[port].empty() ? dense_strides(d) : s.strides[port];
        const int shift = p.ndims - static_cast<int>(d.size());
        // A test's own mistake, not the library's: operands must broadcast
        // to dst one way.
        if (shift < 0 || st.size() != d.size())
            throw std::logic_error("make_nd: operand rank/strides mismatch");
        for (int i = 0; i < p.ndims; ++i) {
            const int j = i - shift;
            if (j >= 0 && d[j] != 1 && d[j] != dst[i])
                throw std::logic_error("make_nd: operand " + dims_str(d)
                                       + " does not broadcast to "
                                       + dims_str(dst));
            p.strides[port][i] = (j < 0 || d[j] == 1) ? 0 : st[j];
        }
    }
    return p;
}

inline si::select_nd make_nd(const dims_t &c, const dims_t &a, const dims_t &b,
                             int w) {
    nd_spec s;
    s.in[0] = c;
    s.in[1] = a;
    s.in[2] = b;
    s.w = w;
    return make_nd(s);
}

/// All four operands of shape `d`, dense row-major until strides are set.
inline nd_spec full_spec(const dims_t &d, int w) {
    nd_spec s;
    s.w = w;
    s.dst_from_inputs = false;
    s.dst = d;
    for (int op = 0; op < 3; ++op)
        s.in[op] = d;
    return s;
}

/// Random broadcasts of full_spec's inputs: along each dim, cond is 1 with
/// odds 1 in `cond_one_in`, and src_0 or src_1 (never both: dst is their
/// broadcast) each with odds 1 in `src_one_in`.
inline void random_broadcasts(nd_spec &s, std::mt19937_64 &g,
                              unsigned cond_one_in, unsigned src_one_in) {
    for (size_t k = 0; k < s.dst.size(); ++k) {
        if (g() % cond_one_in == 0)
            s.in[0][k] = 1;
        const auto r = g() % src_one_in;
        if (r < 2)
            s.in[1 + r][k] = 1;
    }
}

/// A random layout: ranks 2 to 1 + `ranks`, dims around the tile and
/// vector sizes (halved until at most `max_elems` elements), inputs
/// broadcast along random dims, dst in a random memory order (sometimes
/// padded), each input in dst's order, row-major or its own random order
/// (sometimes padded); each operand's strides times `step(op)` (a slice
/// with a step where not 1), dst's asked first.
template <typename Step>
nd_spec random_layout_spec(std::mt19937_64 &g, int ranks, int64_t max_elems,
                           int w, Step step) {
    static const int64_t sizes[] = { 1, 2, 3, 5, 15, 16, 17, 33, 64, 65 };
    const int rank = 2 + static_cast<int>(g() % static_cast<unsigned>(ranks));
    dims_t d(static_cast<size_t>(rank));
    for (auto &x : d)
        x = sizes[g() % 10];
    auto elems = [&] {
        int64_t n = 1;
        for (auto x : d)
            n *= x;
        return n;
    };
    while (elems() > max_elems) {
        auto it = std::max_element(d.begin(), d.end());
        *it = (*it + 1) / 2;
    }
    auto pad = [&] {
        return g() % 4 == 0 ? static_cast<int64_t>(1 + g() % 3) : 0;
    };
    perm_t dperm(static_cast<size_t>(rank));
    for (int k = 0; k < rank; ++k)
        dperm[static_cast<size_t>(k)] = k;
    const perm_t ident = dperm;
    std::shuffle(dperm.begin(), dperm.end(), g);
    nd_spec s = full_spec(d, w);
    s.strides[3] = perm_strides(d, dperm, pad());
    const int64_t dst_step = step(si::op_dst);
    for (auto &x : s.strides[3])
        x *= dst_step;
    random_broadcasts(s, g, 4, 6);
    for (int op = 0; op < 3; ++op) {
        const auto choice = g() % 3;
        perm_t order = choice == 0 ? dperm : ident;
        if (choice == 2)
            std::shuffle(order.begin(), order.end(), g);
        s.strides[op] = perm_strides(s.in[op], order, pad());
        const int64_t k = step(op);
        for (auto &x : s.strides[op])
            x *= k;
    }
    return s;
}

/// All four operands of shape `d`, with element strides `st` per operand
/// (empty: dense row-major).
inline si::select_nd full_nd(const dims_t &d, const dims_t (&st)[4], int w) {
    nd_spec s = full_spec(d, w);
    for (int op = 0; op < 4; ++op)
        s.strides[op] = st[op];
    return make_nd(s);
}

/// Bytes an operand spans in memory (0 for an empty problem).
inline size_t span_bytes(const si::select_nd &p, int port) {
    if (p.nelems() == 0)
        return 0;
    int64_t e = 1;
    for (int i = 0; i < p.ndims; ++i)
        e += (p.dims[i] - 1) * p.strides[port][i];
    return static_cast<size_t>(e) * (port == si::op_cond ? 1 : p.elem_size);
}

inline std::string nd_str(const si::select_nd &p) {
    std::ostringstream os;
    os << "w=" << p.elem_size << " dims=" << si::dims2str(p.dims, p.ndims);
    const char *names[4] = { " cond", " src_0", " src_1", " dst" };
    for (int i = 0; i < si::n_operands; ++i)
        os << names[i] << "=" << si::dims2str(p.strides[i], p.ndims);
    return os.str();
}

/// The naive oracle: every element by its multi-index, independent of the
/// reference kernel's row decomposition (which it checks).
inline void naive_select(const si::select_nd &p, const void *cond,
                         const void *src0, const void *src1, void *dst) {
    const int64_t n = p.nelems();
    if (n == 0)
        return;
    const int w = p.elem_size;
    std::vector<int64_t> idx(p.ndims, 0);
    for (int64_t e = 0; e < n; ++e) {
        int64_t off[4] = { 0, 0, 0, 0 };
        for (int d = 0; d < p.ndims; ++d)
            for (int i = 0; i < 4; ++i)
                off[i] += idx[d] * p.strides[i][d];
        const bool c = static_cast<const uint8_t *>(cond)[off[0]] != 0;
        const auto *src = c ? static_cast<const uint8_t *>(src0) + off[1] * w
                            : static_cast<const uint8_t *>(src1) + off[2] * w;
        std::memmove(static_cast<uint8_t *>(dst) + off[3] * w, src, w);
        for (int d = p.ndims - 1; d >= 0; --d) {
            if (++idx[d] < p.dims[d])
                break;
            idx[d] = 0;
        }
    }
}

struct pattern {
    const char *name;
    dims_t c, a, b;
};

/// The broadcast patterns (cond, src_0, src_1 shapes) over `r` rows of `n`
/// elements.
inline std::vector<pattern> broadcast_patterns(int64_t r, int64_t n) {
    return {
        { "all_vector", { r, n }, { r, n }, { r, n } },
        { "cond_per_row", { r, 1 }, { r, n }, { r, n } },
        { "cond_0d", {}, { r, n }, { r, n } },
        { "cond_row_vector", { n }, { r, n }, { r, n } },
        { "cond_1xn", { 1, n }, { r, n }, { r, n } },
        { "src0_row_vector", { r, n }, { n }, { r, n } },
        { "src1_row_vector", { r, n }, { r, n }, { 1, n } },
        { "src0_0d", { r, n }, {}, { r, n } },
        { "src1_0d", { r, n }, { r, n }, {} },
        { "src0_per_row", { r, n }, { r, 1 }, { r, n } },
        { "src1_per_row", { r, n }, { r, n }, { r, 1 } },
        { "cond_per_row_src0_per_row", { r, 1 }, { r, 1 }, { r, n } },
        { "outer_product_srcs", { r, n }, { r, 1 }, { 1, n } },
        { "outer_product_srcs_rev", { r, n }, { 1, n }, { r, 1 } },
        { "outer_product_cond_row", { n }, { r, 1 }, { 1, n } },
        { "cond_per_row_outer_product", { r, 1 }, { r, 1 }, { 1, n } },
        { "cond_per_row_src1_0d", { r, 1 }, { r, n }, {} },
        { "cond_per_row_src0_0d", { r, 1 }, {}, { r, n } },
        { "cond_0d_src0_0d", {}, {}, { r, n } },
        { "cond_0d_src1_row", {}, { r, n }, { n } },
        { "cond_row_src0_0d_src1_row", { n }, {}, { 1, n } },
        { "attention_mask", { 1, 1, r, n }, { 2, 3, r, n }, {} },
        { "attention_mask_src0_0d", { 1, 1, r, n }, {}, { 2, 3, r, n } },
        { "attention_mask_per_batch", { 2, 1, r, n }, { 2, 3, r, n }, { 1 } },
        { "middle_bcast", { 2, 1, n }, { 2, r, n }, { 1, r, 1 } },
        { "cond_leading_bcast", { r, n }, { 2, r, n }, { 2, r, n } },
        { "srcs_outer_rank3", { 2, r, 1 }, { 1, r, n }, { 2, 1, n } },
    };
}

/// The dim where operand `op` moves fastest: among dims larger than 1, the
/// one with its smallest stride (the later one on a tie); -1 when every dim
/// is 1.
inline int inner_dim_of(const si::select_nd &p, int op) {
    int best = -1;
    for (int d = 0; d < p.ndims; ++d)
        if (p.dims[d] != 1
            && (best < 0 || p.strides[op][d] <= p.strides[op][best]))
            best = d;
    return best;
}

/// What the fold of `p` is expected to be, modelled on the unfolded problem
/// (src/broadcast.cpp states the rule): the dims are walked in dst's memory
/// order, or in a full input's (broadcast along no dim) where that
/// transposes fewer bytes per element. Along the row (the order's fastest
/// dim) an operand is contiguous, broadcast (inputs), or transposed:
/// contiguous along one other dim, the same for every transposed operand.
struct fold_model {
    bool jit = true; ///< a JIT kernel runs it
    int inner = -1;  ///< the unfolded dim that is the row
    bool dst_transposed = false;
    /// Inputs staged first (bit i: operand i), copied dense in dst's
    /// memory order, and dst (bit op_dst) written to a buffer dense in its
    /// own order and copied into dst last; the rest of the model is the
    /// staged problem's.
    unsigned staged = 0;
    /// Bytes per element through a transpose from memory (an input
    /// broadcast along every outer dim and small enough counts for none).
    int64_t cost = 0;
    /// The stepped kernel runs it (kernel_key::src0_step): cond and one
    /// source broadcast along the row, the other source (`step_op`) `step`
    /// elements apart along it (2 to 255), dst contiguous; 0: not so.
    int step = 0;
    int step_op = 0;
    /// Inputs (bit i) with a step along the row, in a fold without
    /// transposes: gathered per call (select_plan::gather).
    unsigned gathered = 0;
    /// dst with a step along the row: scattered per call
    /// (select_plan::scatter).
    bool scattered = false;
};

inline fold_model model_fold_in_order(const si::select_nd &p, int op) {
    fold_model m;
    const int d = inner_dim_of(p, op);
    m.inner = d;
    if (d < 0)
        return m;
    auto contiguous_dim = [&](int i) {
        int j = -1;
        for (int k = 0; k < p.ndims; ++k)
            if (k != d && p.dims[k] != 1 && p.strides[i][k] == 1)
                j = k;
        return j;
    };
    // A source with a step along the row, cond and the other source
    // broadcast along it, dst contiguous: the stepped kernel.
    for (const int i : { si::op_src0, si::op_src1 }) {
        const int other = i == si::op_src0 ? si::op_src1 : si::op_src0;
        const int64_t s = p.strides[i][d];
        if (op == si::op_dst && p.strides[si::op_dst][d] == 1
            && p.strides[si::op_cond][d] == 0 && p.strides[other][d] == 0
            && s >= 2 && s <= 255 && contiguous_dim(i) < 0) {
            m.step = static_cast<int>(s);
            m.step_op = i;
            return m;
        }
    }
    int tdim = -1;
    unsigned transposed = 0; // bit i: input i transposed
    if (p.strides[si::op_dst][d] != 1) {
        tdim = contiguous_dim(si::op_dst);
        // In dst's order, a dst with a step of 2 or more along the row,
        // its elements at most 64 bytes apart, and no stride-1 dim:
        // scattered, nothing transposed, every input with such a step
        // along the row gathered.
        if (tdim < 0 && op == si::op_dst && p.strides[si::op_dst][d] >= 2
            && p.strides[si::op_dst][d] * p.elem_size <= 64) {
            m.scattered = true;
        } else if (tdim < 0) {
            m.jit = false;
            return m;
        } else {
            m.dst_transposed = true;
            m.cost += p.elem_size;
        }
    }
    for (int i = 0; i < 3; ++i) {
        if (p.strides[i][d] == 0 || p.strides[i][d] == 1)
            continue;
        const int64_t wi = i == si::op_cond ? 1 : p.elem_size;
        if (m.scattered) {
            if (p.strides[i][d] * wi > 64) {
                m.jit = false;
                return m;
            }
            m.gathered |= 1u << i;
            continue;
        }
        const int j = contiguous_dim(i);
        // In dst's order, an input with a step of 2 or more along the row
        // (its elements at most 64 bytes apart) and no stride-1 dim:
        // gathered, where nothing is transposed.
        if (j < 0 && op == si::op_dst && p.strides[i][d] >= 2
            && p.strides[i][d] * wi <= 64) {
            m.gathered |= 1u << i;
            continue;
        }
        if (j < 0 || (tdim >= 0 && j != tdim)) {
            m.jit = false;
            return m;
        }
        tdim = j;
        transposed |= 1u << i;
    }
    if (m.gathered && tdim >= 0)
        m.jit = false;
    if (!m.jit || !transposed)
        return m;
    // Dims that step 4 of the fold merges into the row (d) or the tile dim
    // (tdim): every operand contiguous from one into the next (or
    // broadcast along both), chained outwards.
    unsigned row_dims = 1u << d, tile_dims = 1u << tdim;
    const auto chain = [&](unsigned &dims, int last) {
        for (bool grew = true; grew;) {
            grew = false;
            for (int k = 0; k < p.ndims; ++k) {
                if (p.dims[k] == 1 || ((row_dims | tile_dims) >> k) & 1)
                    continue;
                bool merges = true;
                for (int i = 0; i < si::n_operands; ++i)
                    merges = merges
                             && p.strides[i][k]
                                        == p.strides[i][last] * p.dims[last];
                if (merges) {
                    dims |= 1u << k;
                    last = k;
                    grew = true;
                }
            }
        }
        return last;
    };
    const int row_last = chain(row_dims, d);
    const int tile_last = chain(tile_dims, tdim);
    int64_t row_len = 1, tile_len = 1;
    for (int k = 0; k < p.ndims; ++k) {
        row_len *= (row_dims >> k) & 1 ? p.dims[k] : 1;
        tile_len *= (tile_dims >> k) & 1 ? p.dims[k] : 1;
    }
    // With dst read as it is, the dim the fold places right outside the
    // tile dim (op's next one in after the row and the tile dims), where
    // steps 7 and 8 take it in. Pieces (step 7): the row under 1 KiB of
    // dst, every transposed input moving along that dim and every other
    // operand contiguous from the row into it; no input's tile is then
    // the same for every outer index. Row groups (step 8): every transposed
    // input contiguous from the tile dim into it, some input's lines along
    // the tile dim under 512 bytes.
    bool pieces = false;
    if (!m.dst_transposed) {
        int b = -1;
        for (int k = 0; k < p.ndims; ++k)
            if (!(((row_dims | tile_dims) >> k) & 1) && p.dims[k] != 1
                && (b < 0 || p.strides[op][k] <= p.strides[op][b]))
                b = k;
        if (b >= 0) {
            pieces = row_len * p.elem_size < si::short_row_bytes;
            bool groups = true, short_line = false;
            for (int i = 0; i < si::n_operands; ++i) {
                const bool tr = (transposed >> i) & 1;
                pieces = pieces
                         && (tr ? p.strides[i][b] != 0
                                : p.strides[i][b]
                                             == p.strides[i][row_last]
                                                        * p.dims[row_last]);
                if (!tr)
                    continue;
                const int64_t w = i == si::op_cond ? 1 : p.elem_size;
                groups = groups
                         && p.strides[i][b]
                                    == p.strides[i][tile_last]
                                               * p.dims[tile_last];
                short_line = short_line || tile_len * w < si::short_line_bytes;
            }
            if (!pieces && groups && short_line)
                tile_dims |= 1u << b;
        }
    }
    for (int i = 0; i < 3; ++i) {
        if (!((transposed >> i) & 1))
            continue;
        // An input broadcast along every outer dim, with at least one such
        // dim, whose elements fit in 64 KiB is transposed from cache and
        // costs nothing.
        const int64_t w = i == si::op_cond ? 1 : p.elem_size;
        bool outer = false, cached = !pieces;
        int64_t bytes = w;
        for (int k = 0; k < p.ndims; ++k) {
            if (p.dims[k] == 1)
                continue;
            if (!(((row_dims | tile_dims) >> k) & 1)) {
                outer = true;
                cached = cached && p.strides[i][k] == 0;
            } else if (p.strides[i][k] != 0) {
                bytes *= p.dims[k];
            }
        }
        if (!(outer && cached && bytes <= 64 * 1024))
            m.cost += w;
    }
    return m;
}

inline fold_model expected_fold_unstaged(const si::select_nd &p) {
    auto order_of = [&](int op) {
        std::vector<int> o;
        for (int d = 0; d < p.ndims; ++d)
            if (p.dims[d] != 1)
                o.push_back(d);
        std::stable_sort(o.begin(), o.end(), [&](int a, int b) {
            return p.strides[op][a] > p.strides[op][b];
        });
        return o;
    };
    fold_model best = model_fold_in_order(p, si::op_dst);
    if (best.jit && best.cost == 0)
        return best;
    const std::vector<int> dst_order = order_of(si::op_dst);
    for (int i = 0; i < 3; ++i) {
        bool full = true;
        for (int d = 0; d < p.ndims; ++d)
            full = full && (p.dims[d] == 1 || p.strides[i][d] != 0);
        if (!full || order_of(i) == dst_order)
            continue;
        const fold_model m = model_fold_in_order(p, i);
        if (m.jit && (!best.jit || m.cost < best.cost))
            best = m;
    }
    return best;
}

/// Whether input `op` of `p` has a stride of 1 along a dim larger than 1.
inline bool model_unit_stride(const si::select_nd &p, int op) {
    for (int d = 0; d < p.ndims; ++d)
        if (p.dims[d] > 1 && p.strides[op][d] == 1)
            return true;
    return false;
}

/// `p` with the inputs in `mask` read from copies dense in dst's memory
/// order (an input with no stride-1 dim: in its own): over each input's
/// own dims (1 where it is broadcast), the dims ordered by dst's (the
/// input's) strides (ties: the logical order), the last fastest. With bit
/// op_dst, dst too, written to such a buffer.
inline si::select_nd staged_model_problem(const si::select_nd &p,
                                          unsigned mask) {
    si::select_nd q = p;
    for (int i = 0; i < si::n_operands; ++i) {
        if (!((mask >> i) & 1))
            continue;
        const int by =
                i == si::op_dst || model_unit_stride(p, i) ? si::op_dst : i;
        std::vector<int> order(static_cast<size_t>(p.ndims));
        for (int d = 0; d < p.ndims; ++d)
            order[static_cast<size_t>(d)] = d;
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
            return p.strides[by][a] > p.strides[by][b];
        });
        int64_t acc = 1;
        for (size_t k = order.size(); k-- > 0;) {
            const int d = order[k];
            q.strides[i][d] = p.strides[i][d] == 0 ? 0 : acc;
            acc *= p.strides[i][d] == 0 ? 1 : p.dims[d];
        }
    }
    return q;
}

/// The fold expected for `p`: as it folds where a JIT kernel runs that,
/// but for small inputs staged where that transposes fewer bytes
/// (src/dispatch.cpp, staged_inputs); else with inputs staged: among the inputs
/// whose smallest stride along a dim larger than 1 is 1 (or, copied by the
/// stepped kernel, 2 to 255), the set of the fewest bytes (then the lowest
/// mask) whose staging makes the problem JIT-able without the stepped
/// kernel; else, for a dst with no stride-1 dim, with dst staged too
/// (src/dispatch.cpp, plan_select) where the copy into dst is JIT-able.
inline fold_model expected_fold(const si::select_nd &p) {
    fold_model best = expected_fold_unstaged(p);
    if (p.nelems() == 0 || (best.jit && best.cost <= 0))
        return best;
    int64_t bytes[3] = {};
    unsigned stageable = 0;
    for (int i = 0; i < 3; ++i) {
        int64_t elems = 1, least = 0;
        for (int d = 0; d < p.ndims; ++d) {
            if (p.strides[i][d] != 0)
                elems *= p.dims[d];
            if (p.dims[d] > 1 && p.strides[i][d] != 0
                && (!least || p.strides[i][d] < least))
                least = p.strides[i][d];
        }
        if (least >= 1 && least <= 255)
            stageable |= 1u << i;
        bytes[i] = elems * (i == si::op_cond ? 1 : p.elem_size);
    }
    // Unstaged, a fold that transposes (unstaged.jit): small inputs
    // (together at most a sixteenth of dst's bytes) staged where the
    // staged problem's fold transposes fewer bytes per element (the
    // fewest; then the fewest bytes staged, then the lowest mask).
    const fold_model unstaged = best;
    int64_t best_bytes = -1;
    for (unsigned mask = 1; mask < 8; ++mask) {
        if ((mask & stageable) != mask)
            continue;
        int64_t b = 0;
        for (int i = 0; i < 3; ++i)
            b += (mask >> i) & 1 ? bytes[i] : 0;
        if (unstaged.jit ? 16 * b > p.nelems() * p.elem_size
                         : best_bytes >= 0 && b >= best_bytes)
            continue;
        fold_model m = expected_fold_unstaged(staged_model_problem(p, mask));
        if (!m.jit || m.step)
            continue;
        if (unstaged.jit
            && (m.gathered || m.cost >= unstaged.cost
                || (best_bytes >= 0
                    && (m.cost > best.cost
                        || (m.cost == best.cost && b >= best_bytes)))))
            continue;
        m.staged = mask;
        best = m;
        best_bytes = b;
    }
    if (unstaged.jit || best.jit || model_unit_stride(p, si::op_dst))
        return best;
    // dst with a step staged last: the problem with dst dense in its own
    // order (inputs staged as it needs), where the copy from that buffer
    // into dst runs a kernel too.
    const unsigned dst_bit = 1u << si::op_dst;
    const si::select_nd q = staged_model_problem(p, dst_bit);
    fold_model m = expected_fold(q);
    si::select_nd c = q;
    for (int d = 0; d < p.ndims; ++d) {
        c.strides[si::op_cond][d] = c.strides[si::op_src1][d] = 0;
        c.strides[si::op_src0][d] = q.strides[si::op_dst][d];
        c.strides[si::op_dst][d] = p.strides[si::op_dst][d];
    }
    if (m.jit && expected_fold_unstaged(c).jit) {
        m.staged |= dst_bit;
        return m;
    }
    return best;
}

/// Is the JIT expected for `p` (with a JIT ISA in force)?
inline bool expect_jit_able(const si::select_nd &p) {
    return expected_fold(p).jit;
}

/// kernel_key::row_pitch and row_len as select_kernel.hpp documents them,
/// for the fold `f` of `p`'s plan, into `k` (isa, elem_size and the roles
/// set): AVX-512 or AVX2 with regular stores and a vector cond and src_0,
/// no operand transposed, dst a vector along the rows, two rows or more.
/// Rows of n elements shorter than the one pitch (in elements) at which
/// every operand that moves along them lies, a pitch of at most a
/// vector's lanes (64 bytes; AVX2 32 bytes, the pitch dividing them):
/// row_pitch and row_len; else rows of fewer than 32 bytes: row_len alone;
/// else neither.
inline void expected_row_len(const si::select_folded &f, bool nt,
                             si::kernel_key &k) {
    const int nd = f.ndims;
    const bool avx512 = k.isa == si::kernel_isa::avx512_core;
    if ((!avx512 && k.isa != si::kernel_isa::avx2) || nt || nd < 2
        || k.cond_scalar || k.src0_scalar
        || f.mode[si::op_dst] != si::inner_mode::vector || f.dims[nd - 2] < 2)
        return;
    const int64_t n = f.inner();
    int64_t pitch = -1;
    bool shared = true;
    // With transposed inputs (read from a scratch whose rows lie n apart),
    // short rows only where some other operand's rows do not lie back to
    // back (nor are one row for all, nor 0-D), or the rows come in groups.
    bool flat = !f.group;
    for (int i = 0; i < si::n_operands; ++i) {
        const int64_t s = f.strides[i][nd - 2];
        const int64_t w = i == si::op_cond ? 1 : f.elem_size;
        if (f.mode[i] == si::inner_mode::transposed)
            continue;
        if (s != 0 && !(f.mode[i] == si::inner_mode::vector && s == n * w))
            flat = false;
        if (f.mode[i] == si::inner_mode::scalar && s == 0)
            continue;
        if (f.mode[i] != si::inner_mode::vector || s <= 0 || s % w != 0
            || (pitch >= 0 && s / w != pitch))
            shared = false;
        pitch = s / w;
    }
    const int64_t lanes = (avx512 ? 64 : 32) / f.elem_size;
    // AVX-512 any pitch up to a vector; AVX2 pitches dividing the lanes.
    if (n < 1)
        return;
    if (f.has_transposed()) {
        if (flat)
            return;
        // In tiles, the padded rows' stream where each transposed input's
        // scratch can take the pitch: the transposing kernel this CPU's
        // tuning picks for it packs a row's columns at that pitch
        // (transpose_packs_gaps), and the fold has no pieces.
        bool padded = shared && pitch > n && pitch <= lanes && !f.piece
                      && (avx512 || lanes % pitch == 0);
        for (int i = 0; i < si::op_dst && padded; ++i) {
            if (f.mode[i] != si::inner_mode::transposed)
                continue;
            const int w = i == si::op_cond ? 1 : f.elem_size;
            const si::transpose_key tk = si::tuned_transpose_key(
                    si::transpose_kernel_isa(k.isa, i, w, f.dims[nd - 2], n,
                                             si::tiles_may_stream(f),
                                             f.strides[i][nd - 1], false,
                                             si::this_cpu_tuning()),
                    w, false);
            padded = si::transpose_packs_gaps(tk, n, pitch);
        }
        if (padded) {
            k.row_pitch = static_cast<uint8_t>(pitch);
            k.row_len = static_cast<uint8_t>(n);
        } else if (n * f.elem_size < 32) {
            k.row_len = static_cast<uint8_t>(n);
        }
        return;
    }
    if (shared && pitch > n && pitch <= lanes
        && (avx512 || lanes % pitch == 0)) {
        k.row_pitch = static_cast<uint8_t>(pitch);
        k.row_len = static_cast<uint8_t>(n);
    } else if (n * f.elem_size < 32) {
        k.row_len = static_cast<uint8_t>(n);
    }
}

/// The kernel key the dispatcher must pick for `p` (documented in
/// select_kernel.hpp: scalar sources move to the src_1 slot when cond is a
/// vector, with the cond inverted).
inline si::kernel_key expected_key(const si::select_nd &p, si::kernel_isa isa,
                                   bool nt) {
    si::kernel_key k {};
    k.isa = isa;
    k.elem_size = static_cast<uint8_t>(p.elem_size);
    const int d = expected_fold(p).inner;
    auto scalar = [&](int op) { return d >= 0 && p.strides[op][d] == 0; };
    k.cond_scalar = scalar(si::op_cond);
    k.src0_scalar = scalar(si::op_src0);
    k.src1_scalar = scalar(si::op_src1);
    if (!k.cond_scalar && k.src0_scalar && !k.src1_scalar) {
        k.invert_cond = 1;
        k.src0_scalar = 0;
        k.src1_scalar = 1;
    }
    k.unroll = 4;
    k.nt_stores = nt ? 1 : 0;
    const fold_model m = expected_fold(p);
    if (m.step) {
        // The stepped kernel: the stepped source in the src_0 slot, one
        // kernel with regular stores.
        k.cond_scalar = 1;
        k.src0_scalar = 0;
        k.src1_scalar = 1;
        k.invert_cond = m.step_op == si::op_src1 ? 1 : 0;
        k.unroll = 1;
        k.nt_stores = 0;
        k.src0_step = static_cast<uint8_t>(m.step);
        return k;
    }
    // The fold the plan's kernel runs: the staged problem's where inputs
    // are staged.
    const unsigned staged = expected_fold(p).staged;
    si::select_folded f =
            si::fold_select(staged ? staged_model_problem(p, staged) : p);
    // An input scalar along rows of at most 32 bytes of dst, changing
    // along the dim the row kernel walks (in tiles the tile dim; not with
    // dst transposed): read as a vector from the buffer (or the tile's
    // scratch) it is expanded into, rows back to back, with a scalar
    // source then in the src_1 slot. cond always; a source only without
    // tiles, in rows of 2 elements or more, not of 16 bytes. Where every
    // operand not expanded has its rows back to back, or is one element for all
    // (a gathered input's or a scattered dst's do not count), the rows merge,
    // so no short-row kernel.
    const int fd = f.ndims;
    const bool sources = isa != si::kernel_isa::ref;
    bool expands[3] = {};
    bool any = false;
    for (int i = 0; i < 3; ++i) {
        expands[i] = fd >= 2 && f.mode[si::op_dst] != si::inner_mode::transposed
                     && f.mode[i] == si::inner_mode::scalar
                     && f.strides[i][fd - 2] != 0
                     && f.inner() * f.elem_size <= 32
                     && (i == si::op_cond
                         || (sources && !f.has_transposed() && f.inner() >= 2
                             && f.inner() * f.elem_size != 16));
        any = any || expands[i];
    }
    bool merged = any;
    for (int i = 0; i < si::n_operands && merged; ++i) {
        if (i < 3 && expands[i])
            continue;
        const int64_t st = f.strides[i][fd - 2];
        const int64_t w = i == si::op_cond ? 1 : f.elem_size;
        merged = (f.mode[i] == si::inner_mode::vector && st == f.inner() * w)
                 || (f.mode[i] == si::inner_mode::scalar && st == 0);
    }
    if (any) {
        k.cond_scalar = scalar(si::op_cond) && !expands[si::op_cond];
        k.src0_scalar = scalar(si::op_src0) && !expands[si::op_src0];
        k.src1_scalar = scalar(si::op_src1) && !expands[si::op_src1];
        k.invert_cond = 0;
        if (!k.cond_scalar && k.src0_scalar && !k.src1_scalar) {
            k.invert_cond = 1;
            k.src0_scalar = 0;
            k.src1_scalar = 1;
        }
        for (int i = 0; i < 3; ++i) {
            if (!expands[i])
                continue;
            f.mode[i] = si::inner_mode::vector;
            int64_t acc = i == si::op_cond ? 1 : f.elem_size;
            for (int dd = fd - 1; dd >= 0; --dd) {
                f.strides[i][dd] = acc;
                acc *= f.dims[dd];
            }
        }
    }
    // A gathered input (a scattered dst) reaches the row kernel as a
    // vector, its rows back to back in its buffer.
    for (int i = 0; i < 4; ++i)
        if (f.mode[i] == si::inner_mode::strided && !f.has_transposed()) {
            f.mode[i] = si::inner_mode::vector;
            int64_t acc = i == si::op_cond ? 1 : f.elem_size;
            for (int dd = f.ndims - 1; dd >= 0; --dd) {
                f.strides[i][dd] = acc;
                acc *= f.dims[dd];
            }
        }
    if (!merged)
        expected_row_len(f, nt, k);
    return k;
}

/// Checks that a plan really takes the JIT path of `isa` (or the reference
/// when `want_jit` is false), so that a silent fallback cannot pass.
inline ::testing::AssertionResult
plan_takes(const si::select_plan &plan, si::kernel_isa isa, bool want_jit) {
    if (!want_jit) {
        if (plan.kernel || plan.kernel_nt || plan.isa != si::kernel_isa::ref)
            return ::testing::AssertionFailure()
                   << "expected the reference kernel, the plan has "
                   << plan.impl_str() << " " << plan.kernel_str();
        return ::testing::AssertionSuccess();
    }
    if (!plan.kernel)
        return ::testing::AssertionFailure()
               << "expected a JIT kernel of " << si::kernel_isa2str(isa)
               << ", the plan fell back to " << plan.impl_str();
    const std::string prefix = std::string(si::kernel_isa2str(isa)) + "_e";
    if (plan.isa != isa || plan.kernel->key().isa != isa
        || plan.kernel->name().compare(0, prefix.size(), prefix) != 0
        || plan.kernel->fn() == nullptr)
        return ::testing::AssertionFailure()
               << "expected a JIT kernel of " << si::kernel_isa2str(isa)
               << ", the plan has " << plan.impl_str() << " "
               << plan.kernel_str();
    return ::testing::AssertionSuccess();
}

/// Buffers of one problem: inputs with random data and special values,
/// dst pre-filled with random bits (so a missing store shows).
struct nd_buffers {
    canary_buf cond, src0, src1, dst;
    nd_buffers(const si::select_nd &p, std::mt19937_64 &g, size_t mis0 = 0,
               size_t mis1 = 0, size_t misd = 0, size_t misc = 0)
        : cond(span_bytes(p, si::op_cond), misc)
        , src0(span_bytes(p, si::op_src0), mis0)
        , src1(span_bytes(p, si::op_src1), mis1)
        , dst(span_bytes(p, si::op_dst), misd) {
        fill_cond(cond.data(), cond.size(), g);
        fill_values(src0.data(), src0.size() / p.elem_size, p.elem_size, g);
        fill_values(src1.data(), src1.size() / p.elem_size, p.elem_size, g);
        fill_bytes(dst.data(), dst.size(), g);
    }
    ::testing::AssertionResult canaries_ok() const {
        const canary_buf *b[4] = { &cond, &src0, &src1, &dst };
        const char *names[4] = { "cond", "src_0", "src_1", "dst" };
        for (int i = 0; i < 4; ++i) {
            auto r = b[i]->canaries_ok();
            if (!r)
                return r << " (" << names[i] << ")";
        }
        return ::testing::AssertionSuccess();
    }
};

/// The most lines (columns) one call of an input's transposing kernel
/// moves in fold `f`: a piece's where the fold has pieces, else the row's
/// (transpose_kernel_isa's `lines`).
inline int64_t call_lines(const si::select_folded &f) {
    return f.piece ? f.piece : f.dims[f.ndims - 1];
}

/// The ISA of the non-temporal kernel that transposes the dst of `plan`
/// (planned for `isa`): transpose_kernel_isa's choice for dst's folded line
/// stride, on this CPU.
inline si::kernel_isa dst_nt_transpose_isa(const si::select_plan &plan,
                                           si::kernel_isa isa) {
    const si::select_folded &f = plan.folded;
    return si::transpose_kernel_isa(isa, si::op_dst, f.elem_size,
                                    f.dims[f.ndims - 2], call_lines(f), false,
                                    f.strides[si::op_dst][f.ndims - 1], true,
                                    si::this_cpu_tuning());
}

/// That kernel's name.
inline std::string dst_nt_transpose_name(const si::select_plan &plan,
                                         si::kernel_isa isa) {
    return si::transpose_kernel_name(
            { dst_nt_transpose_isa(plan, isa),
              static_cast<uint8_t>(plan.folded.elem_size), 1 });
}

/// The override that forces store kind `k`.
inline si::store_override store_override_of(si::store_kind k) {
    return static_cast<si::store_override>(1 + static_cast<int>(k));
}

/// Runs `run(k)` (an execute forcing store kind k, and its checks) for
/// each of the plan's kinds beyond regular and nt (regular_transpose and
/// nt_transpose: a transposed dst stored by its transposes from the
/// scratch; nt_prefetch: the row kernel that prefetches rows ahead), dst
/// (`init.size()` bytes) first set back to `init`; the first failure,
/// naming its kind.
template <typename Run>
::testing::AssertionResult
over_other_kinds(const si::select_plan &plan, uint8_t *dst,
                 const std::vector<uint8_t> &init, Run run) {
    for (const si::store_kind k :
         { si::store_kind::regular_transpose, si::store_kind::nt_transpose,
           si::store_kind::nt_prefetch }) {
        if (!(plan.store_kinds() & si::store_kind_bit(k)))
            continue;
        if (!init.empty())
            std::memcpy(dst, init.data(), init.size());
        ::testing::AssertionResult r = run(k);
        if (!r)
            return r << " (stores " << si::store_kind_name(k) << ")";
    }
    return ::testing::AssertionSuccess();
}

/// Runs `p` through plan_select + execute_plan with the ISA in force and
/// compares with impl::ref_select (and the naive oracle) bit for bit,
/// including dst's gaps and the canaries. `working_set` decides the nt
/// variant; `in_place` makes dst the src_0 buffer (strides must match).
struct plan_run_opts {
    size_t working_set = 0;
    int nthreads = 1;
    bool in_place = false;
    size_t mis0 = 0, mis1 = 0, misd = 0, misc = 0;
    bool check_naive = true;
};

inline ::testing::AssertionResult run_plan_case(const si::select_nd &p,
                                                si::kernel_isa isa,
                                                const plan_run_opts &o,
                                                std::mt19937_64 &g) {
    const si::select_plan plan = si::plan_select(p, o.working_set);
    // A plan with a non-temporal kernel runs it (the store policy would
    // start with regular stores).
    const si::store_override stores =
            plan.has_nt() ? si::store_override::nt : si::store_override::none;
    const bool want_jit = isa != si::kernel_isa::ref && expect_jit_able(p);
    if (p.nelems() > 0) {
        auto r = plan_takes(plan, isa, want_jit);
        if (!r)
            return r;
        if (want_jit) {
            // A transposed dst is stored by its transpose: the transpose
            // has the nt variant, the row kernel none.
            const bool big = o.working_set >= si::nt_candidate_bytes();
            const bool dst_tr = expected_fold(p).dst_transposed;
            // Kernels for one row length (padded short rows, short rows)
            // and the stepped kernel have no nt variant.
            // A scattered dst: regular stores.
            const si::kernel_key k0 = expected_key(p, isa, false);
            const bool want_nt = big && !dst_tr && !k0.row_len && !k0.src0_step
                                 && !expected_fold(p).scattered;
            if ((big && dst_tr) != (plan.transpose_dst_nt != nullptr))
                return ::testing::AssertionFailure()
                       << "working set " << o.working_set << " vs threshold "
                       << si::nt_candidate_bytes() << ", dst transposed "
                       << dst_tr << " but transpose_dst_nt is "
                       << (plan.transpose_dst_nt ? plan.transpose_dst_nt->name()
                                                 : "null");
            unsigned staged = 0;
            for (const auto &st : plan.staged)
                staged |= 1u << st.op;
            if (staged != expected_fold(p).staged)
                return ::testing::AssertionFailure()
                       << "staged inputs " << staged << ", expected "
                       << expected_fold(p).staged << ": " << plan.kernel_str();
            if (plan.kernel->key() != expected_key(p, isa, false))
                return ::testing::AssertionFailure()
                       << "kernel " << plan.kernel->name() << ", expected "
                       << si::kernel_name(expected_key(p, isa, false));
            if (want_nt != static_cast<bool>(plan.kernel_nt))
                return ::testing::AssertionFailure()
                       << "working set " << o.working_set << " vs threshold "
                       << si::nt_candidate_bytes() << " but kernel_nt is "
                       << (plan.kernel_nt ? plan.kernel_nt->name() : "null");
            if (want_nt && plan.kernel_nt->key() != expected_key(p, isa, true))
                return ::testing::AssertionFailure()
                       << "nt kernel " << plan.kernel_nt->name()
                       << ", expected "
                       << si::kernel_name(expected_key(p, isa, true));
        }
    }
    nd_buffers b(p, g, o.mis0, o.mis1, o.misd, o.misc);
    const size_t dbytes = b.dst.size();
    std::vector<uint8_t> want(b.dst.data(), b.dst.data() + dbytes);
    if (o.in_place) {
        // dst is the src_0 buffer: the expected values come from a copy.
        if (dbytes)
            std::memcpy(want.data(), b.src0.data(), dbytes);
        std::vector<uint8_t> src0_copy(want);
        si::ref_select(p, b.cond.data(), src0_copy.data(), b.src1.data(),
                       want.data(), 1);
        si::execute_plan(plan, p, b.cond.data(), b.src0.data(), b.src1.data(),
                         b.src0.data(), o.nthreads, stores);
        auto r = bytes_equal(b.src0.data(), want.data(), dbytes, p.elem_size);
        if (!r)
            return r << " (in place)";
        return b.canaries_ok();
    }
    si::ref_select(p, b.cond.data(), b.src0.data(), b.src1.data(), want.data(),
                   1);
    if (o.check_naive) {
        std::vector<uint8_t> naive(b.dst.data(), b.dst.data() + dbytes);
        naive_select(p, b.cond.data(), b.src0.data(), b.src1.data(),
                     naive.data());
        auto r = bytes_equal(want.data(), naive.data(), dbytes, p.elem_size);
        if (!r)
            return r << " (ref_select vs the naive oracle)";
    }
    // Before any execute, dst holds random bits (its gaps must survive).
    const std::vector<uint8_t> init(b.dst.data(), b.dst.data() + dbytes);
    si::execute_plan(plan, p, b.cond.data(), b.src0.data(), b.src1.data(),
                     b.dst.data(), o.nthreads, stores);
    auto r = bytes_equal(b.dst.data(), want.data(), dbytes, p.elem_size);
    if (!r)
        return r;
    r = b.canaries_ok();
    // The plan's other store kinds: a transposed dst that kernel_dt writes
    // also by dst's transposes from the scratch; rows that lie apart also
    // by the row kernel that prefetches rows ahead.
    if (!r)
        return r;
    return over_other_kinds(plan, b.dst.data(), init, [&](si::store_kind k) {
        si::execute_plan(plan, p, b.cond.data(), b.src0.data(), b.src1.data(),
                         b.dst.data(), o.nthreads, store_override_of(k));
        auto rk = bytes_equal(b.dst.data(), want.data(), dbytes, p.elem_size);
        return rk ? b.canaries_ok() : rk;
    });
}

/// Runs `plan` over `p` with dst aligned and misaligned by `misd` bytes,
/// at 1 and 2 threads (the non-temporal variants forced where `nt`), each
/// time into a dst of random bits: dst (dense, every byte written) against
/// ref_select bit for bit, the canaries, then `ran_ok(ran, misd)` on what
/// executed. The first failure, naming the thread count and misalignment.
template <typename RanOk>
::testing::AssertionResult
run_plan_aligned_or_not(const si::select_plan &plan, const si::select_nd &p,
                        bool nt, size_t misd, std::mt19937_64 &g,
                        RanOk ran_ok) {
    for (size_t mis : { size_t(0), misd }) {
        nd_buffers b(p, g, 0, 0, mis);
        std::vector<uint8_t> want(b.dst.size());
        si::ref_select(p, b.cond.data(), b.src0.data(), b.src1.data(),
                       want.data(), 1);
        for (int nthr : { 1, 2 }) {
            fill_bytes(b.dst.data(), b.dst.size(), g);
            const si::executed ran = si::execute_plan(
                    plan, p, b.cond.data(), b.src0.data(), b.src1.data(),
                    b.dst.data(), nthr,
                    nt ? si::store_override::nt : si::store_override::none);
            const std::string at = " (nthreads " + std::to_string(nthr)
                                   + ", dst misaligned by "
                                   + std::to_string(mis) + ")";
            auto r = bytes_equal(b.dst.data(), want.data(), b.dst.size(),
                                 p.elem_size);
            if (!r)
                return r << at;
            r = b.canaries_ok();
            if (!r)
                return r << at;
            r = ran_ok(ran, mis);
            if (!r)
                return r << at;
        }
    }
    return ::testing::AssertionSuccess();
}

/// Places the operands of `p` against the guard pages (ending at one, or
/// starting after one), runs `plan` on `nthreads` and compares dst (its
/// whole span, gaps included) with what `oracle` writes into a copy of the
/// same dst bytes. A stray access crashes the test.
template <typename Oracle>
::testing::AssertionResult
run_against_guards(guard_set &gs, const si::select_nd &p,
                   const si::select_plan &plan, bool at_end, int nthreads,
                   const Oracle &oracle) {
    const void *ptr[4];
    for (int op = 0; op < 4; ++op)
        ptr[op] = gs.place(op, span_bytes(p, op), at_end);
    auto *dst = static_cast<uint8_t *>(const_cast<void *>(ptr[si::op_dst]));
    const size_t dbytes = span_bytes(p, si::op_dst);
    const std::vector<uint8_t> init(dst, dst + dbytes);
    std::vector<uint8_t> want(init);
    oracle(p, ptr[0], ptr[1], ptr[2], want.data());
    si::execute_plan(plan, p, ptr[0], ptr[1], ptr[2], dst, nthreads,
                     plan.has_nt() ? si::store_override::nt
                                   : si::store_override::none);
    auto r = bytes_equal(dst, want.data(), dbytes, p.elem_size);
    // The plan's other store kinds: dst's transposes in place of kernel_dt,
    // the row kernel that prefetches rows ahead.
    if (!r)
        return r;
    return over_other_kinds(plan, dst, init, [&](si::store_kind k) {
        si::execute_plan(plan, p, ptr[0], ptr[1], ptr[2], dst, nthreads,
                         store_override_of(k));
        return bytes_equal(dst, want.data(), dbytes, p.elem_size);
    });
}

/// run_against_guards with ref_select as the oracle.
inline ::testing::AssertionResult run_guarded(guard_set &gs,
                                              const si::select_nd &p,
                                              const si::select_plan &plan,
                                              bool at_end, int nthreads) {
    return run_against_guards(
            gs, p, plan, at_end, nthreads,
            [](const si::select_nd &q, const void *c, const void *a,
               const void *b, void *d) { si::ref_select(q, c, a, b, d, 1); });
}

/// `p` by `plan` against the guards at either end: 1 and 3 threads at the
/// start, 2 and 3 at the end; failures count into `fails` (KT_EXPECT).
inline void run_guarded_1_to_3(int &fails, guard_set &gs,
                               const si::select_nd &p,
                               const si::select_plan &plan,
                               const std::string &desc) {
    for (bool at_end : { true, false })
        for (int nthr : { at_end ? 2 : 1, 3 })
            KT_EXPECT(fails, run_guarded(gs, p, plan, at_end, nthr),
                      desc + (at_end ? " at end" : " at begin") + " nthreads "
                              + std::to_string(nthr));
}

/// `p` by `plan` in guard regions of its own, as long as its longest
/// operand and filled at random: run_guarded_1_to_3.
inline void run_guarded_1_to_3(int &fails, const si::select_nd &p,
                               const si::select_plan &plan,
                               const std::string &desc, std::mt19937_64 &g) {
    size_t bytes = 0;
    for (int op = 0; op < si::n_operands; ++op)
        bytes = std::max(bytes, span_bytes(p, op));
    guard_set gs(bytes);
    if (!gs.ok()) {
        KT_EXPECT(fails,
                  ::testing::AssertionFailure() << "mmap/mprotect failed",
                  desc);
        return;
    }
    gs.fill(g, bytes);
    run_guarded_1_to_3(fails, gs, p, plan, desc);
}

/// Calls a generated kernel (`void kernel(const Args *)`) with the System V
/// callee-saved registers set to known values and records them, and rsp, after
/// the call: a generated kernel must preserve rbx, rbp, r12-r15 and the stack
/// pointer.
template <typename KernelFn, typename Args>
class callee_saved_harness : public Xbyak::CodeGenerator {
public:
    static constexpr uint64_t magic[6] = {
        0x1111222233334444ull, 0x5555666677778888ull, 0x9999aaaabbbbccccull,
        0xddddeeeeffff0000ull, 0x0123456789abcdefull, 0xfedcba9876543210ull
    };
    /// out[0..5]: rbx, rbp, r12..r15 after the call; out[6], out[7]: rsp
    /// before and after.
    using fn_t = void (*)(KernelFn, const Args *, uint64_t *out);

    callee_saved_harness()
        : CodeGenerator(4096, Xbyak::DontSetProtectRWE) {
        using namespace Xbyak;
        const Reg64 saved[6] = { rbx, rbp, r12, r13, r14, r15 };
        for (const auto &r : saved)
            push(r);
        sub(rsp, 8); // 16-byte alignment at the call; the slot holds out
        mov(ptr[rsp], rdx);
        mov(rax, rdi);
        mov(rdi, rsi);
        for (int i = 0; i < 6; ++i)
            mov(saved[i], magic[i]);
        mov(ptr[rdx + 48], rsp);
        call(rax);
        mov(rax, ptr[rsp]);
        for (int i = 0; i < 6; ++i)
            mov(ptr[rax + 8 * i], saved[i]);
        mov(ptr[rax + 56], rsp);
        add(rsp, 8);
        for (int i = 5; i >= 0; --i)
            pop(saved[i]);
        ret();
        ready();
        setProtectModeRE(); // W^X for the harness too
    }
    fn_t get() const { return getCode<fn_t>(); }

    /// What a call through get() recorded in `out`: rbx, rbp, r12-r15 and
    /// rsp as they were, or which one `kernel` changed.
    static ::testing::AssertionResult preserved(const uint64_t out[8],
                                                const std::string &kernel) {
        const char *names[6] = { "rbx", "rbp", "r12", "r13", "r14", "r15" };
        for (int i = 0; i < 6; ++i)
            if (out[i] != magic[i])
                return ::testing::AssertionFailure()
                       << names[i] << " clobbered by " << kernel;
        if (out[6] != out[7])
            return ::testing::AssertionFailure() << "rsp changed by " << kernel;
        return ::testing::AssertionSuccess();
    }
};

/// The arguments of one direct kernel call on the operands at `ptr`
/// (cond, src_0, src_1, dst): `rows` rows of `n`, the inputs' row strides
/// and dst's in bytes, a fence at the end.
inline si::select_call_args call_args(const void *const *ptr, int64_t n,
                                      int64_t rows, int64_t cond_stride,
                                      int64_t src0_stride, int64_t src1_stride,
                                      int64_t dst_stride) {
    si::select_call_args a {};
    a.cond = ptr[0];
    a.src0 = ptr[1];
    a.src1 = ptr[2];
    a.dst = const_cast<void *>(ptr[3]);
    a.n = static_cast<uint64_t>(n);
    a.rows = static_cast<uint64_t>(rows);
    a.cond_stride = cond_stride;
    a.src0_stride = src0_stride;
    a.src1_stride = src1_stride;
    a.dst_stride = dst_stride;
    a.fence = 1;
    return a;
}

/// The four operands of a direct kernel call, `bytes(op)` each, in buffers
/// of their own starting a cache line (the nt variants' dst): cond as
/// 0/1 bytes, the others random bytes.
struct aligned_operands {
    std::vector<uint8_t> buf[4];
    const void *ptr[4] = {};

    template <typename Bytes>
    aligned_operands(Bytes bytes, std::mt19937_64 &g) {
        for (int op = 0; op < 4; ++op) {
            const size_t n = bytes(op);
            buf[op].resize(n + 64);
            auto *p = buf[op].data();
            p += (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64;
            if (op == 0)
                fill_cond(p, n, g);
            else
                fill_bytes(p, n, g);
            ptr[op] = p;
        }
    }
};

// ---------------------------------------------------------------------------
// The kernel ABI.

/// One direct kernel call: rows x n, byte strides, and the select_nd that
/// ref_select runs as its oracle.
struct abi_case {
    si::kernel_key key {};
    uint64_t n = 1, rows = 1;
    int64_t stride[4] = { 0, 0, 0, 0 }; // bytes, per operand
    uint64_t elem_tail = 0;             // select_call_args::elem_tail
    uint64_t pf_rows = 0;               // select_call_args::pf_rows

    int w() const { return key.elem_size; }
    bool scalar(int op) const {
        return op == si::op_cond   ? key.cond_scalar != 0
               : op == si::op_src0 ? key.src0_scalar != 0
               : op == si::op_src1 ? key.src1_scalar != 0
                                   : false;
    }
    int esize(int op) const { return op == si::op_cond ? 1 : w(); }
    /// Bytes one operand spans.
    size_t bytes(int op) const {
        const size_t row = scalar(op) ? esize(op) : n * esize(op);
        return static_cast<size_t>(rows - 1) * static_cast<size_t>(stride[op])
               + row;
    }
    /// The call's arguments over the four operands' bytes.
    si::select_call_args args(const void *cond, const void *src0,
                              const void *src1, void *dst) const {
        si::select_call_args a {};
        a.cond = cond;
        a.src0 = src0;
        a.src1 = src1;
        a.dst = dst;
        a.n = n;
        a.rows = rows;
        a.cond_stride = stride[0];
        a.src0_stride = stride[1];
        a.src1_stride = stride[2];
        a.dst_stride = stride[3];
        a.elem_tail = elem_tail;
        a.pf_rows = pf_rows;
        return a;
    }
    /// The problem as ref_select sees it: [rows, n]; with invert_cond the
    /// kernel's src_0 is taken where cond is zero, i.e. the nd's src_1.
    si::select_nd nd() const {
        si::select_nd p;
        p.ndims = 2;
        p.dims[0] = static_cast<int64_t>(rows);
        p.dims[1] = static_cast<int64_t>(n);
        p.elem_size = w();
        const int map[4] = { si::op_cond,
                             key.invert_cond ? si::op_src1 : si::op_src0,
                             key.invert_cond ? si::op_src0 : si::op_src1,
                             si::op_dst };
        for (int op = 0; op < 4; ++op) {
            p.strides[map[op]][0] = rows > 1 ? stride[op] / esize(op) : 0;
            p.strides[map[op]][1] = scalar(op) ? 0 : 1;
        }
        return p;
    }
    std::string str() const {
        std::ostringstream os;
        os << si::kernel_name(key) << " n=" << n << " rows=" << rows
           << " strides(bytes)=" << stride[0] << "," << stride[1] << ","
           << stride[2] << "," << stride[3] << " elem_tail=" << elem_tail
           << " pf_rows=" << pf_rows;
        return os.str();
    }
};

/// Calls `fn` (or, for a null fn, ref_select on the nd) on the given
/// pointers and compares dst with ref_select bit for bit. `dst` must hold
/// the same bytes as `dst_init` on entry.
inline ::testing::AssertionResult
run_abi_case(const abi_case &c, si::select_kernel_fn fn, const void *cond,
             const void *src0, const void *src1, void *dst) {
    const size_t dbytes = c.bytes(si::op_dst);
    std::vector<uint8_t> want(static_cast<uint8_t *>(dst),
                              static_cast<uint8_t *>(dst) + dbytes);
    const si::select_nd p = c.nd();
    const void *a = c.key.invert_cond ? src1 : src0;
    const void *b = c.key.invert_cond ? src0 : src1;
    si::ref_select(p, cond, a, b, want.data(), 1);
    if (fn) {
        const si::select_call_args args = c.args(cond, src0, src1, dst);
        fn(&args);
    } else {
        // The reference ISA: the reference kernel itself, checked against
        // the naive oracle.
        std::vector<uint8_t> naive(want.size());
        std::memcpy(naive.data(), dst, dbytes);
        naive_select(p, cond, a, b, naive.data());
        si::ref_select(p, cond, a, b, dst, 1);
        auto r = bytes_equal(dst, naive.data(), dbytes, c.w());
        if (!r)
            return r << " (ref_select vs the naive oracle)";
    }
    return bytes_equal(dst, want.data(), dbytes, c.w());
}

} // namespace selgraph_test

#endif
