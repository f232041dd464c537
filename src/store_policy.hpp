// The store policy: whether an execute writes dst with regular or with
// non-temporal stores. Results never depend on it (both move the same bits);
// only speed does, and the right choice depends on how much cache this
// process really gets, which a VM does not report reliably (sysfs and CPUID
// there may describe the host's whole L3). So the choice is measured, per
// compiled partition, on its own executes (see docs/design.md):
//
// - below nt_candidate_bytes() touched per execute, regular stores always
//   (the data fits in any server's caches and stays there for the next op);
// - above it, store_tuner times a window of executes with each store kind
//   and keeps the faster one, re-checking now and then, with hysteresis;
// - SELGRAPH_NT_STORES=always|never pins the choice (default auto).
#ifndef SELGRAPH_SRC_STORE_POLICY_HPP
#define SELGRAPH_SRC_STORE_POLICY_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace selgraph {
namespace impl {

enum class nt_policy { auto_, always, never };

/// SELGRAPH_NT_STORES, read once: "auto" (default), "always", "never".
nt_policy nt_stores_policy();

/// Bytes touched per execute from which non-temporal stores are considered
/// (a plan then carries the non-temporal kernel). Under `auto` the tuner
/// decides above this size.
size_t nt_candidate_bytes();

/// The store kind of one execute.
enum class store_kind : uint8_t { regular = 0, nt = 1 };

/// Chooses the store kind of a compiled partition from its own executes.
/// Thread-safe; concurrent executes are never blocked: only one at a time
/// is timed, the others run the current choice.
///
/// A trial window has three phases: executes with the current choice, with
/// the other kind, and with the current choice again (A-B-A), so that a
/// state that drifts during the window (a cache filling again after other
/// work, which favours whichever kind runs later) weighs on both kinds.
/// The first execute of a phase is not timed (it pays for the other kind's
/// cache state); a phase then runs until it has
/// `min_timed` timed executes and the last one no longer improves on the
/// best by `settle` (regular stores may need several executes to fill a
/// large cache again), at most `max_timed`. The best time of each kind
/// decides. The first decision is taken twice: the first window (regular
/// first) switches to non-temporal stores if they are `first_margin`
/// faster, and a second window, `confirm` executes later, re-decides from
/// that choice with the same margin (one window on a shared machine can be
/// misled by a burst of other load). Later windows switch only if the other
/// kind is `switch_margin` faster, and a switch is confirmed the same way:
/// the next window follows `confirm` executes after it. A window whose
/// last regular phase is still improving at max_timed has not seen
/// regular's time: regular stores are kept and a window follows after
/// `confirm` executes.
///
/// Between windows one execute in `monitor_every` is timed with the choice;
/// when the median of `monitor_n` of those is `drift` slower than the
/// choice's best in the last window (other buffers, another load on the
/// machine; not the few slow executes after other ops filled the caches),
/// a window starts at once. After the second window, one also comes every
/// `recheck` executes, from first_recheck doubling up to max_recheck. A
/// change of team size starts over.
class store_tuner {
public:
    static constexpr int min_timed = 3;
    static constexpr int max_timed = 12;
    /// Phases of a window (A-B-A), and the most executes a window takes.
    static constexpr int window_phases = 3;
    static constexpr int max_window_executes = window_phases * (1 + max_timed);
    static constexpr uint64_t confirm = 64;
    static constexpr double settle = 0.03;
    static constexpr uint64_t monitor_every = 16;
    static constexpr int monitor_n = 5;
    static constexpr uint64_t first_recheck = 1024;
    static constexpr uint64_t max_recheck = uint64_t(1) << 16;
    static constexpr double first_margin = 0.03;
    static constexpr double switch_margin = 0.08;
    static constexpr double drift = 0.5;

    /// Starts an execute on a team of `team` threads: the store kind to use,
    /// and in `ticket` a non-negative slot when this execute is timed (pass
    /// it to finish), -1 otherwise.
    store_kind start(int team, int &ticket);
    /// Records a timed execute; true when it completed a trial window (then
    /// last_window() has its figures).
    bool finish(int ticket, double seconds);
    /// The best times (seconds) of each kind in the last completed window.
    void last_window(double &regular, double &nt) const;

    /// The current choice (for tests and diagnostics).
    store_kind current() const {
        return static_cast<store_kind>(choice_.load(std::memory_order_relaxed));
    }
    /// Completed trial windows (for tests).
    int windows() const { return windows_.load(std::memory_order_relaxed); }

private:
    std::atomic<int> choice_ { 0 };
    std::atomic<int> windows_ { 0 };
    std::atomic<uint64_t> calls_ { 0 };
    /// Tickets from here on are monitored executes (monitor_ticket + kind);
    /// below it, a window's phase.
    static constexpr int monitor_ticket = window_phases;
    mutable std::mutex mutex_;
    // Guarded by mutex_:
    int team_ = 0;
    int phase_ = -1;                  ///< 0, 1, 2: the window's phase; -1: none
    int count_ = 0;                   ///< executes started in this phase
    int timed_ = 0;                   ///< timed executes recorded in this phase
    int first_ = 0;                   ///< kind of the window's first phase
    double best_[window_phases] = {}; ///< per phase
    bool improving_ = true;      ///< the phase's last time improved the best
    bool reg_improving_ = false; ///< the regular phase ended improving
    uint64_t next_window_ = 0;   ///< call index from which a window starts
    uint64_t recheck_ = first_recheck; ///< calls between windows
    double last_[2] = { 0, 0 };        ///< per kind, the last window's best
    double mon_[monitor_n] = {};       ///< monitored executes
    int n_mon_ = 0;
    bool busy_ = false; ///< a timed execute is running

    /// The store kind of the window's current phase: the choice in phases
    /// 0 and 2, the other kind in phase 1.
    int phase_kind() const { return phase_ == 1 ? 1 - first_ : first_; }
};

} // namespace impl
} // namespace selgraph

#endif
