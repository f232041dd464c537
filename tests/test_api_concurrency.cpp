// One compiled_partition executed from several std::threads at once, and
// partitions compiled concurrently.
#include <array>
#include <atomic>
#include <thread>

#include "tests/api_test_utils.hpp"

using namespace sgt;
using selgraph::tensor;

namespace {

// One execute of `cp` over the buffers `p` (cond, src_0, src_1, dst) laid
// out as `l`; false where it threw.
bool try_execute(const selgraph::compiled_partition &cp, selgraph::stream &s,
                 const std::array<lt, 4> &l, const std::array<void *, 4> &p) {
    try {
        cp.execute(s,
                   { tensor(l[0], cpu_engine(), p[0]),
                     tensor(l[1], cpu_engine(), p[1]),
                     tensor(l[2], cpu_engine(), p[2]) },
                   { tensor(l[3], cpu_engine(), p[3]) });
    } catch (...) {
        return false;
    }
    return true;
}

// One execute of `cp` from the inputs `in` (cond, src_0, src_1) into `out`,
// filled with `fill` first: counts an execute that threw in `errors`, and
// one whose dst differs from `want` (its first n bytes) or that wrote past
// them into out's guard in `failures`.
void execute_and_check(const selgraph::compiled_partition &cp,
                       selgraph::stream &s, const std::array<lt, 4> &l,
                       const std::array<void *, 3> &in, buffer &out,
                       const uint8_t *want, size_t n, uint8_t fill,
                       std::atomic<int> &errors, std::atomic<int> &failures) {
    out.fill(fill);
    if (!try_execute(cp, s, l, { in[0], in[1], in[2], out.data() })) {
        ++errors;
        return;
    }
    bool same = std::memcmp(out.data(), want, n) == 0;
    for (size_t i = n; i < out.bytes && same; ++i)
        same = out.data()[i] == fill;
    if (!same)
        ++failures;
}

} // namespace

TEST(ApiConcurrency, OneCompiledPartitionManyThreads) {
    const dims cd { 1, 515 }, ad { 64, 515 }, bd { 64, 1 }, d { 64, 515 };
    for (dt t : { dt::f32, dt::f16 }) {
        SCOPED_TRACE(dt_name(t));
        const size_t es = elem_size(t);
        const lt lc(0, dt::boolean, cd, lyt::strided);
        const lt la(1, t, ad, lyt::strided);
        const lt lb(2, t, bd, lyt::strided);
        const lt ld(3, t, d, lyt::strided);
        const auto cp = compile_select(lc, la, lb, ld, 70);

        std::mt19937 rng(99);
        buffer c(static_cast<size_t>(num_elems(cd)));
        fill_cond(c.data(), c.bytes, rng);
        buffer a(static_cast<size_t>(num_elems(ad)) * es);
        fill_random(a.data(), a.bytes, rng);
        buffer b(static_cast<size_t>(num_elems(bd)) * es);
        fill_random(b.data(), b.bytes, rng);
        const size_t nbytes = static_cast<size_t>(num_elems(d)) * es;
        buffer want(nbytes);
        want.fill(0xA5);
        naive_select(d, dense_strides(d), want.data(),
                     { c.data(), cd, dense_strides(cd) },
                     { a.data(), ad, dense_strides(ad) },
                     { b.data(), bd, dense_strides(bd) }, es);

        constexpr int n_threads = 8, n_iter = 20;
        std::atomic<int> failures { 0 }, errors { 0 };
        std::vector<std::thread> pool;
        for (int th = 0; th < n_threads; ++th)
            pool.emplace_back([&, th] {
                selgraph::stream s(cpu_engine());
                buffer out(nbytes);
                for (int it = 0; it < n_iter; ++it)
                    execute_and_check(cp, s, { lc, la, lb, ld },
                                      { c.data(), a.data(), b.data() }, out,
                                      want.data(), nbytes,
                                      static_cast<uint8_t>(th * 16 + it),
                                      errors, failures);
            });
        for (auto &th : pool)
            th.join();
        EXPECT_EQ(errors.load(), 0);
        EXPECT_EQ(failures.load(), 0);
    }
}

TEST(ApiConcurrency, ConcurrentCompileAndExecute) {
    // Every thread builds its own graph (varied types and broadcasts, so
    // kernels are created and looked up concurrently) and checks its result.
    constexpr int n_threads = 8;
    std::atomic<int> bad { 0 };
    std::vector<std::thread> pool;
    std::vector<std::string> messages(n_threads);
    for (int th = 0; th < n_threads; ++th)
        pool.emplace_back([&, th] {
            try {
                const dt types[] = { dt::f32, dt::bf16, dt::f16 };
                const dt t = types[th % 3];
                const size_t es = elem_size(t);
                const int64_t R = 3 + th, C = 100 + 13 * th;
                const dims cd = th % 2 ? dims { R, 1 } : dims { R, C };
                const dims ad = th % 4 < 2 ? dims { R, C } : dims {};
                const dims bd = th % 4 < 2 ? dims { C } : dims { R, C };
                const dims d { R, C };
                const lt lc(0, dt::boolean, cd, lyt::strided);
                const lt la(1, t, ad, lyt::strided);
                const lt lb(2, t, bd, lyt::strided);
                const lt ld(3, t, lyt::strided);
                const auto cp = compile_select(lc, la, lb, ld, 80 + th);
                const lt q = cp.query_logical_tensor(3);
                if (q.get_dims() != d) {
                    messages[th] = "wrong dst dims";
                    ++bad;
                    return;
                }
                std::mt19937 rng(static_cast<uint32_t>(th));
                buffer c(static_cast<size_t>(num_elems(cd)));
                fill_cond(c.data(), c.bytes, rng);
                buffer a(static_cast<size_t>(num_elems(ad)) * es);
                fill_random(a.data(), a.bytes, rng);
                buffer b(static_cast<size_t>(num_elems(bd)) * es);
                fill_random(b.data(), b.bytes, rng);
                const size_t nbytes = static_cast<size_t>(num_elems(d)) * es;
                buffer want(nbytes), out(nbytes);
                want.fill(0x11);
                out.fill(0x11);
                naive_select(d, dense_strides(d), want.data(),
                             { c.data(), cd, dense_strides(cd) },
                             { a.data(), ad, dense_strides(ad) },
                             { b.data(), bd, dense_strides(bd) }, es);
                selgraph::stream s(cpu_engine());
                for (int it = 0; it < 5; ++it)
                    cp.execute(s,
                               { tensor(lc, cpu_engine(), c.data()),
                                 tensor(la, cpu_engine(), a.data()),
                                 tensor(lb, cpu_engine(), b.data()) },
                               { tensor(q, cpu_engine(), out.data()) });
                if (std::memcmp(out.data(), want.data(), out.bytes) != 0) {
                    messages[th] = "wrong values";
                    ++bad;
                }
            } catch (const std::exception &e) {
                messages[th] = e.what();
                ++bad;
            }
        });
    for (auto &th : pool)
        th.join();
    for (int th = 0; th < n_threads; ++th)
        EXPECT_TRUE(messages[th].empty())
                << "thread " << th << ": " << messages[th];
    EXPECT_EQ(bad.load(), 0);
}

TEST(ApiConcurrency, StagedInputsManyThreads) {
    // cond, src_0 and dst in three dim orders: each execute stages cond
    // into a buffer of its calling thread first. Threads with their own
    // inputs at once must each get their own result.
    const dims d { 4, 37, 41 };
    const dims cs { 1, 4, 4 * 37 }, as { 37 * 41, 1, 37 };
    const size_t n = static_cast<size_t>(num_elems(d));
    for (dt t : { dt::f32, dt::bf16 }) {
        SCOPED_TRACE(dt_name(t));
        const size_t es = elem_size(t);
        const lt lc(0, dt::boolean, d, cs);
        const lt la(1, t, d, as);
        const lt lb(2, t, d, lyt::strided);
        const lt ld(3, t, d, lyt::strided);
        const auto cp = compile_select(lc, la, lb, ld);

        constexpr int n_threads = 6, n_iter = 10;
        std::atomic<int> failures { 0 }, errors { 0 };
        std::vector<std::thread> pool;
        for (int th = 0; th < n_threads; ++th)
            pool.emplace_back([&, th] {
                std::mt19937 rng(1000u + static_cast<unsigned>(th));
                buffer c(n), a(n * es), b(n * es), out(n * es), want(n * es);
                fill_cond(c.data(), c.bytes, rng);
                fill_random(a.data(), a.bytes, rng);
                fill_random(b.data(), b.bytes, rng);
                naive_select(d, dense_strides(d), want.data(),
                             { c.data(), d, cs }, { a.data(), d, as },
                             { b.data(), d, dense_strides(d) }, es);
                selgraph::stream s(cpu_engine());
                for (int it = 0; it < n_iter; ++it)
                    execute_and_check(cp, s, { lc, la, lb, ld },
                                      { c.data(), a.data(), b.data() }, out,
                                      want.data(), n * es,
                                      static_cast<uint8_t>(th * 16 + it),
                                      errors, failures);
            });
        for (auto &th : pool)
            th.join();
        EXPECT_EQ(errors.load(), 0);
        EXPECT_EQ(failures.load(), 0);
    }
}
