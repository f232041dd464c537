// A bounded, thread-safe LRU cache of generated kernels keyed by kernel_key.
// Two threads that miss the same key at once generate it once: the first
// inserts a shared_future and builds, the others wait on it (oneDNN's
// cache_utils.hpp pattern).
#ifndef SELGRAPH_SRC_KERNEL_CACHE_HPP
#define SELGRAPH_SRC_KERNEL_CACHE_HPP

#include <functional>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "kernels/select_kernel.hpp"

namespace selgraph {
namespace impl {

using kernel_ptr = std::shared_ptr<const select_kernel>;

class kernel_cache {
public:
    explicit kernel_cache(int capacity)
        : capacity_(capacity) {}

    /// Returns the kernel for `key`, calling `create` on a miss; `hit` says
    /// which. A failed creation is not cached and rethrows in every waiter.
    kernel_ptr get_or_create(const kernel_key &key,
                             const std::function<kernel_ptr()> &create,
                             bool *hit = nullptr);

    int capacity() const;
    void set_capacity(int capacity);
    int size() const;
    /// Number of times `create` was called (misses, including failed
    /// builds and builds with caching disabled), for tests.
    long creations() const;

    static kernel_cache &global();

private:
    using future_t = std::shared_future<kernel_ptr>;
    struct entry {
        future_t value;
        std::list<kernel_key>::iterator lru_pos;
    };
    void evict_locked();

    mutable std::mutex mutex_;
    int capacity_;
    long creations_ = 0;
    std::list<kernel_key> lru_; // front = most recently used
    std::unordered_map<kernel_key, entry, kernel_key_hash> map_;
};

} // namespace impl
} // namespace selgraph

#endif
