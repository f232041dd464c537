// The store policy: whether an execute writes dst with regular or with
// non-temporal stores (and, for a transposed dst that a kernel can write in
// one pass, whether that kernel or dst's transpose from a scratch tile
// stores it). Results never depend on it (every way moves the same bits);
// only speed does, and the right choice depends on how much cache this
// process really gets, which a VM does not report reliably (sysfs and CPUID
// there may describe the host's whole L3). So the choice is measured, per
// compiled partition, on its own executes (see docs/design.md):
//
// - below nt_candidate_bytes() touched per execute, regular stores always
//   (the data fits in any server's caches and stays there for the next op);
// - above it, store_tuner times a window of executes with each store kind
//   and keeps the fastest, re-checking now and then, with hysteresis;
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

/// The way one execute stores dst. Results never depend on it (every way
/// moves the same bits); only speed does.
/// - regular, nt: regular or non-temporal stores, by whatever kernel the
///   plan stores dst with (the row kernel, dst's transpose, or the kernel
///   writing a transposed dst in one pass, select_plan::kernel_dt);
/// - nt_transpose, regular_transpose: only for a plan with the kernel
///   writing a transposed dst in one pass (nt_transpose: where that kernel
///   has a non-temporal variant): the row kernel writes each tile's scratch
///   and dst's non-temporal or regular transpose stores it, as in a plan
///   without that kernel. From the caches the one pass can be the faster,
///   from DRAM the transpose's whole streamed lines, and a tile dim just
///   past a multiple of the kernel's row blocks wastes most of a block
///   (docs/performance.md);
/// - nt_prefetch: only for a plan whose row kernel runs rows that lie
///   apart (select_plan::kernel_nt_pf): non-temporal stores by the row
///   kernel that also prefetches its inputs' lines some rows ahead
///   (kernel_key::row_prefetch). From DRAM, padded rows of 394 bytes 400
///   apart ran 1.13-1.16x as fast with it on Zen 5, rows of 788 bytes 800
///   apart and of 500 elements 512 apart 0.9-0.98x (docs/performance.md).
enum class store_kind : uint8_t {
    regular = 0,
    nt = 1,
    nt_transpose = 2,
    regular_transpose = 3,
    nt_prefetch = 4
};
constexpr int n_store_kinds = 5;

/// Whether kind `k` stores dst non-temporally.
constexpr bool stores_nt(store_kind k) {
    return k == store_kind::nt || k == store_kind::nt_transpose
           || k == store_kind::nt_prefetch;
}

/// The bit of kind `k` in a set of store kinds.
constexpr unsigned store_kind_bit(store_kind k) {
    return 1u << static_cast<unsigned>(k);
}

/// "regular", "nt", "nt_transpose", "regular_transpose", "nt_prefetch"
/// (verbose tune lines).
const char *store_kind_name(store_kind k);

/// Chooses the store kind of a compiled partition from its own executes,
/// among a set of kinds (store_kind_bit; regular and at least one other).
/// Thread-safe; concurrent executes are never blocked: only one at a time
/// is timed, the others run the current choice.
///
/// A trial window has one phase per kind and one more: executes with the
/// current choice, with each other kind in turn (in kind order), and with
/// the current choice again (A-B-A, A-B-C-A), so that a state that drifts
/// during the window (a cache filling again after other work, which
/// favours whichever kind runs later) weighs on both ends. The first
/// execute of a phase is not timed (it pays for the previous kind's cache
/// state); a phase then runs until it has `min_timed` timed executes and
/// the last one no longer improves on the best by `settle` (regular stores
/// may need several executes to fill a large cache again), at most
/// `max_timed`. The best time of each kind decides: the fastest other kind
/// replaces the choice if it is faster by the margin. The first decision
/// is taken twice: the first window (regular first) switches if another
/// kind is `first_margin` faster, and a second window, `confirm` executes
/// later, re-decides from that choice with the same margin (one window on
/// a shared machine can be misled by a burst of other load). Later windows
/// switch only if another kind is `switch_margin` faster, and a switch is
/// confirmed the same way: the next window follows `confirm` executes
/// after it. A window whose last regular phase is still improving at
/// max_timed has not seen regular's time: regular stores are kept and a
/// window follows after `confirm` executes.
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
    /// The most phases of a window, and the most executes a window takes.
    static constexpr int max_phases = n_store_kinds + 1;
    static constexpr int max_window_executes = max_phases * (1 + max_timed);
    static constexpr uint64_t confirm = 64;
    static constexpr double settle = 0.03;
    static constexpr uint64_t monitor_every = 16;
    static constexpr int monitor_n = 5;
    static constexpr uint64_t first_recheck = 1024;
    static constexpr uint64_t max_recheck = uint64_t(1) << 16;
    static constexpr double first_margin = 0.03;
    static constexpr double switch_margin = 0.08;
    static constexpr double drift = 0.5;

    /// `kinds`: store_kind_bit of each kind to choose among; regular is
    /// always one, and nt where no other is.
    explicit store_tuner(unsigned kinds = store_kind_bit(store_kind::regular)
                                          | store_kind_bit(store_kind::nt));

    /// The kinds it chooses among (store_kind_bit), how many, and the
    /// phases of its windows.
    unsigned kinds() const { return kinds_; }
    int ways() const { return ways_; }
    int window_phases() const { return ways_ + 1; }

    /// Starts an execute on a team of `team` threads: the store kind to use,
    /// and in `ticket` a non-negative slot when this execute is timed (pass
    /// it to finish), -1 otherwise.
    store_kind start(int team, int &ticket);
    /// Records a timed execute; true when it completed a trial window (then
    /// last_window() has its figures).
    bool finish(int ticket, double seconds);
    /// The best time (seconds) of kind `k` in the last completed window (0
    /// before one, or for a kind it does not choose among).
    double last_window(store_kind k) const;

    /// The current choice (for tests and diagnostics).
    store_kind current() const {
        return static_cast<store_kind>(choice_.load(std::memory_order_relaxed));
    }
    /// Completed trial windows (for tests).
    int windows() const { return windows_.load(std::memory_order_relaxed); }

private:
    const unsigned kinds_;
    const int ways_;
    std::atomic<int> choice_ { 0 };
    std::atomic<int> windows_ { 0 };
    std::atomic<uint64_t> calls_ { 0 };
    /// Tickets from here on are monitored executes (monitor_ticket + kind);
    /// below it, a window's phase.
    static constexpr int monitor_ticket = max_phases;
    mutable std::mutex mutex_;
    // Guarded by mutex_:
    int team_ = 0;
    int phase_ = -1;               ///< the window's phase; -1: none
    int count_ = 0;                ///< executes started in this phase
    int timed_ = 0;                ///< timed executes recorded in this phase
    int first_ = 0;                ///< kind of the window's first phase
    double best_[max_phases] = {}; ///< per phase
    bool improving_ = true;        ///< the phase's last time improved the best
    bool reg_improving_ = false;   ///< the regular phase ended improving
    uint64_t next_window_ = 0;     ///< call index from which a window starts
    uint64_t recheck_ = first_recheck; ///< calls between windows
    double last_[n_store_kinds] = {};  ///< per kind, the last window's best
    double mon_[monitor_n] = {};       ///< monitored executes
    int n_mon_ = 0;
    bool busy_ = false; ///< a timed execute is running

    /// The store kind of a window's `phase`: the choice in the first and
    /// last phases, the other kinds in turn (in kind order) in between.
    int phase_kind(int phase) const;
};

} // namespace impl
} // namespace selgraph

#endif
