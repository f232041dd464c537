// The kernel cache: a local impl::kernel_cache (hits, one generation for
// concurrent misses of one key, LRU eviction, failed creations not
// cached, capacity 0) with kernels of the ISA under test (stand-ins for
// the reference ISA, which has none), and the global cache behind
// plan_select and partition::compile.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "kernel_test_utils.hpp"

namespace selgraph_test {
namespace {

using kernel_cache_test = isa_test;

/// A kernel that is not generated: for the reference ISA's cache tests.
class stand_in_kernel : public si::select_kernel {
public:
    explicit stand_in_kernel(const si::kernel_key &k)
        : key_(k)
        , name_(si::kernel_name(k)) {}
    si::select_kernel_fn fn() const override { return &noop; }
    const std::string &name() const override { return name_; }
    const si::kernel_key &key() const override { return key_; }

private:
    static void noop(const si::select_call_args *) {}
    si::kernel_key key_;
    std::string name_;
};

class cache_fixture : public kernel_cache_test {
protected:
    /// Distinct keys of the ISA under test, for i < 64.
    si::kernel_key key(int i) const {
        si::kernel_key k {};
        k.isa = kisa();
        k.elem_size = static_cast<uint8_t>(i % 3 == 0 ? 4 : i % 3 == 1 ? 2 : 1);
        k.unroll = static_cast<uint8_t>(1 + (i / 3) % 4);
        k.src1_scalar = static_cast<uint8_t>((i / 12) % 2);
        k.nt_stores = static_cast<uint8_t>((i / 24) % 2);
        k.cond_scalar = static_cast<uint8_t>((i / 48) % 2);
        return k;
    }
    si::kernel_ptr build(const si::kernel_key &k) const {
        if (jit())
            return si::create_jit_select_kernel(k);
        return std::make_shared<stand_in_kernel>(k);
    }
    /// A creator that must not run.
    static si::kernel_ptr must_hit() {
        throw std::logic_error("the creator ran: the key was not cached");
    }
};

using kernel_cache = cache_fixture;

TEST_P(kernel_cache, HitReturnsTheSameKernelWithoutCreating) {
    si::kernel_cache c(8);
    int calls = 0;
    auto create = [&] {
        ++calls;
        return build(key(0));
    };
    bool hit = true;
    const si::kernel_ptr k1 = c.get_or_create(key(0), create, &hit);
    ASSERT_TRUE(k1);
    EXPECT_FALSE(hit);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(c.creations(), 1);
    EXPECT_EQ(c.size(), 1);
    const si::kernel_ptr k2 = c.get_or_create(key(0), create, &hit);
    EXPECT_TRUE(hit);
    EXPECT_EQ(k1, k2);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(c.creations(), 1);
    EXPECT_EQ(k2->name(), si::kernel_name(key(0)));
    // Every key field takes part in the lookup.
    si::kernel_key k = key(0);
    k.invert_cond = 1;
    EXPECT_NE(c.get_or_create(
                      k, [&] { return build(k); }, &hit),
              k1);
    EXPECT_FALSE(hit);
    EXPECT_EQ(c.creations(), 2);
}

TEST_P(kernel_cache, ConcurrentMissesGenerateOnce) {
    si::kernel_cache c(16);
    constexpr int nthreads = 8;
    std::atomic<int> calls { 0 };
    std::atomic<int> ready { 0 };
    std::mutex m;
    std::condition_variable cv;
    bool go = false;
    std::vector<si::kernel_ptr> got(nthreads);
    std::vector<int> hits(nthreads, -1);
    std::vector<std::thread> ts;
    for (int t = 0; t < nthreads; ++t)
        ts.emplace_back([&, t] {
            {
                std::unique_lock<std::mutex> lock(m);
                ++ready;
                cv.wait(lock, [&] { return go; });
            }
            bool hit = false;
            got[t] = c.get_or_create(
                    key(5),
                    [&] {
                        ++calls;
                        // Long enough for every thread to miss meanwhile.
                        std::this_thread::sleep_for(
                                std::chrono::milliseconds(150));
                        return build(key(5));
                    },
                    &hit);
            hits[t] = hit ? 1 : 0;
        });
    while (ready.load() < nthreads)
        std::this_thread::yield();
    {
        std::lock_guard<std::mutex> lock(m);
        go = true;
    }
    cv.notify_all();
    for (auto &t : ts)
        t.join();
    EXPECT_EQ(calls.load(), 1);
    EXPECT_EQ(c.creations(), 1);
    EXPECT_EQ(c.size(), 1);
    int misses = 0;
    for (int t = 0; t < nthreads; ++t) {
        ASSERT_TRUE(got[t]);
        EXPECT_EQ(got[t], got[0]) << "thread " << t;
        misses += hits[t] == 0;
    }
    EXPECT_EQ(misses, 1) << "exactly one thread builds, the others wait";
}

TEST_P(kernel_cache, ConcurrentMissesOfManyKeys) {
    si::kernel_cache c(64);
    constexpr int nthreads = 12, nkeys = 6;
    std::atomic<int> calls[nkeys];
    for (auto &x : calls)
        x = 0;
    std::vector<std::vector<si::kernel_ptr>> got(
            nthreads, std::vector<si::kernel_ptr>(nkeys));
    std::vector<std::thread> ts;
    for (int t = 0; t < nthreads; ++t)
        ts.emplace_back([&, t] {
            for (int j = 0; j < nkeys; ++j) {
                const int i = (j + t) % nkeys;
                got[t][i] = c.get_or_create(key(i), [&, i] {
                    ++calls[i];
                    std::this_thread::sleep_for(std::chrono::milliseconds(10));
                    return build(key(i));
                });
            }
        });
    for (auto &t : ts)
        t.join();
    for (int i = 0; i < nkeys; ++i) {
        EXPECT_EQ(calls[i].load(), 1) << "key " << i;
        for (int t = 0; t < nthreads; ++t)
            EXPECT_EQ(got[t][i], got[0][i]);
        EXPECT_TRUE(got[0][i]->key() == key(i));
    }
    EXPECT_EQ(c.creations(), nkeys);
}

TEST_P(kernel_cache, EvictionLeastRecentlyUsed) {
    si::kernel_cache c(2);
    bool hit = false;
    const auto a = c.get_or_create(key(0), [&] { return build(key(0)); });
    c.get_or_create(key(1), [&] { return build(key(1)); });
    // Touch key 0: key 1 becomes the least recently used.
    EXPECT_EQ(c.get_or_create(key(0), must_hit, &hit), a);
    EXPECT_TRUE(hit);
    c.get_or_create(key(2), [&] { return build(key(2)); });
    EXPECT_EQ(c.size(), 2);
    EXPECT_EQ(c.creations(), 3);
    EXPECT_NO_THROW(c.get_or_create(key(0), must_hit, &hit));
    EXPECT_NO_THROW(c.get_or_create(key(2), must_hit, &hit));
    // Key 1 was evicted: it is built again.
    int calls = 0;
    c.get_or_create(
            key(1),
            [&] {
                ++calls;
                return build(key(1));
            },
            &hit);
    EXPECT_FALSE(hit);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(c.creations(), 4);
    EXPECT_EQ(c.size(), 2);
    // A kernel evicted from the cache stays valid for its holders.
    EXPECT_EQ(a->name(), si::kernel_name(key(0)));
    // Shrinking evicts down to the new capacity.
    for (int i = 3; i < 10; ++i)
        c.get_or_create(key(i), [&, i] { return build(key(i)); });
    EXPECT_EQ(c.size(), 2);
    c.set_capacity(1);
    EXPECT_EQ(c.capacity(), 1);
    EXPECT_EQ(c.size(), 1);
    EXPECT_NO_THROW(c.get_or_create(key(9), must_hit)); // most recent kept
    c.set_capacity(-3);
    EXPECT_EQ(c.capacity(), 0);
    EXPECT_EQ(c.size(), 0);
}

TEST_P(kernel_cache, CapacityZeroDisablesCaching) {
    si::kernel_cache c(0);
    int calls = 0;
    bool hit = true;
    for (int i = 0; i < 3; ++i) {
        const auto k = c.get_or_create(
                key(3),
                [&] {
                    ++calls;
                    return build(key(3));
                },
                &hit);
        EXPECT_TRUE(k);
        EXPECT_FALSE(hit);
    }
    EXPECT_EQ(calls, 3);
    EXPECT_EQ(c.size(), 0);
}

TEST_P(kernel_cache, ThrowingCreatorIsNotCachedAndRethrows) {
    si::kernel_cache c(4);
    int calls = 0;
    auto throwing = [&]() -> si::kernel_ptr {
        ++calls;
        throw std::runtime_error("generation failed");
    };
    EXPECT_THROW(c.get_or_create(key(1), throwing), std::runtime_error);
    EXPECT_EQ(c.size(), 0);
    // selgraph::error keeps its status through the cache.
    try {
        c.get_or_create(key(1), []() -> si::kernel_ptr {
            throw sg::error(sg::status::out_of_memory, "no memory");
        });
        ADD_FAILURE() << "no exception";
    } catch (const sg::error &e) {
        EXPECT_EQ(e.status, sg::status::out_of_memory);
    }
    EXPECT_EQ(c.size(), 0);
    // Not cached: the next call creates.
    bool hit = true;
    const auto k = c.get_or_create(
            key(1), [&] { return build(key(1)); }, &hit);
    EXPECT_FALSE(hit);
    ASSERT_TRUE(k);
    EXPECT_EQ(c.size(), 1);
    EXPECT_EQ(calls, 1);
    // A real generation failure (a key without a kernel) through the cache.
    if (jit()) {
        si::kernel_key bad = key(1);
        bad.elem_size = 3;
        EXPECT_THROW(
                c.get_or_create(
                        bad, [&] { return si::create_jit_select_kernel(bad); }),
                sg::error);
        EXPECT_EQ(c.size(), 1);
    }
}

TEST_P(kernel_cache, ConcurrentWaitersOfAFailedCreationAllRethrow) {
    si::kernel_cache c(4);
    constexpr int nthreads = 6;
    std::atomic<int> calls { 0 }, thrown { 0 }, started { 0 };
    std::vector<std::thread> ts;
    for (int t = 0; t < nthreads; ++t)
        ts.emplace_back([&] {
            ++started;
            while (started.load() < nthreads)
                std::this_thread::yield();
            try {
                c.get_or_create(key(2), [&]() -> si::kernel_ptr {
                    ++calls;
                    // Long enough for every thread to find the pending
                    // entry before the failure removes it.
                    std::this_thread::sleep_for(std::chrono::milliseconds(250));
                    throw std::runtime_error("generation failed");
                });
            } catch (const std::runtime_error &) {
                ++thrown;
            }
        });
    for (auto &t : ts)
        t.join();
    EXPECT_EQ(thrown.load(), nthreads);
    EXPECT_EQ(calls.load(), 1) << "the waiters share the one failure";
    EXPECT_EQ(c.size(), 0);
    bool hit = true;
    EXPECT_TRUE(c.get_or_create(
            key(2), [&] { return build(key(2)); }, &hit));
    EXPECT_FALSE(hit);
}

TEST_P(kernel_cache, GlobalCachePlanSelectHits) {
    const si::select_nd p = make_nd({ 1, 1, 5, 37 }, { 2, 2, 5, 37 }, {}, 2);
    const si::select_plan a = si::plan_select(p, 0);
    const long before = si::kernel_cache::global().creations();
    const si::select_plan b = si::plan_select(p, 0);
    EXPECT_EQ(si::kernel_cache::global().creations(), before);
    EXPECT_TRUE(b.cache_hit);
    EXPECT_EQ(a.kernel, b.kernel);
    ASSERT_TRUE(plan_takes(b, kisa(), jit()));
    if (jit()) {
        bool hit = false;
        const auto k = si::kernel_cache::global().get_or_create(
                expected_key(p, kisa(), false), must_hit, &hit);
        EXPECT_TRUE(hit);
        EXPECT_EQ(k, b.kernel);
    }
}

TEST_P(kernel_cache, PublicCapacityApi) {
    const int cap = sg::get_kernel_cache_capacity();
    EXPECT_GT(cap, 0);
    try {
        sg::set_kernel_cache_capacity(-1);
        ADD_FAILURE() << "negative capacity accepted";
    } catch (const sg::error &e) {
        EXPECT_EQ(e.status, sg::status::invalid_arguments);
    }
    EXPECT_EQ(sg::get_kernel_cache_capacity(), cap);
    sg::set_kernel_cache_capacity(3);
    EXPECT_EQ(sg::get_kernel_cache_capacity(), 3);
    EXPECT_LE(si::kernel_cache::global().size(), 3);
    sg::set_kernel_cache_capacity(cap);
    EXPECT_EQ(sg::get_kernel_cache_capacity(), cap);
}

SELGRAPH_INSTANTIATE_PER_ISA(kernel_cache);

} // namespace
} // namespace selgraph_test
