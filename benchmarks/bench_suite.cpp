#include "bench_suite.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>

namespace sgbench {

const char *dtype_name(dtype t) {
    switch (t) {
        case dtype::f32: return "f32";
        case dtype::bf16: return "bf16";
        case dtype::f64: return "f64";
        case dtype::s8: return "s8";
        default: return "f16";
    }
}

int dtype_size(dtype t) {
    switch (t) {
        case dtype::f64: return 8;
        case dtype::f32: return 4;
        case dtype::s8: return 1;
        default: return 2;
    }
}

int64_t problem2d::elems(int op) const {
    if (op == op_dst)
        return rows * inner;
    switch (roles[op]) {
        case role::full: return rows * inner;
        case role::row: return inner;
        case role::col: return rows;
        default: return 1;
    }
}

int64_t problem2d::row_stride(int op) const {
    if (op == op_dst)
        return inner;
    switch (roles[op]) {
        case role::full: return inner;
        case role::col: return 1;
        default: return 0;
    }
}

int64_t problem2d::inner_stride(int op) const {
    if (op == op_dst)
        return 1;
    return roles[op] == role::full || roles[op] == role::row ? 1 : 0;
}

namespace {

int64_t product(const std::vector<int64_t> &d) {
    int64_t n = 1;
    for (int64_t x : d)
        n *= x;
    return n;
}

bench_case make_case(const char *id, std::vector<int64_t> c,
                     std::vector<int64_t> a, std::vector<int64_t> b,
                     std::vector<int64_t> d, int64_t rows, int64_t inner,
                     role rc, role ra, role rb) {
    bench_case bc;
    bc.id = id;
    bc.dims[op_cond] = std::move(c);
    bc.dims[op_src0] = std::move(a);
    bc.dims[op_src1] = std::move(b);
    bc.dims[op_dst] = std::move(d);
    bc.p.rows = rows;
    bc.p.inner = inner;
    bc.p.roles[op_cond] = rc;
    bc.p.roles[op_src0] = ra;
    bc.p.roles[op_src1] = rb;
    for (int op = 0; op < 4; ++op)
        if (product(bc.dims[op]) != bc.p.elems(op))
            throw std::logic_error("suite: case " + bc.id
                                   + ": N-d and 2-D sizes differ");
    return bc;
}

} // namespace

const std::vector<bench_case> &suite() {
    using r = role;
    static const std::vector<bench_case> cases = {
        // no broadcast, cache-resident
        make_case("S1", { 64, 1024 }, { 64, 1024 }, { 64, 1024 }, { 64, 1024 },
                  64, 1024, r::full, r::full, r::full),
        // no broadcast, 16M elements
        make_case("S2", { 4096, 4096 }, { 4096, 4096 }, { 4096, 4096 },
                  { 4096, 4096 }, 4096, 4096, r::full, r::full, r::full),
        // attention-mask fill: folds to 64 rows of 65536, one mask row
        make_case("S3", { 1, 1, 256, 256 }, { 4, 16, 256, 256 }, { 1 },
                  { 4, 16, 256, 256 }, 64, 65536, r::row, r::full, r::scalar),
        // one cond per row
        make_case("S4", { 4096, 1 }, { 4096, 1024 }, { 4096, 1024 },
                  { 4096, 1024 }, 4096, 1024, r::col, r::full, r::full),
        // 0-D cond
        make_case("S5", {}, { 4096, 1024 }, { 4096, 1024 }, { 4096, 1024 },
                  4096, 1024, r::scalar, r::full, r::full),
        // src_1 a row vector
        make_case("S6", { 4096, 1024 }, { 4096, 1024 }, { 1024 },
                  { 4096, 1024 }, 4096, 1024, r::full, r::full, r::row),
        // cond a row vector
        make_case("S7", { 1024 }, { 4096, 1024 }, { 4096, 1024 },
                  { 4096, 1024 }, 4096, 1024, r::row, r::full, r::full),
        // outer product: src_0 a column, src_1 a row
        make_case("S8", { 4096, 1024 }, { 4096, 1 }, { 1, 1024 },
                  { 4096, 1024 }, 4096, 1024, r::full, r::col, r::row),
        // S3's attention-mask pattern bound by DRAM even behind a 300 MiB
        // L3: 256M elements, 0-D src_1
        make_case("S9", { 1, 1, 1024, 1024 }, { 8, 32, 1024, 1024 }, {},
                  { 8, 32, 1024, 1024 }, 256, 1024 * 1024, r::row, r::full,
                  r::scalar),
    };
    return cases;
}

const std::vector<bench_case> &midsize_cases() {
    using r = role;
    static const std::vector<bench_case> cases = {
        make_case("M1", { 64, 1024 }, { 64, 1024 }, { 64, 1024 }, { 64, 1024 },
                  64, 1024, r::full, r::full, r::full),
        make_case("M2", { 256, 1024 }, { 256, 1024 }, { 256, 1024 },
                  { 256, 1024 }, 256, 1024, r::full, r::full, r::full),
        make_case("M3", { 1024, 1024 }, { 1024, 1024 }, { 1024, 1024 },
                  { 1024, 1024 }, 1024, 1024, r::full, r::full, r::full),
    };
    return cases;
}

int64_t effective_bytes(const problem2d &p, int w) {
    return p.elems(op_cond)
           + w * (p.elems(op_src0) + p.elems(op_src1) + p.elems(op_dst));
}

// --- buffers -------------------------------------------------------------

buffer::buffer(size_t bytes) {
    constexpr size_t align = 4096;
    const size_t sz = (bytes + align - 1) / align * align;
    void *p = std::aligned_alloc(align, sz == 0 ? align : sz);
    if (!p)
        throw std::bad_alloc();
    p_.reset(p);
}

void buffer::deleter::operator()(void *p) const {
    std::free(p);
}

namespace {

// Random bits of a value in [1, 2): sign 0, exponent of 1.0, random
// mantissa.
void fill_sources(void *dst, int64_t n, dtype t, std::mt19937_64 &rng) {
    if (t == dtype::f64) {
        auto *d = static_cast<uint64_t *>(dst);
        for (int64_t i = 0; i < n; ++i)
            d[i] = 0x3FF0000000000000ull | (rng() & 0xFFFFFFFFFFFFFull);
    } else if (t == dtype::s8) {
        auto *d = static_cast<uint8_t *>(dst);
        for (int64_t i = 0; i < n; ++i)
            d[i] = static_cast<uint8_t>(rng());
    } else if (t == dtype::f32) {
        auto *d = static_cast<uint32_t *>(dst);
        for (int64_t i = 0; i < n; ++i)
            d[i] = 0x3F800000u | static_cast<uint32_t>(rng() & 0x7FFFFFu);
    } else {
        const uint16_t one = t == dtype::bf16 ? 0x3F80 : 0x3C00;
        const uint16_t mant = t == dtype::bf16 ? 0x7F : 0x3FF;
        auto *d = static_cast<uint16_t *>(dst);
        for (int64_t i = 0; i < n; ++i)
            d[i] = static_cast<uint16_t>(one | (rng() & mant));
    }
}

} // namespace

void fill_random_bytes(uint8_t *p, size_t n, bool cond, std::mt19937_64 &rng) {
    const size_t per = cond ? 64 : 8;
    for (size_t i = 0; i < n; i += per) {
        const uint64_t bits = rng();
        const size_t m = std::min(per, n - i);
        for (size_t j = 0; j < m; ++j)
            p[i + j] = static_cast<uint8_t>(cond ? (bits >> j) & 1u
                                                 : bits >> (8 * j));
    }
}

case_data::case_data(const problem2d &ap, dtype t)
    : p(ap)
    , type(t) {
    const int w = dtype_size(t);
    cond = buffer(static_cast<size_t>(p.elems(op_cond)));
    src0 = buffer(static_cast<size_t>(p.elems(op_src0) * w));
    src1 = buffer(static_cast<size_t>(p.elems(op_src1) * w));
    dst = buffer(static_cast<size_t>(p.elems(op_dst) * w));
    std::mt19937_64 rng(20261121);
    fill_random_bytes(cond.as<uint8_t>(), static_cast<size_t>(p.elems(op_cond)),
                      true, rng);
    fill_sources(src0.get(), p.elems(op_src0), t, rng);
    fill_sources(src1.get(), p.elems(op_src1), t, rng);
    std::memset(dst.get(), 0, static_cast<size_t>(p.elems(op_dst) * w));
}

void *case_data::get_cond_f() {
    if (!cond_f.get()) {
        const int64_t n = p.elems(op_cond);
        cond_f = buffer(static_cast<size_t>(n * dtype_size(type)));
        const uint8_t *c = cond.as<uint8_t>();
        if (type == dtype::f32) {
            auto *f = cond_f.as<float>();
            for (int64_t i = 0; i < n; ++i)
                f[i] = c[i] ? 1.f : 0.f;
        } else {
            const uint16_t one = type == dtype::bf16 ? 0x3F80 : 0x3C00;
            auto *f = cond_f.as<uint16_t>();
            for (int64_t i = 0; i < n; ++i)
                f[i] = c[i] ? one : 0;
        }
    }
    return cond_f.get();
}

void *case_data::get_scratch() {
    if (!scratch.get()) {
        const size_t bytes =
                static_cast<size_t>(p.dst_elems() * dtype_size(type));
        scratch = buffer(bytes);
        std::memset(scratch.get(), 0, bytes);
    }
    return scratch.get();
}

namespace {

template <typename T>
bool check_t(const case_data &d, std::string &why) {
    const problem2d &p = d.p;
    const uint8_t *c = d.cond.as<uint8_t>();
    const T *a = d.src0.as<T>();
    const T *b = d.src1.as<T>();
    const T *o = d.dst.as<T>();
    for (int64_t r = 0; r < p.rows; ++r)
        for (int64_t i = 0; i < p.inner; ++i) {
            const bool take_a =
                    c[r * p.row_stride(op_cond) + i * p.inner_stride(op_cond)]
                    != 0;
            const T want = take_a ? a[r * p.row_stride(op_src0)
                                      + i * p.inner_stride(op_src0)]
                                  : b[r * p.row_stride(op_src1)
                                      + i * p.inner_stride(op_src1)];
            const T got = o[r * p.inner + i];
            if (std::memcmp(&want, &got, sizeof(T)) != 0) {
                why = "dst mismatch at row " + std::to_string(r) + " col "
                      + std::to_string(i);
                return false;
            }
        }
    return true;
}

} // namespace

bool check_dst(const case_data &d, std::string &why) {
    switch (dtype_size(d.type)) {
        case 8: return check_t<uint64_t>(d, why);
        case 4: return check_t<uint32_t>(d, why);
        case 1: return check_t<uint8_t>(d, why);
        default: return check_t<uint16_t>(d, why);
    }
}

void poison_dst(const case_data &d) {
    // 0xFF bytes: a NaN in every type, never a source value.
    std::memset(d.dst.get(), 0xFF,
                static_cast<size_t>(d.p.dst_elems() * dtype_size(d.type)));
}

} // namespace sgbench
