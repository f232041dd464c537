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

const char *store_kind_name(store_kind k) {
    switch (k) {
        case store_kind::regular: return "regular";
        case store_kind::nt: return "nt";
        case store_kind::nt_transpose: return "nt_transpose";
        case store_kind::regular_transpose: return "regular_transpose";
        case store_kind::nt_prefetch: return "nt_prefetch";
    }
    return "?";
}

namespace {

unsigned valid_kinds(unsigned kinds) {
    kinds &= (1u << n_store_kinds) - 1;
    kinds |= store_kind_bit(store_kind::regular);
    if (kinds == store_kind_bit(store_kind::regular))
        kinds |= store_kind_bit(store_kind::nt);
    return kinds;
}

int popcount(unsigned v) {
    int n = 0;
    for (; v; v &= v - 1)
        ++n;
    return n;
}

} // namespace

store_tuner::store_tuner(unsigned kinds)
    : kinds_(valid_kinds(kinds))
    , ways_(popcount(kinds_)) {}

int store_tuner::phase_kind(int phase) const {
    if (phase == 0 || phase == ways_)
        return first_;
    // Phase i (1 .. ways - 1): the i-th of the other kinds, in kind order.
    int i = 0;
    for (int k = 0; k < n_store_kinds; ++k)
        if (k != first_ && ((kinds_ >> k) & 1) && ++i == phase)
            return k;
    return first_;
}

// Tickets: the phase (0 .. ways) of a window's execute, or monitor_ticket +
// kind of a monitored one.
store_kind store_tuner::start(int team, int &ticket) {
    ticket = -1;
    const uint64_t c = calls_.fetch_add(1, std::memory_order_relaxed);
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock() || busy_)
        return current();
    if (team != team_) {
        // A new team size: start over from the current choice.
        team_ = team;
        windows_.store(0, std::memory_order_relaxed);
        recheck_ = first_recheck;
        phase_ = -1;
        next_window_ = c;
    }
    if (phase_ < 0 && c >= next_window_) {
        phase_ = 0;
        count_ = timed_ = 0;
        improving_ = true;
        first_ = choice_.load(std::memory_order_relaxed);
    }
    if (phase_ < 0) {
        const int kind = choice_.load(std::memory_order_relaxed);
        if (c % monitor_every == 0) {
            busy_ = true;
            ticket = monitor_ticket + kind;
        }
        return static_cast<store_kind>(kind);
    }
    const int kind = phase_kind(phase_);
    if (count_++ > 0) {
        busy_ = true;
        ticket = phase_;
    }
    return static_cast<store_kind>(kind);
}

bool store_tuner::finish(int ticket, double seconds) {
    if (ticket < 0)
        return false;
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = false;
    if (ticket >= monitor_ticket) {
        // A monitored execute: has the choice become slower?
        const int kind = ticket - monitor_ticket;
        if (phase_ >= 0 || kind != choice_.load(std::memory_order_relaxed))
            return false;
        mon_[n_mon_++] = seconds;
        if (n_mon_ < monitor_n)
            return false;
        const double m = median(mon_, n_mon_);
        n_mon_ = 0;
        if (m > last_[kind] * (1.0 + drift))
            next_window_ = calls_.load(std::memory_order_relaxed);
        return false;
    }
    if (ticket != phase_)
        return false;
    const double prev = timed_ ? best_[phase_] : 0.0;
    improving_ = timed_ == 0 || seconds < prev * (1.0 - settle);
    best_[phase_] = timed_ ? std::min(prev, seconds) : seconds;
    ++timed_;
    if ((timed_ < min_timed || improving_) && timed_ < max_timed)
        return false;
    const int kind = phase_kind(phase_);
    if (kind == static_cast<int>(store_kind::regular))
        reg_improving_ = improving_;
    if (phase_ < ways_) {
        ++phase_;
        count_ = timed_ = 0;
        improving_ = true;
        return false;
    }
    // The window is complete: the first and last phases ran the current
    // choice, on either side of the other kinds' phases.
    const double keep = std::min(best_[0], best_[ways_]);
    int alt = -1;
    for (int ph = 1; ph < ways_; ++ph) {
        const int k = phase_kind(ph);
        last_[k] = best_[ph];
        if (alt < 0 || best_[ph] < last_[alt])
            alt = k;
    }
    last_[first_] = keep;
    const int w = windows_.load(std::memory_order_relaxed);
    // The first two windows take the first decision; hysteresis after.
    const double margin = w <= 1 ? first_margin : switch_margin;
    int next = last_[alt] < keep * (1.0 - margin) ? alt : first_;
    if (reg_improving_) // regular has not shown its time yet: keep it
        next = static_cast<int>(store_kind::regular);
    const bool change = next != first_;
    choice_.store(next, std::memory_order_relaxed);
    n_mon_ = 0;
    windows_.store(w + 1, std::memory_order_relaxed);
    phase_ = -1;
    if (reg_improving_ || w == 0 || change) {
        // Confirmed soon: a regular phase that had not settled, the first
        // decision, or a switch (one window can be misled by a burst of
        // noise on a shared machine, and would otherwise stand for the
        // recheck interval).
        next_window_ = calls_.load(std::memory_order_relaxed) + confirm;
    } else {
        next_window_ = calls_.load(std::memory_order_relaxed) + recheck_;
        recheck_ = std::min(recheck_ * 2, max_recheck);
    }
    reg_improving_ = false;
    return true;
}

double store_tuner::last_window(store_kind k) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return kinds_ & store_kind_bit(k) ? last_[static_cast<int>(k)] : 0.0;
}

} // namespace impl
} // namespace selgraph
