// Strided operands (views into bigger buffers, transposed, stride 0),
// strided dst (gaps untouched), in-place execution, and the large-output
// (non-temporal store) path.
#include <numeric>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/api_test_utils.hpp"

using namespace sgt;
using selgraph::tensor;

namespace {

const dt value_types[] = { dt::f32, dt::bf16, dt::f16 };

} // namespace

// ---------------------------------------------------------------------------
// Strided inputs and outputs

TEST(ApiLayouts, PaddedViewsOfEachOperand) {
    const int64_t R = 6, C = 45;
    for (dt t : value_types)
        for (int which = 0; which < 4; ++which) {
            select_case sc;
            sc.type = t;
            sc.cond = { { R, C }, which == 0 ? dims { C + 19, 1 } : dims {} };
            sc.src0 = { { R, C }, which == 1 ? dims { C + 3, 1 } : dims {} };
            sc.src1 = { { R, C }, which == 2 ? dims { 2 * C, 1 } : dims {} };
            sc.dst = { { R, C }, which == 3 ? dims { C + 5, 1 } : dims {} };
            sc.seed = static_cast<uint32_t>(which + 1);
            run_select_case(sc);
        }
}

TEST(ApiLayouts, AllOperandsPadded4D) {
    for (dt t : value_types) {
        select_case sc;
        sc.type = t;
        sc.cond = { { 2, 1, 4, 33 }, { 4 * 40, 4 * 40, 40, 1 } };
        sc.src0 = { { 2, 3, 4, 33 }, { 3 * 4 * 50 + 7, 4 * 50, 50, 1 } };
        sc.src1 = { { 3, 1, 33 }, { 64, 64, 1 } };
        sc.dst = { { 2, 3, 4, 33 }, { 3 * 5 * 36, 5 * 36, 36, 1 } };
        run_select_case(sc);
    }
}

TEST(ApiLayouts, TransposedInputs) {
    const int64_t R = 7, C = 40;
    for (dt t : value_types) {
        select_case sc;
        sc.type = t;
        sc.cond = { { R, C }, { 1, R } };
        sc.src0 = { { R, C }, { 1, R + 2 } };
        sc.src1 = { { R, C }, {} };
        sc.dst = { { R, C }, {} };
        run_select_case(sc);
        // A 3-D permutation of src_1 only.
        select_case sc2;
        sc2.type = t;
        sc2.cond = { { 4, 5 }, {} };
        sc2.src0 = { { 3, 4, 5 }, {} };
        sc2.src1 = { { 3, 4, 5 }, { 1, 15, 3 } };
        sc2.dst = { { 3, 4, 5 }, {} };
        run_select_case(sc2);
    }
}

TEST(ApiLayouts, StrideZeroDims) {
    const int64_t R = 5, C = 77;
    for (dt t : value_types) {
        // src_1 rows all alias row 0; cond is one byte for everything;
        // src_0 columns alias each other.
        select_case sc;
        sc.type = t;
        sc.cond = { { R, C }, { 0, 1 } };
        sc.src0 = { { R, C }, { 1, 0 } };
        sc.src1 = { { R, C }, { 0, 1 } };
        sc.dst = { { R, C }, {} };
        run_select_case(sc);
        select_case sc2 = sc;
        sc2.cond = { { R, C }, { 0, 0 } };
        sc2.seed = 9;
        run_select_case(sc2);
        select_case sc3 = sc;
        sc3.cond = { { R, C }, { 1, 0 } }; // per-row cond, stride 0 inside
        sc3.src0 = { { R, C }, { C, 1 } };
        sc3.seed = 10;
        run_select_case(sc3);
    }
}

TEST(ApiLayouts, StridedDstGapsUntouched) {
    const int64_t R = 5, C = 37;
    for (dt t : value_types) {
        // Row padding: the JIT walks rows with the dst stride.
        select_case sc;
        sc.type = t;
        sc.cond = { { R, C }, {} };
        sc.src0 = { { R, C }, {} };
        sc.src1 = { dims {}, {} };
        sc.dst = { { R, C }, { C + 13, 1 } };
        run_select_case(sc);
        // Every other element.
        select_case sc2 = sc;
        sc2.dst = { { R, C }, { 2 * C, 2 } };
        run_select_case(sc2);
        // Column-major dst.
        select_case sc3 = sc;
        sc3.dst = { { R, C }, { 1, R } };
        run_select_case(sc3);
        // A dim of 1 may have stride 0 in dst.
        select_case sc4;
        sc4.type = t;
        sc4.cond = { { 1, C }, {} };
        sc4.src0 = { { 1, C }, {} };
        sc4.src1 = { { 1, C }, {} };
        sc4.dst = { { 1, C }, { 0, 1 } };
        run_select_case(sc4);
    }
}

TEST(ApiLayouts, RandomStridesAgainstNaive) {
    std::mt19937 rng(77);
    // Strides for dims `d`: a random order of the dims (often row-major),
    // random padding, sometimes an inner stride > 1, and (inputs only)
    // sometimes stride 0.
    auto make_strides = [&](const dims &d, bool input) {
        const size_t r = d.size();
        std::vector<size_t> order(r); // innermost first
        for (size_t i = 0; i < r; ++i)
            order[i] = r - 1 - i;
        if (rng() % 3 == 0)
            std::shuffle(order.begin(), order.end(), rng);
        int64_t acc = rng() % 4 == 0 ? 1 + rng() % 3 : 1;
        dims s(r);
        for (size_t k : order) {
            s[k] = acc;
            acc *= std::max<int64_t>(d[k], 1);
            if (rng() % 3 == 0)
                acc += rng() % 5;
        }
        if (input)
            for (size_t k = 0; k < r; ++k)
                if (rng() % 6 == 0)
                    s[k] = 0;
        return s;
    };
    int n_run = 0;
    for (int trial = 0; trial < 60; ++trial) {
        const int rank = 1 + static_cast<int>(rng() % 5);
        dims full(rank);
        for (int i = 0; i < rank; ++i)
            full[i] = i == rank - 1 ? 1 + rng() % 70 : 1 + rng() % 5;
        auto derive = [&](const dims &from) {
            dims o = from;
            for (auto &x : o)
                if (rng() % 4 == 0)
                    x = 1;
            const size_t drop = rng() % 4 == 0 ? rng() % (o.size() + 1) : 0;
            o.erase(o.begin(), o.begin() + static_cast<long>(drop));
            return o;
        };
        const dims a = rng() % 2 ? full : derive(full);
        const dims b = derive(full);
        dims d;
        ASSERT_TRUE(numpy_broadcast(a, b, d));
        const dims c = derive(d);
        const dt t = value_types[trial % 3];
        select_case sc;
        sc.type = t;
        sc.cond = { c, make_strides(c, true) };
        sc.src0 = { a, make_strides(a, true) };
        sc.src1 = { b, make_strides(b, true) };
        sc.dst = { d, d.empty() ? dims {} : make_strides(d, false) };
        sc.seed = static_cast<uint32_t>(trial);
        run_select_case(sc);
        ++n_run;
        if (HasFailure())
            return;
    }
    EXPECT_EQ(n_run, 60);
}

// ---------------------------------------------------------------------------
// In-place

namespace {

// Runs dst = select(cond, src_0, src_1) with dst's handle equal to src_0's
// and checks it against the result computed from a copy of src_0.
void run_inplace(dt t, const dims &cd, const dims &d, const dims &bd,
                 const dims &strides) {
    SCOPED_TRACE(testing::Message() << dt_name(t) << " dst " << dims_str(d)
                                    << " strides " << dims_str(strides));
    const size_t es = elem_size(t);
    const lt lc(0, dt::boolean, cd, lyt::strided);
    const lt la =
            strides.empty() ? lt(1, t, d, lyt::strided) : lt(1, t, d, strides);
    const lt lb(2, t, bd, lyt::strided);
    const lt ld =
            strides.empty() ? lt(3, t, d, lyt::strided) : lt(3, t, d, strides);
    auto cp = compile_select(lc, la, lb, ld, 60);
    const auto pairs = cp.get_inplace_ports();
    ASSERT_EQ(pairs.size(), 1u);
    EXPECT_EQ(pairs[0].first, 1u);
    EXPECT_EQ(pairs[0].second, 3u);

    const dims s = strides.empty() ? dense_strides(d) : strides;
    std::mt19937 rng(3);
    buffer c(static_cast<size_t>(num_elems(cd)));
    fill_cond(c.data(), c.bytes, rng);
    buffer b(static_cast<size_t>(num_elems(bd)) * es);
    fill_random(b.data(), b.bytes, rng);
    buffer io(static_cast<size_t>(span_elems(d, s)) * es);
    fill_random(io.data(), io.bytes, rng);
    const buffer a_copy = io;
    buffer want = io;
    naive_select(d, s, want.data(), { c.data(), cd, dense_strides(cd) },
                 { a_copy.data(), d, s }, { b.data(), bd, dense_strides(bd) },
                 es);
    cp.execute(cpu_stream(),
               { tensor(lc, cpu_engine(), c.data()),
                 tensor(la, cpu_engine(), io.data()),
                 tensor(lb, cpu_engine(), b.data()) },
               { tensor(ld, cpu_engine(), io.data()) });
    EXPECT_TRUE(same_bytes(io.data(), want.data(), io.bytes, es));
}

} // namespace

TEST(ApiLayouts, InplaceWhenSrc0MatchesDst) {
    for (dt t : value_types) {
        run_inplace(t, { 1, 1, 67, 67 }, { 2, 3, 67, 67 }, {}, {});
        run_inplace(t, { 4, 1 }, { 4, 300 }, { 300 }, {});
        run_inplace(t, { 3, 50 }, { 3, 50 }, { 3, 50 }, { 64, 1 });
        run_inplace(t, {}, { 10 }, { 1 }, {});
        run_inplace(t, {}, {}, {}, {});
    }
}

TEST(ApiLayouts, NoInplaceWhenSrc0IsBroadcastOrLaidOutDifferently) {
    for (dt t : value_types) {
        // src_0 broadcast along a dim.
        {
            const lt c(0, dt::boolean, { 4, 8 }, lyt::strided);
            const lt a(1, t, { 1, 8 }, lyt::strided);
            const lt b(2, t, { 4, 8 }, lyt::strided);
            const lt d(3, t, { 4, 8 }, lyt::strided);
            EXPECT_TRUE(compile_select(c, a, b, d).get_inplace_ports().empty());
        }
        // src_0 of lower rank.
        {
            const lt c(0, dt::boolean, { 4, 8 }, lyt::strided);
            const lt a(1, t, dims { 8 }, lyt::strided);
            const lt b(2, t, { 4, 8 }, lyt::strided);
            const lt d(3, t, lyt::strided);
            EXPECT_TRUE(compile_select(c, a, b, d).get_inplace_ports().empty());
        }
        // src_0 0-D.
        {
            const lt c(0, dt::boolean, { 4, 8 }, lyt::strided);
            const lt a(1, t, dims {}, lyt::strided);
            const lt b(2, t, { 4, 8 }, lyt::strided);
            const lt d(3, t, lyt::strided);
            EXPECT_TRUE(compile_select(c, a, b, d).get_inplace_ports().empty());
        }
        // Same shape, different strides.
        {
            const lt c(0, dt::boolean, { 4, 8 }, lyt::strided);
            const lt a(1, t, { 4, 8 }, dims { 9, 1 });
            const lt b(2, t, { 4, 8 }, lyt::strided);
            const lt d(3, t, { 4, 8 }, lyt::strided);
            EXPECT_TRUE(compile_select(c, a, b, d).get_inplace_ports().empty());
            const lt at(1, t, { 4, 8 }, dims { 1, 4 });
            EXPECT_TRUE(
                    compile_select(c, at, b, d).get_inplace_ports().empty());
        }
        // src_1 matching dst is not an in-place pair (only src_0 is).
        {
            const lt c(0, dt::boolean, { 4, 8 }, lyt::strided);
            const lt a(1, t, dims { 8 }, lyt::strided);
            const lt b(2, t, { 4, 8 }, lyt::strided);
            const lt d(3, t, { 4, 8 }, lyt::strided);
            const auto pairs = compile_select(c, a, b, d).get_inplace_ports();
            for (const auto &p : pairs)
                EXPECT_NE(p.first, 1u);
            EXPECT_TRUE(pairs.empty()
                        || (pairs[0].first == 2u && pairs[0].second == 3u));
        }
    }
}

// ---------------------------------------------------------------------------
// Large working sets: the library switches to non-temporal stores once the
// bytes touched reach the last-level cache size. The working set counts the
// bytes a strided view spans, so a sparse view into a big (mostly never
// touched) allocation gets there without filling memory.

TEST(ApiLayouts, WorkingSetBeyondLastLevelCache) {
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l3 <= 0)
        l3 = 32l << 20;
    const int64_t R = 8, C = 1000;
    for (dt t : value_types) {
        SCOPED_TRACE(dt_name(t));
        const int64_t es = static_cast<int64_t>(elem_size(t));
        // src_1 row stride so that its span alone exceeds the L3 size.
        const int64_t row =
                (static_cast<int64_t>(l3) * 5 / 4) / (R - 1) / es + 64;
        const size_t span = static_cast<size_t>((R - 1) * row + C);
        uint8_t *big = static_cast<uint8_t *>(std::malloc(span * es));
        if (!big)
            GTEST_SKIP() << "cannot reserve " << span * es
                         << " bytes of address space";
        std::mt19937 rng(11);
        for (int64_t i = 0; i < R; ++i)
            fill_random(big + i * row * es, static_cast<size_t>(C * es), rng);
        buffer c(static_cast<size_t>(R * C));
        fill_cond(c.data(), c.bytes, rng);
        buffer a(static_cast<size_t>(R * C * es));
        fill_random(a.data(), a.bytes, rng);

        const lt lc(0, dt::boolean, { R, C }, lyt::strided);
        const lt la(1, t, { R, C }, lyt::strided);
        const lt lb(2, t, { R, C }, dims { row, 1 });
        const lt ld(3, t, { R, C }, lyt::strided);
        auto cp = compile_select(lc, la, lb, ld);
        ASSERT_GE(lb.get_mem_size(), static_cast<size_t>(l3));
        for (size_t mis : { 0, 1, 5 }) {
            buffer out(static_cast<size_t>(R * C * es), mis * es);
            out.fill(0xA5);
            buffer want(static_cast<size_t>(R * C * es));
            want.fill(0xA5);
            naive_select({ R, C }, { C, 1 }, want.data(),
                         { c.data(), { R, C }, { C, 1 } },
                         { a.data(), { R, C }, { C, 1 } },
                         { big, { R, C }, { row, 1 } },
                         static_cast<size_t>(es));
            cp.execute(cpu_stream(),
                       { tensor(lc, cpu_engine(), c.data()),
                         tensor(la, cpu_engine(), a.data()),
                         tensor(lb, cpu_engine(), big) },
                       { tensor(ld, cpu_engine(), out.data()) });
            EXPECT_TRUE(same_bytes(out.data(), want.data(), out.bytes,
                                   static_cast<size_t>(es)))
                    << "dst misaligned by " << mis << " elements";
        }
        std::free(big);
    }
}

// ---------------------------------------------------------------------------
// No byte outside a tensor is read or written: every operand ends right
// before (or starts right after) an inaccessible page, so an access outside
// it crashes.

namespace {

class page_guarded {
public:
    // front: the operand starts right after an inaccessible page; otherwise
    // it ends right before one.
    page_guarded(size_t bytes, bool front)
        : bytes_(bytes) {
        page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        const size_t body = (bytes + page_ - 1) / page_ * page_;
        len_ = body + page_;
        void *m = mmap(nullptr, len_, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            throw std::runtime_error("mmap failed");
        base_ = static_cast<uint8_t *>(m);
        uint8_t *guard = front ? base_ : base_ + body;
        if (mprotect(guard, page_, PROT_NONE) != 0)
            throw std::runtime_error("mprotect failed");
        data_ = front ? base_ + page_ : base_ + body - bytes;
    }
    ~page_guarded() { munmap(base_, len_); }
    page_guarded(const page_guarded &) = delete;
    page_guarded &operator=(const page_guarded &) = delete;
    uint8_t *data() const { return data_; }
    size_t size() const { return bytes_; }

private:
    size_t bytes_, page_ = 0, len_ = 0;
    uint8_t *base_ = nullptr, *data_ = nullptr;
};

} // namespace

TEST(ApiLayouts, NoAccessOutsideAnyOperand) {
    std::mt19937 rng(5);
    for (bool front : { false, true })
        for (dt t : value_types)
            for (int64_t n = 1; n <= 140; n += (n < 70 ? 1 : 7)) {
                struct pattern {
                    dims c, a, b;
                };
                const pattern patterns[] = {
                    { { 2, n }, { 2, n }, { 2, n } },
                    { { 2, n }, { 2, n }, {} },
                    { { 2, n }, {}, { 2, n } },
                    { { 2, 1 }, { 2, n }, { n } },
                    { {}, { n }, {} },
                };
                for (const auto &p : patterns) {
                    dims d;
                    ASSERT_TRUE(numpy_broadcast(p.a, p.b, d));
                    SCOPED_TRACE(testing::Message()
                                 << dt_name(t) << " cond " << dims_str(p.c)
                                 << " src_0 " << dims_str(p.a) << " src_1 "
                                 << dims_str(p.b)
                                 << (front ? " front" : " back"));
                    const size_t es = elem_size(t);
                    const lt lc(0, dt::boolean, p.c, lyt::strided);
                    const lt la(1, t, p.a, lyt::strided);
                    const lt lb(2, t, p.b, lyt::strided);
                    const lt ld(3, t, d, lyt::strided);
                    const auto cp = compile_select(lc, la, lb, ld);
                    page_guarded gc(static_cast<size_t>(num_elems(p.c)), front);
                    page_guarded ga(static_cast<size_t>(num_elems(p.a)) * es,
                                    front);
                    page_guarded gb(static_cast<size_t>(num_elems(p.b)) * es,
                                    front);
                    page_guarded gd(static_cast<size_t>(num_elems(d)) * es,
                                    front);
                    fill_cond(gc.data(), gc.size(), rng);
                    fill_random(ga.data(), ga.size(), rng);
                    fill_random(gb.data(), gb.size(), rng);
                    std::vector<uint8_t> want(gd.size(), 0);
                    naive_select(d, dense_strides(d), want.data(),
                                 { gc.data(), p.c, dense_strides(p.c) },
                                 { ga.data(), p.a, dense_strides(p.a) },
                                 { gb.data(), p.b, dense_strides(p.b) }, es);
                    cp.execute(cpu_stream(),
                               { tensor(lc, cpu_engine(), gc.data()),
                                 tensor(la, cpu_engine(), ga.data()),
                                 tensor(lb, cpu_engine(), gb.data()) },
                               { tensor(ld, cpu_engine(), gd.data()) });
                    ASSERT_TRUE(
                            same_bytes(gd.data(), want.data(), gd.size(), es));
                }
            }
}
