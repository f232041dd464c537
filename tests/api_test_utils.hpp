// Helpers shared by the API tests (test_api_*.cpp): building Select graphs,
// error assertions that check status and message, buffers with sentinels,
// and an independent naive implementation of the Select broadcast rules
// (written from the oneDNN/OpenVINO specs, not from the library's code).
#ifndef SELGRAPH_TESTS_API_TEST_UTILS_HPP
#define SELGRAPH_TESTS_API_TEST_UTILS_HPP

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "selgraph/selgraph.hpp"

namespace sgt {

using selgraph::logical_tensor;
using lt = selgraph::logical_tensor;
using dt = selgraph::logical_tensor::data_type;
using lyt = selgraph::logical_tensor::layout_type;
using dims = selgraph::logical_tensor::dims;
using selgraph::status;

inline const selgraph::engine &cpu_engine() {
    static const selgraph::engine eng(selgraph::engine::kind::cpu, 0);
    return eng;
}

inline selgraph::stream &cpu_stream() {
    static selgraph::stream strm(cpu_engine());
    return strm;
}

// Sizes and names written out from the type tables of oneDNN and DirectML,
// not taken from the library.
inline size_t elem_size(dt t) {
    switch (t) {
        case dt::f64:
        case dt::s64:
        case dt::u64: return 8;
        case dt::f32:
        case dt::s32:
        case dt::u32: return 4;
        case dt::bf16:
        case dt::f16:
        case dt::s16:
        case dt::u16: return 2;
        case dt::s8:
        case dt::u8:
        case dt::f8_e5m2:
        case dt::f8_e4m3:
        case dt::boolean: return 1;
        default: return 0;
    }
}

inline const char *dt_name(dt t) {
    switch (t) {
        case dt::undef: return "undef";
        case dt::f16: return "f16";
        case dt::bf16: return "bf16";
        case dt::f32: return "f32";
        case dt::s32: return "s32";
        case dt::s8: return "s8";
        case dt::u8: return "u8";
        case dt::f64: return "f64";
        case dt::boolean: return "boolean";
        case dt::f8_e5m2: return "f8_e5m2";
        case dt::f8_e4m3: return "f8_e4m3";
        case dt::s4: return "s4";
        case dt::u4: return "u4";
        case dt::s64: return "s64";
        case dt::u16: return "u16";
        case dt::s16: return "s16";
        case dt::u32: return "u32";
        case dt::u64: return "u64";
    }
    return "other";
}

// The data types Select takes for src_0, src_1 and dst.
inline const std::vector<dt> &all_select_types() {
    static const std::vector<dt> v = { dt::f64,     dt::s64,     dt::u64,
                                       dt::f32,     dt::s32,     dt::u32,
                                       dt::bf16,    dt::f16,     dt::s16,
                                       dt::u16,     dt::s8,      dt::u8,
                                       dt::f8_e5m2, dt::f8_e4m3, dt::boolean };
    return v;
}

inline std::string dims_str(const dims &d) {
    std::string s = "[";
    for (size_t i = 0; i < d.size(); ++i) {
        if (i)
            s += ",";
        s += std::to_string(d[i]);
    }
    return s + "]";
}

// ---------------------------------------------------------------------------
// Error assertions: the statement must throw selgraph::error with `st`, and
// what() must contain every substring.
inline void expect_error(const std::function<void()> &fn, status st,
                         const std::vector<std::string> &subs, const char *file,
                         int line, const char *text) {
    SCOPED_TRACE(testing::Message() << file << ":" << line << ": " << text);
    try {
        fn();
        ADD_FAILURE() << "expected selgraph::error(" << selgraph::status2str(st)
                      << "), nothing was thrown";
    } catch (const selgraph::error &e) {
        const std::string msg = e.what();
        EXPECT_EQ(e.status, st)
                << "got " << selgraph::status2str(e.status) << " instead of "
                << selgraph::status2str(st) << ": " << msg;
        for (const auto &s : subs)
            EXPECT_NE(msg.find(s), std::string::npos)
                    << "message lacks '" << s << "': " << msg;
    } catch (const std::exception &e) {
        ADD_FAILURE() << "expected selgraph::error, got std::exception: "
                      << e.what();
    } catch (...) {
        ADD_FAILURE() << "expected selgraph::error, got an unknown exception";
    }
}

#define EXPECT_SG_ERROR(stmt, st, ...)                                         \
    ::sgt::expect_error([&]() { stmt; }, st, { __VA_ARGS__ }, __FILE__,        \
                        __LINE__, #stmt)

// ---------------------------------------------------------------------------
// Graph construction.

// No axis attribute on the op.
constexpr int64_t no_axis = INT64_MIN;

inline selgraph::op make_select_op(size_t op_id, const lt &c, const lt &a,
                                   const lt &b, const lt &d,
                                   const char *bcast = nullptr,
                                   int64_t axis = no_axis) {
    selgraph::op o(op_id, selgraph::op::kind::Select, { c, a, b }, { d },
                   "select");
    if (bcast)
        o.set_attr(selgraph::op::attr::auto_broadcast, bcast);
    if (axis != no_axis)
        o.set_attr<int64_t>(selgraph::op::attr::axis, axis);
    return o;
}

// One Select op in a CPU graph, finalized; returns its only partition.
inline selgraph::partition select_partition(const lt &c, const lt &a,
                                            const lt &b, const lt &d,
                                            size_t op_id = 1,
                                            const char *bcast = nullptr,
                                            int64_t axis = no_axis) {
    selgraph::graph g(selgraph::engine::kind::cpu);
    g.add_op(make_select_op(op_id, c, a, b, d, bcast, axis));
    g.finalize();
    auto parts = g.get_partitions();
    if (parts.size() != 1)
        throw std::runtime_error("expected one partition");
    return parts[0];
}

// Compiles a Select whose declared logical tensors are the compile ones.
inline selgraph::compiled_partition compile_select(const lt &c, const lt &a,
                                                   const lt &b, const lt &d,
                                                   size_t op_id = 1,
                                                   const char *bcast = nullptr,
                                                   int64_t axis = no_axis) {
    return select_partition(c, a, b, d, op_id, bcast, axis)
            .compile({ c, a, b }, { d }, cpu_engine());
}

// ---------------------------------------------------------------------------
// Shapes and layouts, from the numpy rules.

inline dims dense_strides(const dims &d) {
    dims s(d.size());
    int64_t acc = 1;
    for (size_t i = d.size(); i-- > 0;) {
        s[i] = acc;
        acc *= std::max<int64_t>(d[i], 1);
    }
    return s;
}

inline int64_t num_elems(const dims &d) {
    int64_t n = 1;
    for (auto x : d)
        n *= x;
    return n;
}

// Elements spanned by a view (0 when empty).
inline int64_t span_elems(const dims &d, const dims &s) {
    int64_t span = 1;
    for (size_t i = 0; i < d.size(); ++i) {
        if (d[i] == 0)
            return 0;
        span += (d[i] - 1) * s[i];
    }
    return span;
}

// Numpy two-way broadcast; false when incompatible.
inline bool numpy_broadcast(const dims &a, const dims &b, dims &out) {
    const size_t r = std::max(a.size(), b.size());
    out.assign(r, 1);
    for (size_t k = 0; k < r; ++k) {
        // k counts from the right.
        const int64_t x = k < a.size() ? a[a.size() - 1 - k] : 1;
        const int64_t y = k < b.size() ? b[b.size() - 1 - k] : 1;
        if (x != y && x != 1 && y != 1)
            return false;
        out[r - 1 - k] = x == 1 ? y : x;
    }
    return true;
}

// One-way broadcast of cond to dst: never enlarges dst.
inline bool cond_fits(const dims &c, const dims &d) {
    if (c.size() > d.size())
        return false;
    for (size_t k = 0; k < c.size(); ++k) {
        const int64_t x = c[c.size() - 1 - k];
        const int64_t y = d[d.size() - 1 - k];
        if (x != y && x != 1)
            return false;
    }
    return true;
}

// ---------------------------------------------------------------------------
// Buffers: 64-byte aligned storage (plus an optional element offset) with a
// guard zone after the view, so that writes outside the view show.

struct buffer {
    std::vector<uint8_t> raw;
    size_t offset = 0; // bytes from raw.data() to the view's first byte
    size_t bytes = 0;  // view bytes + guard

    static constexpr size_t guard = 256;

    buffer() = default;
    buffer(size_t view_bytes, size_t misalign_bytes = 0) {
        bytes = view_bytes + guard;
        raw.assign(bytes + 64 + misalign_bytes, 0);
        const auto base = reinterpret_cast<uintptr_t>(raw.data());
        offset = ((64 - base % 64) % 64) + misalign_bytes;
    }
    uint8_t *data() { return raw.data() + offset; }
    const uint8_t *data() const { return raw.data() + offset; }
    void fill(uint8_t v) { std::memset(data(), v, bytes); }
};

// Independent naive Select: walks dst in row-major order and places each
// operand on dst (dim 1 = broadcast): right-aligned, or with its dim 0 on
// dst dim `at` (pdpd's axis; dims falling past dst's last are trailing 1s).
// Strides in elements.
struct view {
    const void *ptr;
    dims d;
    dims s;
    int at = -1; // -1: right-aligned
};

inline void naive_select(const dims &dst_dims, const dims &dst_strides,
                         void *dst, const view &c, const view &a, const view &b,
                         size_t esize) {
    const int64_t n = num_elems(dst_dims);
    const size_t r = dst_dims.size();
    std::vector<int64_t> idx(r, 0);
    auto offset = [&](const view &v) {
        int64_t off = 0;
        const size_t shift =
                v.at < 0 ? r - v.d.size() : static_cast<size_t>(v.at);
        for (size_t k = 0; k < v.d.size() && k + shift < r; ++k)
            off += (v.d[k] == 1 ? 0 : idx[k + shift]) * v.s[k];
        return off;
    };
    for (int64_t e = 0; e < n; ++e) {
        int64_t rem = e;
        for (size_t k = r; k-- > 0;) {
            idx[k] = rem % dst_dims[k];
            rem /= dst_dims[k];
        }
        const uint8_t cv = static_cast<const uint8_t *>(c.ptr)[offset(c)];
        const view &src = cv != 0 ? a : b;
        const auto *sp = static_cast<const uint8_t *>(src.ptr)
                         + offset(src) * static_cast<int64_t>(esize);
        int64_t doff = 0;
        for (size_t k = 0; k < r; ++k)
            doff += idx[k] * dst_strides[k];
        std::memcpy(static_cast<uint8_t *>(dst)
                            + doff * static_cast<int64_t>(esize),
                    sp, esize);
    }
}

// Random cond bytes: about half zero, the rest a mix of true values other
// than 1 as well (every non-zero byte is true).
inline void fill_cond(uint8_t *p, size_t n, std::mt19937 &rng) {
    static const uint8_t trues[] = { 1, 2, 0x80, 0xff, 0x7f, 0x40, 0x10, 3 };
    for (size_t i = 0; i < n; ++i) {
        const uint32_t r = rng();
        p[i] = (r & 1) ? 0 : trues[(r >> 1) % 8];
    }
}

inline void fill_random(uint8_t *p, size_t n, std::mt19937 &rng) {
    for (size_t i = 0; i < n; ++i)
        p[i] = static_cast<uint8_t>(rng() >> 7);
}

// Reports the first differing element of two byte buffers.
inline ::testing::AssertionResult
same_bytes(const uint8_t *got, const uint8_t *want, size_t n, size_t esize) {
    if (std::memcmp(got, want, n) == 0)
        return ::testing::AssertionSuccess();
    size_t i = 0;
    while (got[i] == want[i])
        ++i;
    const size_t e = i / esize;
    auto word = [&](const uint8_t *p) {
        uint64_t v = 0;
        std::memcpy(&v, p + e * esize, std::min<size_t>(esize, 8));
        return v;
    };
    size_t ndiff = 0;
    for (size_t k = 0; k < n; ++k)
        ndiff += got[k] != want[k];
    return ::testing::AssertionFailure()
           << "first difference at byte " << i << " (element " << e
           << " of size " << esize << "): got 0x" << std::hex << word(got)
           << ", expected 0x" << word(want) << std::dec << "; " << ndiff
           << " differing bytes of " << n;
}

// ---------------------------------------------------------------------------
// A whole Select case: declares, compiles, fills, executes and compares with
// naive_select, bit for bit, including guard bytes and gaps of a strided dst.

struct operand_desc {
    dims d;
    dims s; // empty: dense
};

struct select_case {
    dt type = dt::f32;
    dt cond_type = dt::boolean;
    operand_desc cond, src0, src1, dst; // dst.d: the expected dst dims
    const char *bcast = nullptr;
    // With bcast "pdpd": the axis attribute (no_axis: not set, -1), and
    // where cond and src_1 start on dst, worked out by the test.
    int64_t axis = no_axis;
    int cond_at = -1, src1_at = -1;
    bool dst_unknown_dims = false; // compile dst with unknown ndims
    size_t dst_misalign_elems = 0;
    uint32_t seed = 1;
};

inline dims strides_or_dense(const operand_desc &o) {
    return o.s.empty() && !o.d.empty() ? dense_strides(o.d) : o.s;
}

inline lt make_lt(size_t id, dt t, const operand_desc &o) {
    if (o.s.empty())
        return lt(id, t, o.d, lyt::strided);
    return lt(id, t, o.d, o.s);
}

inline void run_select_case(const select_case &sc) {
    SCOPED_TRACE(testing::Message()
                 << dt_name(sc.type) << " cond (" << dt_name(sc.cond_type)
                 << ") " << dims_str(sc.cond.d) << " src_0 "
                 << dims_str(sc.src0.d) << " src_1 " << dims_str(sc.src1.d)
                 << " dst " << dims_str(sc.dst.d) << " seed " << sc.seed);
    const size_t es = elem_size(sc.type);
    const lt lc = make_lt(0, sc.cond_type, sc.cond);
    const lt la = make_lt(1, sc.type, sc.src0);
    const lt lb = make_lt(2, sc.type, sc.src1);
    const lt ld = sc.dst_unknown_dims ? lt(3, sc.type, lyt::strided)
                                      : make_lt(3, sc.type, sc.dst);
    selgraph::compiled_partition cp;
    try {
        cp = select_partition(lc, la, lb, ld, 7, sc.bcast, sc.axis)
                     .compile({ lc, la, lb }, { ld }, cpu_engine());
    } catch (const selgraph::error &e) {
        FAIL() << "compile failed: " << e.what();
    }
    const lt qd = cp.query_logical_tensor(3);
    ASSERT_EQ(qd.get_dims(), sc.dst.d);
    const dims dst_strides = strides_or_dense(sc.dst);
    ASSERT_EQ(qd.get_strides(), dst_strides);

    std::mt19937 rng(sc.seed);
    const operand_desc *ops[3] = { &sc.cond, &sc.src0, &sc.src1 };
    buffer in[3];
    for (int i = 0; i < 3; ++i) {
        const size_t esz = i == 0 ? 1 : es;
        const size_t n = static_cast<size_t>(
                span_elems(ops[i]->d, strides_or_dense(*ops[i])));
        in[i] = buffer(n * esz);
        if (i == 0)
            fill_cond(in[i].data(), in[i].bytes, rng);
        else
            fill_random(in[i].data(), in[i].bytes, rng);
    }
    std::vector<uint8_t> in_copy[3];
    for (int i = 0; i < 3; ++i)
        in_copy[i].assign(in[i].data(), in[i].data() + in[i].bytes);

    const size_t dn =
            static_cast<size_t>(span_elems(sc.dst.d, dst_strides)) * es;
    buffer out(dn, sc.dst_misalign_elems * es);
    out.fill(0xA5);
    buffer want(dn);
    want.fill(0xA5);
    naive_select(
            sc.dst.d, dst_strides, want.data(),
            { in[0].data(), sc.cond.d, strides_or_dense(sc.cond), sc.cond_at },
            { in[1].data(), sc.src0.d, strides_or_dense(sc.src0) },
            { in[2].data(), sc.src1.d, strides_or_dense(sc.src1), sc.src1_at },
            es);

    std::vector<selgraph::tensor> ins = {
        selgraph::tensor(lc, cpu_engine(), in[0].data()),
        selgraph::tensor(la, cpu_engine(), in[1].data()),
        selgraph::tensor(lb, cpu_engine(), in[2].data()),
    };
    std::vector<selgraph::tensor> outs = { selgraph::tensor(qd, cpu_engine(),
                                                            out.data()) };
    try {
        cp.execute(cpu_stream(), ins, outs);
    } catch (const selgraph::error &e) {
        FAIL() << "execute failed: " << e.what();
    }
    EXPECT_TRUE(same_bytes(out.data(), want.data(), out.bytes, es));
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(std::memcmp(in[i].data(), in_copy[i].data(), in[i].bytes), 0)
                << "input " << i << " was modified";
}

} // namespace sgt

#endif // SELGRAPH_TESTS_API_TEST_UTILS_HPP
