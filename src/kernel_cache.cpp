#include "kernel_cache.hpp"

#include "common.hpp"

namespace selgraph {
namespace impl {

kernel_ptr
kernel_cache::get_or_create(const kernel_key &key,
                            const std::function<kernel_ptr()> &create,
                            bool *hit) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto it = map_.find(key);
    if (it != map_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
        future_t f = it->second.value;
        lock.unlock(); // another thread may still be building it
        if (hit)
            *hit = true;
        return f.get();
    }
    if (hit)
        *hit = false;
    if (capacity_ <= 0) { // caching disabled
        ++creations_;
        lock.unlock();
        return create();
    }
    std::promise<kernel_ptr> promise;
    lru_.push_front(key);
    map_.emplace(key, entry { promise.get_future().share(), lru_.begin() });
    ++creations_;
    evict_locked();
    lock.unlock();
    try {
        kernel_ptr k = create();
        promise.set_value(k);
        return k;
    } catch (...) {
        promise.set_exception(std::current_exception());
        lock.lock();
        auto failed = map_.find(key);
        if (failed != map_.end()) {
            lru_.erase(failed->second.lru_pos);
            map_.erase(failed);
        }
        throw;
    }
}

void kernel_cache::evict_locked() {
    while (static_cast<int>(map_.size()) > capacity_ && !lru_.empty()) {
        map_.erase(lru_.back());
        lru_.pop_back();
    }
}

int kernel_cache::capacity() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return capacity_;
}

void kernel_cache::set_capacity(int capacity) {
    std::lock_guard<std::mutex> lock(mutex_);
    capacity_ = capacity < 0 ? 0 : capacity;
    evict_locked();
}

int kernel_cache::size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int>(map_.size());
}

long kernel_cache::creations() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return creations_;
}

kernel_cache &kernel_cache::global() {
    static kernel_cache cache(1024);
    return cache;
}

} // namespace impl

int get_kernel_cache_capacity() {
    return impl::kernel_cache::global().capacity();
}

void set_kernel_cache_capacity(int capacity) {
    if (capacity < 0)
        impl::fail(status::invalid_arguments,
                   "set_kernel_cache_capacity: capacity ", capacity,
                   " is negative");
    impl::kernel_cache::global().set_capacity(capacity);
}

} // namespace selgraph
