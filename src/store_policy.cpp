#include "store_policy.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace selgraph {
namespace impl {

nt_policy nt_stores_policy() {
    static const nt_policy p = [] {
        const char *s = std::getenv("SELGRAPH_NT_STORES");
        if (s && std::strcmp(s, "always") == 0)
            return nt_policy::always;
        if (s && std::strcmp(s, "never") == 0)
            return nt_policy::never;
        return nt_policy::auto_;
    }();
    return p;
}

size_t nt_candidate_bytes() {
    // Below this, an execute's bytes fit in the private L2 caches of the
    // smallest team that runs them plus any server's L3 share, and regular
    // stores keep dst cached for the next op. Measured (docs/performance.md):
    // on a 32 MiB-L3 AMD EPYC regular stores win up to 13-25 MB at 1 thread
    // and 40-50 MB at 2; on Intel Xeon VMs non-temporal stores already win
    // from 16 MB at 1 thread. The tuner decides above this floor.
    return size_t(4) << 20;
}

namespace {

double median(double *v, int n) {
    std::sort(v, v + n);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

} // namespace

store_kind store_tuner::start(int team, int &ticket) {
    ticket = -1;
    const uint64_t c = calls_.fetch_add(1, std::memory_order_relaxed);
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock())
        return current();
    if (team != team_) {
        // A new team size: start over from the current choice.
        team_ = team;
        windows_.store(0, std::memory_order_relaxed);
        recheck_ = first_recheck;
        step_ = -1;
        next_window_ = c;
    }
    if (step_ < 0 && c >= next_window_) {
        step_ = 0;
        first_ = choice_.load(std::memory_order_relaxed);
        n_[0] = n_[1] = 0;
    }
    if (step_ < 0 || busy_)
        return current();
    const int kind = step_ < block ? first_ : 1 - first_;
    if (step_ % block != 0) {
        busy_ = true;
        ticket = kind;
    }
    ++step_;
    return static_cast<store_kind>(kind);
}

void store_tuner::finish(int ticket, double seconds) {
    if (ticket < 0)
        return;
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = false;
    if (step_ < 0 || n_[ticket] >= block)
        return;
    t_[ticket][n_[ticket]++] = seconds;
    if (step_ < 2 * block)
        return;
    // The window is complete: the first block's kind is the current choice.
    const int other = 1 - first_;
    const double keep = median(t_[first_], n_[first_]);
    const double alt = median(t_[other], n_[other]);
    const int w = windows_.load(std::memory_order_relaxed);
    const double margin = w == 0 ? first_margin : switch_margin;
    if (n_[first_] > 0 && n_[other] > 0 && alt < keep * (1.0 - margin))
        choice_.store(other, std::memory_order_relaxed);
    windows_.store(w + 1, std::memory_order_relaxed);
    step_ = -1;
    next_window_ = calls_.load(std::memory_order_relaxed) + recheck_;
    recheck_ = std::min(recheck_ * 2, max_recheck);
}

} // namespace impl
} // namespace selgraph
