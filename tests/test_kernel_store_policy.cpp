// The store tuner (src/store_policy.hpp) as a state machine, driven with
// synthetic times: which store kind each execute gets, which executes are
// timed, when it switches and when hysteresis keeps it. And the plans it is
// attached to: only plans with a non-temporal kernel, above the floor.
#include "kernel_test_utils.hpp"
#include "src/store_policy.hpp"

namespace selgraph_test {
namespace {

using si::store_kind;
using si::store_tuner;

constexpr int min_timed = store_tuner::min_timed;
// A window of two ways whose times are flat: three phases (current, other,
// current), each one untimed execute and min_timed timed ones.
constexpr int flat_window = 3 * (1 + min_timed);

// One execute: the kind the tuner hands out; if timed, it "took" the time
// the test assigns to that kind.
store_kind step(store_tuner &t, int team, double t_regular, double t_nt,
                bool *timed = nullptr) {
    int ticket = -1;
    const store_kind k = t.start(team, ticket);
    if (timed)
        *timed = ticket >= 0;
    if (ticket >= 0)
        t.finish(ticket, k == store_kind::nt ? t_nt : t_regular);
    return k;
}

// `n` executes, each timed kind taking the given time.
void steps(store_tuner &t, uint64_t n, double t_regular, double t_nt,
           int team = 1) {
    for (uint64_t i = 0; i < n; ++i)
        step(t, team, t_regular, t_nt);
}

// The first window and the one that confirms it, with flat times.
constexpr uint64_t first_decision = 2 * flat_window + store_tuner::confirm;

TEST(store_tuner, FirstWindowRegularNonTemporalRegularEachFirstCallUntimed) {
    store_tuner t;
    std::vector<store_kind> kinds;
    std::vector<bool> timed;
    for (int i = 0; i < flat_window; ++i) {
        bool tm = false;
        kinds.push_back(step(t, 1, 1.0, 0.5, &tm));
        timed.push_back(tm);
    }
    const int phase = 1 + min_timed;
    for (int i = 0; i < flat_window; ++i) {
        EXPECT_EQ(kinds[i],
                  i / phase == 1 ? store_kind::nt : store_kind::regular)
                << "execute " << i;
        EXPECT_EQ(timed[i], i % phase != 0) << "execute " << i;
    }
    EXPECT_EQ(t.windows(), 1);
    EXPECT_EQ(t.current(), store_kind::nt);
    EXPECT_EQ(t.window_phases(), 3);
    EXPECT_EQ(t.last_window(store_kind::regular), 1.0);
    EXPECT_EQ(t.last_window(store_kind::nt), 0.5);
    EXPECT_EQ(t.last_window(store_kind::nt_transpose), 0.0);
    // Until the next window, every execute runs the choice; one in
    // monitor_every is timed.
    int monitored = 0;
    for (uint64_t i = 0; i < store_tuner::confirm; ++i) {
        bool tm = false;
        EXPECT_EQ(step(t, 1, 1.0, 0.5, &tm), store_kind::nt);
        monitored += tm;
    }
    EXPECT_EQ(t.windows(), 1);
    EXPECT_NEAR(monitored,
                static_cast<double>(store_tuner::confirm)
                        / store_tuner::monitor_every,
                1);
    // The first decision is confirmed by a second window `confirm`
    // executes later, from the choice: nt, regular, nt.
    std::vector<store_kind> second;
    for (int i = 0; i < flat_window; ++i)
        second.push_back(step(t, 1, 1.0, 0.5));
    for (int i = 0; i < flat_window; ++i)
        EXPECT_EQ(second[i],
                  i / phase == 1 ? store_kind::regular : store_kind::nt)
                << "execute " << i << " of the second window";
    EXPECT_EQ(t.windows(), 2);
    EXPECT_EQ(t.current(), store_kind::nt);
    // Then none until first_recheck.
    for (uint64_t i = 0; i + 1 < store_tuner::first_recheck; ++i)
        EXPECT_EQ(step(t, 1, 1.0, 0.5), store_kind::nt);
    EXPECT_EQ(t.windows(), 2);
}

TEST(store_tuner, SecondWindowCorrectsAFirstMisledByNoise) {
    // Non-temporal stores are 25% faster, but the first window's
    // non-temporal phase ran during a burst of other load (3x slower):
    // regular is kept. The confirming window, `confirm` executes later,
    // switches.
    store_tuner t;
    steps(t, flat_window, 1.0, 3.0);
    ASSERT_EQ(t.windows(), 1);
    ASSERT_EQ(t.current(), store_kind::regular);
    steps(t, store_tuner::confirm + flat_window, 1.0, 0.75);
    EXPECT_EQ(t.windows(), 2);
    EXPECT_EQ(t.current(), store_kind::nt);
}

TEST(store_tuner, KeepsRegularWhenNonTemporalIsSlowerOrWithinTheMargin) {
    for (double nt : { 2.0, 1.0, 1.0 - store_tuner::first_margin / 2 }) {
        store_tuner t;
        steps(t, flat_window, 1.0, nt);
        EXPECT_EQ(t.windows(), 1);
        EXPECT_EQ(t.current(), store_kind::regular) << "nt time " << nt;
    }
}

TEST(store_tuner, PhaseRunsWhileImprovingAndKeepsAnImprovingRegular) {
    // Regular stores get 10% faster each execute (a cache filling up) and
    // never settle within max_timed; non-temporal stores are flat and
    // faster than regular's best. Regular is kept, and a window follows
    // after `confirm` executes.
    store_tuner t;
    double reg = 2.0;
    int regular_executes = 0;
    for (int i = 0; t.windows() == 0 && i < 100; ++i) {
        int ticket = -1;
        const store_kind k = t.start(1, ticket);
        if (k == store_kind::regular)
            ++regular_executes;
        if (ticket >= 0) {
            t.finish(ticket, k == store_kind::nt ? 0.1 : reg);
            if (k == store_kind::regular)
                reg *= 0.9;
        }
    }
    ASSERT_EQ(t.windows(), 1);
    // Both regular phases run to max_timed.
    EXPECT_EQ(regular_executes, 2 * (1 + store_tuner::max_timed));
    EXPECT_EQ(t.current(), store_kind::regular);
    // The confirming window: regular (now settled at 0.5) against nt 0.1.
    steps(t, store_tuner::confirm + flat_window, 0.5, 0.1);
    EXPECT_EQ(t.windows(), 2);
    EXPECT_EQ(t.current(), store_kind::nt);
}

TEST(store_tuner, SettledPhaseEndsAfterMinTimed) {
    // Regular improves once, then settles: its phase ends at the first
    // execute that does not improve by `settle`.
    store_tuner t;
    const double times[] = { 3.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0 };
    int k = 0, regular_executes = 0;
    for (int i = 0; t.windows() == 0 && i < 100; ++i) {
        int ticket = -1;
        const store_kind kind = t.start(1, ticket);
        regular_executes += kind == store_kind::regular;
        if (ticket >= 0)
            t.finish(ticket, kind == store_kind::nt ? 2.0 : times[k++]);
    }
    // Phase 0: 3.0, 2.0, 1.0 improve, 1.0 does not; phase 2: flat, so
    // min_timed timed executes.
    EXPECT_EQ(regular_executes, (1 + 4) + (1 + min_timed));
    EXPECT_EQ(t.current(), store_kind::regular);
}

TEST(store_tuner, RegularThatTurnsFastAfterTheFirstPhaseIsKept) {
    // A cache that fills again only after the first phase (other work had
    // filled it): regular settles at 2.0 in phase 0, non-temporal runs at
    // 1.0, and regular runs at 0.5 once the cache holds the operands. The
    // third phase sees it; with two phases non-temporal would be chosen.
    store_tuner t;
    int phase_regular = 0; // regular phases begun
    store_kind last = store_kind::nt;
    for (int i = 0; t.windows() == 0 && i < 100; ++i) {
        int ticket = -1;
        const store_kind k = t.start(1, ticket);
        if (k == store_kind::regular && last != store_kind::regular)
            ++phase_regular;
        last = k;
        if (ticket >= 0)
            t.finish(ticket, k == store_kind::nt  ? 1.0
                             : phase_regular == 1 ? 2.0
                                                  : 0.5);
    }
    ASSERT_EQ(t.windows(), 1);
    EXPECT_EQ(phase_regular, 2);
    EXPECT_EQ(t.current(), store_kind::regular);
    EXPECT_EQ(t.last_window(store_kind::regular), 0.5);
    EXPECT_EQ(t.last_window(store_kind::nt), 1.0);
}

TEST(store_tuner, SecondWindowDecidesWithTheFirstMargin) {
    // Regular stores 5% faster than non-temporal ones (between the first
    // and the switch margin): a first window misled into non-temporal
    // stores is corrected by the second; a third window would not switch.
    const double nt = 1.0, reg = 0.95;
    static_assert(0.95 < 1.0 - store_tuner::first_margin
                          && 0.95 > 1.0 - store_tuner::switch_margin,
                  "5% lies between the margins");
    store_tuner t;
    steps(t, flat_window, 2.0, nt); // regular slow during the first window
    ASSERT_EQ(t.current(), store_kind::nt);
    steps(t, store_tuner::confirm + flat_window, reg, nt);
    EXPECT_EQ(t.windows(), 2);
    EXPECT_EQ(t.current(), store_kind::regular);
    // Now non-temporal stores turn 5% faster: the periodic window keeps
    // regular stores (hysteresis).
    steps(t, store_tuner::first_recheck + flat_window, 1.0, 0.95);
    EXPECT_EQ(t.windows(), 3);
    EXPECT_EQ(t.current(), store_kind::regular);
}

TEST(store_tuner, ASwitchIsConfirmedSoon) {
    // Regular stores are 1.0, non-temporal ones 1.2: regular is chosen and
    // confirmed. The periodic window runs during a burst of other load
    // that slows regular's phases to 1.4, and switches. A window follows
    // `confirm` executes later (not the recheck interval) and switches
    // back.
    store_tuner t;
    steps(t, first_decision, 1.0, 1.2);
    ASSERT_EQ(t.windows(), 2);
    ASSERT_EQ(t.current(), store_kind::regular);
    steps(t, store_tuner::first_recheck + flat_window, 1.4, 1.2);
    ASSERT_EQ(t.windows(), 3);
    ASSERT_EQ(t.current(), store_kind::nt);
    steps(t, store_tuner::confirm + flat_window - 1, 1.0, 1.2);
    EXPECT_EQ(t.windows(), 3);
    steps(t, 1, 1.0, 1.2);
    EXPECT_EQ(t.windows(), 4);
    EXPECT_EQ(t.current(), store_kind::regular);
}

TEST(store_tuner, DriftStartsAWindowAndHysteresisDecides) {
    for (double reg : { 1.0 - store_tuner::switch_margin / 2,
                        1.0 - 2 * store_tuner::switch_margin }) {
        store_tuner t;
        // First window and its confirmation: nt at 0.5 of regular's 1.0.
        steps(t, first_decision, 1.0, 0.5);
        ASSERT_EQ(t.current(), store_kind::nt);
        ASSERT_EQ(t.windows(), 2);
        // Later the machine changes: nt now takes 1.0 (a drift of 2x),
        // regular `reg`. The monitored executes see it, and a window
        // follows long before the periodic recheck.
        const uint64_t soon =
                (store_tuner::monitor_n + 2) * store_tuner::monitor_every
                + flat_window;
        ASSERT_LT(soon, store_tuner::first_recheck);
        steps(t, soon, reg, 1.0);
        EXPECT_EQ(t.windows(), 3);
        const bool beyond = reg < 1.0 - store_tuner::switch_margin;
        EXPECT_EQ(t.current(), beyond ? store_kind::regular : store_kind::nt)
                << "regular time " << reg;
    }
}

TEST(store_tuner, NoDriftNoWindowUntilTheRecheck) {
    store_tuner t;
    steps(t, first_decision, 1.0, 0.5);
    ASSERT_EQ(t.windows(), 2);
    // Slower within the drift band, or faster: no window before
    // first_recheck.
    for (uint64_t i = 0; i + flat_window < store_tuner::first_recheck; ++i)
        step(t, 1, 1.0,
             i % 2 ? 0.5 * (1.0 + store_tuner::drift / 2) : 0.5 * 0.5);
    EXPECT_EQ(t.windows(), 2);
}

TEST(store_tuner, RechecksGetRarer) {
    store_tuner t;
    std::vector<uint64_t> ends; // execute index where each window ended
    for (uint64_t i = 0; i < 8 * store_tuner::first_recheck; ++i) {
        const int before = t.windows();
        step(t, 1, 1.0, 0.5);
        if (t.windows() != before)
            ends.push_back(i);
    }
    ASSERT_GE(ends.size(), 3u);
    // The confirming window starts `confirm` executes after the first,
    // the next one first_recheck executes after that.
    EXPECT_EQ(ends[1] - ends[0], store_tuner::confirm + flat_window);
    EXPECT_EQ(ends[2] - ends[1], store_tuner::first_recheck + flat_window);
    for (size_t k = 2; k < ends.size(); ++k)
        EXPECT_GT(ends[k] - ends[k - 1], ends[k - 1] - ends[k - 2]);
}

TEST(store_tuner, NewTeamSizeStartsOver) {
    store_tuner t;
    steps(t, flat_window, 1.0, 0.5);
    ASSERT_EQ(t.current(), store_kind::nt);
    ASSERT_EQ(t.windows(), 1);
    // Two threads: regular is now faster; a fresh window decides at once
    // (no recheck wait), starting from the current choice.
    steps(t, flat_window, 0.5, 1.0, 2);
    EXPECT_EQ(t.windows(), 1);
    EXPECT_EQ(t.current(), store_kind::regular);
}

// More kinds: one execute whose timed kind takes times[kind].
store_kind stepk(store_tuner &t, const double (&times)[si::n_store_kinds],
                 bool *timed = nullptr) {
    int ticket = -1;
    const store_kind k = t.start(1, ticket);
    if (timed)
        *timed = ticket >= 0;
    if (ticket >= 0)
        t.finish(ticket, times[static_cast<int>(k)]);
    return k;
}

constexpr unsigned bit(store_kind k) {
    return si::store_kind_bit(k);
}
constexpr unsigned all_kinds = bit(store_kind::regular) | bit(store_kind::nt)
                               | bit(store_kind::nt_transpose)
                               | bit(store_kind::regular_transpose)
                               | bit(store_kind::nt_prefetch);

TEST(store_tuner, KindsAlwaysHoldRegularAndAnother) {
    EXPECT_EQ(store_tuner().kinds(),
              bit(store_kind::regular) | bit(store_kind::nt));
    EXPECT_EQ(store_tuner(0).kinds(),
              bit(store_kind::regular) | bit(store_kind::nt));
    EXPECT_EQ(store_tuner(bit(store_kind::regular)).kinds(),
              bit(store_kind::regular) | bit(store_kind::nt));
    EXPECT_EQ(store_tuner(bit(store_kind::regular_transpose)).kinds(),
              bit(store_kind::regular) | bit(store_kind::regular_transpose));
    EXPECT_EQ(store_tuner(all_kinds | 0x60u).kinds(), all_kinds);
    EXPECT_EQ(store_tuner(all_kinds).ways(), 5);
    EXPECT_EQ(store_tuner(all_kinds).window_phases(), 6);
    // A tuner never hands out a kind it was not given.
    store_tuner t(bit(store_kind::nt) | bit(store_kind::regular_transpose));
    const double times[5] = { 1.0, 0.9, 0.1, 0.5, 0.05 };
    for (uint64_t i = 0; i < 4 * store_tuner::first_recheck; ++i)
        EXPECT_NE(stepk(t, times), store_kind::nt_transpose);
    EXPECT_EQ(t.current(), store_kind::regular_transpose);
    EXPECT_EQ(t.last_window(store_kind::nt_transpose), 0.0);
    EXPECT_EQ(t.last_window(store_kind::nt_prefetch), 0.0);
}

TEST(store_tuner, EachKindInTurnAndTheFastestTaken) {
    store_tuner t(all_kinds);
    const double times[5] = { 1.0, 0.8, 0.5, 0.9, 0.7 };
    const int phase = 1 + min_timed;
    const int window = 6 * phase;
    // Regular first, then the others in kind order, then regular again.
    const store_kind first[6] = {
        store_kind::regular,      store_kind::nt,
        store_kind::nt_transpose, store_kind::regular_transpose,
        store_kind::nt_prefetch,  store_kind::regular
    };
    for (int i = 0; i < window; ++i) {
        bool tm = false;
        EXPECT_EQ(stepk(t, times, &tm), first[i / phase]) << "execute " << i;
        EXPECT_EQ(tm, i % phase != 0) << "execute " << i;
    }
    ASSERT_EQ(t.windows(), 1);
    EXPECT_EQ(t.current(), store_kind::nt_transpose);
    for (int k = 0; k < si::n_store_kinds; ++k)
        EXPECT_EQ(t.last_window(static_cast<store_kind>(k)), times[k]);
    for (uint64_t i = 0; i < store_tuner::confirm; ++i)
        EXPECT_EQ(stepk(t, times), store_kind::nt_transpose);
    // The confirming window starts from the choice, then the others in
    // kind order.
    const store_kind second[6] = {
        store_kind::nt_transpose, store_kind::regular,
        store_kind::nt,           store_kind::regular_transpose,
        store_kind::nt_prefetch,  store_kind::nt_transpose
    };
    for (int i = 0; i < window; ++i)
        EXPECT_EQ(stepk(t, times), second[i / phase]) << "execute " << i;
    EXPECT_EQ(t.windows(), 2);
    EXPECT_EQ(t.current(), store_kind::nt_transpose);
}

TEST(store_tuner, MoreKindsSwitchToTheFastestOtherOnlyByTheMargin) {
    const unsigned three = bit(store_kind::regular) | bit(store_kind::nt)
                           | bit(store_kind::nt_transpose);
    const int window = 4 * (1 + min_timed);
    // nt fastest: from regular to nt, not to the slower nt_transpose.
    {
        store_tuner t(three);
        const double times[5] = { 1.0, 0.5, 0.7, 0.0, 0.0 };
        for (int i = 0; i < window; ++i)
            stepk(t, times);
        ASSERT_EQ(t.windows(), 1);
        EXPECT_EQ(t.current(), store_kind::nt);
    }
    // Both others within the first margin of regular: regular is kept.
    {
        store_tuner t(three);
        const double near = 1.0 - store_tuner::first_margin / 2;
        const double times[5] = { 1.0, near, near, 0.0, 0.0 };
        for (int i = 0; i < window; ++i)
            stepk(t, times);
        ASSERT_EQ(t.windows(), 1);
        EXPECT_EQ(t.current(), store_kind::regular);
    }
    // After the first decision, nt_transpose only if faster than the
    // choice by the switch margin.
    {
        store_tuner t(three);
        double times[5] = { 1.0, 0.5, 0.6, 0.0, 0.0 };
        for (uint64_t i = 0; i < 2 * window + store_tuner::confirm; ++i)
            stepk(t, times);
        ASSERT_EQ(t.windows(), 2);
        ASSERT_EQ(t.current(), store_kind::nt);
        times[2] = 0.5 * (1.0 - store_tuner::switch_margin / 2);
        for (uint64_t i = 0;
             t.windows() == 2 && i < 2 * store_tuner::first_recheck; ++i)
            stepk(t, times);
        ASSERT_EQ(t.windows(), 3);
        EXPECT_EQ(t.current(), store_kind::nt);
        times[2] = 0.5 * (1.0 - 2 * store_tuner::switch_margin);
        for (uint64_t i = 0;
             t.windows() == 3 && i < 4 * store_tuner::first_recheck; ++i)
            stepk(t, times);
        ASSERT_EQ(t.windows(), 4);
        EXPECT_EQ(t.current(), store_kind::nt_transpose);
    }
}

TEST(store_tuner, ConcurrentExecutesAreNotTimedWhileOneIs) {
    store_tuner t;
    int ticket = -1;
    EXPECT_EQ(t.start(1, ticket), store_kind::regular); // untimed first
    EXPECT_LT(ticket, 0);
    int timed = -1;
    EXPECT_EQ(t.start(1, timed), store_kind::regular);
    ASSERT_GE(timed, 0);
    for (int i = 0; i < 10; ++i) {
        int other = 0;
        EXPECT_EQ(t.start(1, other), store_kind::regular);
        EXPECT_LT(other, 0) << "a second execute timed while one is";
    }
    t.finish(timed, 1.0);
    int next = -1;
    t.start(1, next);
    EXPECT_GE(next, 0) << "timing resumes once the timed execute finished";
    t.finish(next, 1.0);
}

using store_policy_plans = isa_test;

TEST_P(store_policy_plans, TunerOnlyWithTheNonTemporalKernel) {
    const si::select_nd p = make_nd({ 3, 100 }, { 3, 100 }, {}, 4);
    const si::select_plan small =
            si::plan_select(p, si::nt_candidate_bytes() - 1);
    EXPECT_FALSE(small.kernel_nt);
    EXPECT_FALSE(small.tuner);
    const si::select_plan big = si::plan_select(p, si::nt_candidate_bytes());
    ASSERT_TRUE(big.kernel_nt);
    ASSERT_TRUE(big.tuner);
    EXPECT_EQ(big.tuner->current(), store_kind::regular);
    // Copies of a plan (compiled partition copies) share one tuner.
    const si::select_plan copy = big;
    EXPECT_EQ(copy.tuner.get(), big.tuner.get());
}

// The store kind an execute of `plan` ran, from what execute_plan reports.
store_kind kind_ran(const si::select_plan &plan, const si::executed &e) {
    if (plan.kernel_nt_pf && e.kernel == plan.kernel_nt_pf.get())
        return store_kind::nt_prefetch;
    if (plan.kernel_dt && e.kernel == plan.kernel.get())
        return e.nt ? store_kind::nt_transpose : store_kind::regular_transpose;
    return e.nt ? store_kind::nt : store_kind::regular;
}

// Runs `plan` through execute_plan without a forced store kind until its
// tuner completes a window: every result bit-exact, and every kind of the
// plan ran.
void run_first_window(const si::select_plan &plan, const si::select_nd &p,
                      size_t misd, std::mt19937_64 &g) {
    ASSERT_TRUE(plan.tuner) << plan.kernel_str();
    ASSERT_EQ(plan.tuner->kinds(), plan.store_kinds());
    nd_buffers b(p, g, 0, 0, misd);
    const size_t dbytes = b.dst.size();
    std::vector<uint8_t> want(b.dst.data(), b.dst.data() + dbytes);
    si::ref_select(p, b.cond.data(), b.src0.data(), b.src1.data(), want.data(),
                   1);
    unsigned ran = 0;
    for (int i = 0;
         plan.tuner->windows() == 0 && i < store_tuner::max_window_executes;
         ++i) {
        fill_bytes(b.dst.data(), dbytes, g);
        const si::executed e =
                si::execute_plan(plan, p, b.cond.data(), b.src0.data(),
                                 b.src1.data(), b.dst.data(), 1);
        ran |= si::store_kind_bit(kind_ran(plan, e));
        ASSERT_TRUE(bytes_equal(b.dst.data(), want.data(), dbytes, p.elem_size))
                << "execute " << i << ": " << plan.kernel_str();
        ASSERT_TRUE(b.canaries_ok());
    }
    EXPECT_EQ(plan.tuner->windows(), 1) << plan.kernel_str();
    EXPECT_EQ(ran, plan.store_kinds()) << plan.kernel_str();
}

TEST_P(store_policy_plans, ExecutesUnderTheTunerStayExact) {
    // Plans with the tuner, run through execute_plan without a forced
    // store kind: the first window runs each kind of the plan; every
    // result is bit-exact.
    auto &g = rng();
    for (int w : { 4, 2, 1 }) {
        const si::select_nd p = make_nd({ 7, 333 }, { 7, 333 }, { 333 }, w);
        const si::select_plan plan =
                si::plan_select(p, si::nt_candidate_bytes());
        EXPECT_EQ(plan.store_kinds(),
                  si::store_kind_bit(store_kind::regular)
                          | si::store_kind_bit(store_kind::nt));
        run_first_window(plan, p, static_cast<size_t>(w), g);
    }
    // A column-major dst of 4-byte elements, columns 64 elements apart,
    // written by the kernel that transposes in registers: four kinds.
    nd_spec s;
    s.in[0] = s.in[1] = s.in[2] = s.dst = { 64, 100 };
    s.dst_from_inputs = false;
    s.strides[si::op_dst] = { 1, 64 };
    const si::select_nd pd = make_nd(s);
    const si::select_plan plan = si::plan_select(pd, si::nt_candidate_bytes());
    ASSERT_TRUE(plan.kernel_dt_nt) << plan.kernel_str();
    EXPECT_EQ(plan.tuner->ways(), 4);
    run_first_window(plan, pd, 0, g);
}

TEST_P(store_policy_plans, RowsApartAlsoRunTheRowPrefetch) {
    // Rows that lie apart (every operand's rows of 333 elements padded to
    // 340, or src_0's alone): the plan also carries the non-temporal row
    // kernel that prefetches rows ahead, as a third store kind.
    auto &g = rng();
    for (int w : { 4, 2, 1 })
        for (const bool all : { true, false }) {
            nd_spec s;
            s.w = w;
            s.in[0] = s.in[1] = s.in[2] = { 9, 333 };
            s.strides[si::op_src0] = { 340, 1 };
            if (all)
                s.strides[si::op_cond] = s.strides[si::op_src1] = { 340, 1 };
            const si::select_nd p = make_nd(s);
            const std::string at = nd_str(p);
            EXPECT_FALSE(si::plan_select(p, 0).kernel_nt_pf) << at;
            const si::select_plan plan =
                    si::plan_select(p, si::nt_candidate_bytes());
            ASSERT_TRUE(si::rows_lie_apart(plan.folded)) << at;
            ASSERT_TRUE(plan.kernel_nt && plan.kernel_nt_pf) << at;
            si::kernel_key want = plan.kernel_nt->key();
            want.row_prefetch = 1;
            EXPECT_TRUE(plan.kernel_nt_pf->key() == want)
                    << plan.kernel_nt_pf->name();
            EXPECT_EQ(plan.store_kinds(),
                      si::store_kind_bit(store_kind::regular)
                              | si::store_kind_bit(store_kind::nt)
                              | si::store_kind_bit(store_kind::nt_prefetch))
                    << at;
            EXPECT_NE(plan.kernel_str().find("|" + plan.kernel_nt_pf->name()),
                      std::string::npos)
                    << plan.kernel_str();
            run_first_window(plan, p, static_cast<size_t>(w), g);
            // Forced, it runs and is exact at 1 and 2 threads.
            nd_buffers b(p, g);
            std::vector<uint8_t> want_d(b.dst.data(),
                                        b.dst.data() + b.dst.size());
            si::ref_select(p, b.cond.data(), b.src0.data(), b.src1.data(),
                           want_d.data(), 1);
            for (int nthr : { 1, 2 }) {
                const si::executed e = si::execute_plan(
                        plan, p, b.cond.data(), b.src0.data(), b.src1.data(),
                        b.dst.data(), nthr, si::store_override::nt_prefetch);
                EXPECT_EQ(e.kernel, plan.kernel_nt_pf.get()) << at;
                EXPECT_TRUE(e.nt) << at;
                EXPECT_EQ(plan.kernel_str(e), plan.kernel_nt_pf->name()) << at;
                ASSERT_TRUE(bytes_equal(b.dst.data(), want_d.data(),
                                        b.dst.size(), w))
                        << at << ", " << nthr << " threads";
                ASSERT_TRUE(b.canaries_ok()) << at;
            }
        }
    // Rows back to back (folded into one), one row for all (stride 0),
    // rows over 4 KiB, and a transposed operand: no row prefetch.
    const dims_t none[][2] = { { { 9, 333 }, {} },
                               { { 9, 333 }, { 0, 1 } },
                               { { 3, 1100 }, { 1110, 1 } },
                               { { 40, 333 }, { 1, 40 } } };
    for (const auto &c : none) {
        nd_spec s;
        s.in[0] = s.in[1] = s.in[2] = c[0];
        s.strides[si::op_src0] = c[1];
        const si::select_nd p = make_nd(s);
        const si::select_plan plan =
                si::plan_select(p, si::nt_candidate_bytes());
        EXPECT_FALSE(si::rows_lie_apart(plan.folded)) << nd_str(p);
        EXPECT_FALSE(plan.kernel_nt_pf)
                << nd_str(p) << " " << plan.kernel_str();
        EXPECT_FALSE(plan.store_kinds()
                     & si::store_kind_bit(store_kind::nt_prefetch))
                << nd_str(p);
    }
}

TEST_P(store_policy_plans, FollowsSelgraphNtStores) {
    // ctest runs this binary's store tests again with SELGRAPH_NT_STORES
    // set to always and never (tests/CMakeLists.txt).
    const char *env = std::getenv("SELGRAPH_NT_STORES");
    const std::string policy = env ? env : "auto";
    const si::select_nd p = make_nd({ 3, 100 }, { 3, 100 }, {}, 4);
    const si::select_plan small = si::plan_select(p, 0);
    const si::select_plan big = si::plan_select(p, si::nt_candidate_bytes());
    if (policy == "always") {
        EXPECT_TRUE(small.kernel_nt);
        EXPECT_TRUE(big.kernel_nt);
        EXPECT_FALSE(big.tuner);
        // Without a tuner, execute stores non-temporally.
        auto &g = rng();
        nd_buffers b(p, g);
        const si::executed ran =
                si::execute_plan(big, p, b.cond.data(), b.src0.data(),
                                 b.src1.data(), b.dst.data(), 1);
        ASSERT_TRUE(ran.kernel);
        EXPECT_EQ(ran.kernel->key().nt_stores, 1);
        EXPECT_TRUE(ran.nt);
    } else if (policy == "never") {
        EXPECT_FALSE(small.kernel_nt);
        EXPECT_FALSE(big.kernel_nt);
        EXPECT_FALSE(big.tuner);
    } else {
        EXPECT_FALSE(small.kernel_nt);
        EXPECT_TRUE(big.kernel_nt);
        EXPECT_TRUE(big.tuner);
    }

    // A column-major dst over row-major inputs (its columns padded to 68
    // elements, 272 bytes apart, off the cache lines): non-temporally, it
    // is stored by its transpose from the tile's scratch, the nt variant
    // being the transpose's; with regular stores, it is written by the
    // kernel that transposes in registers, which has no nt variant here.
    nd_spec s;
    s.in[0] = s.in[1] = s.in[2] = s.dst = { 64, 100 };
    s.dst_from_inputs = false;
    s.strides[si::op_dst] = { 1, 68 };
    const si::select_nd pt = make_nd(s);
    const si::select_plan tsmall = si::plan_select(pt, 0);
    const si::select_plan tbig = si::plan_select(pt, si::nt_candidate_bytes());
    ASSERT_TRUE(tbig.transpose[si::op_dst]) << tbig.kernel_str();
    const std::string isa = si::kernel_isa2str(kisa());
    EXPECT_TRUE(tbig.kernel_dt) << tbig.kernel_str();
    EXPECT_FALSE(tbig.kernel_dt_nt) << tbig.kernel_str();
    EXPECT_FALSE(tsmall.kernel_nt);
    EXPECT_FALSE(tbig.kernel_nt);
    const std::string nt_name =
            std::string(si::kernel_isa2str(kisa())) + "_tr_e4_nt";
    if (policy == "never") {
        EXPECT_FALSE(tbig.transpose_dst_nt);
        EXPECT_FALSE(tbig.tuner);
    } else {
        EXPECT_EQ(policy == "always", tsmall.transpose_dst_nt != nullptr);
        ASSERT_TRUE(tbig.transpose_dst_nt);
        EXPECT_EQ(tbig.transpose_dst_nt->name(), nt_name);
        EXPECT_EQ(policy != "always", tbig.tuner != nullptr);
        EXPECT_NE(tbig.kernel_str().find("|" + nt_name), std::string::npos)
                << tbig.kernel_str();
    }
    // Whichever stores it picks, dst is exact (and its padding kept).
    auto &g = rng();
    nd_buffers b(pt, g);
    fill_bytes(b.dst.data(), b.dst.size(), g);
    const std::vector<uint8_t> init(b.dst.data(), b.dst.data() + b.dst.size());
    std::vector<uint8_t> want = init;
    si::ref_select(pt, b.cond.data(), b.src0.data(), b.src1.data(), want.data(),
                   1);
    si::executed ran;
    for (int i = 0; i < 3; ++i) {
        std::memcpy(b.dst.data(), init.data(), init.size());
        ran = si::execute_plan(tbig, pt, b.cond.data(), b.src0.data(),
                               b.src1.data(), b.dst.data(), 1);
        ASSERT_TRUE(bytes_equal(b.dst.data(), want.data(), b.dst.size(), 4))
                << "execute " << i;
    }
    // The exec line names the transpose that stored dst, or the kernel
    // that wrote it alone.
    const std::string exec = tbig.kernel_str(ran);
    const std::string tr_name =
            std::string(si::kernel_isa2str(kisa())) + "_tr_e4";
    // The kernel writing dst itself; it prefetches on Zen 4 (dispatch.cpp).
    const std::string dt_name =
            isa + "_e4_cv_av_bv_dt"
            + (si::this_cpu_tuning().dt_prefetch_dwords ? "_pf" : "");
    ASSERT_TRUE(ran.kernel);
    // Three executes of a fresh tuner stay in its first phase, the regular
    // kind: by the kernel writing dst, or dst's nt transpose where pinned.
    if (tbig.tuner) {
        EXPECT_EQ(tbig.tuner->current(), store_kind::regular);
    }
    const bool by_dt = !ran.nt;
    EXPECT_EQ(ran.kernel, by_dt ? tbig.kernel_dt.get() : tbig.kernel.get());
    if (policy == "always") {
        EXPECT_TRUE(ran.nt);
        EXPECT_EQ(exec, ran.kernel->name() + "+d:" + nt_name);
    } else if (policy == "never") {
        EXPECT_FALSE(ran.nt);
        EXPECT_EQ(exec, by_dt ? dt_name : ran.kernel->name() + "+d:" + tr_name);
    }

    // Its columns 64 elements (256 bytes) apart: the kernel that writes
    // the transposed dst itself has its nt variant too, where the plan
    // stores non-temporally, and the exec line names it alone.
    s.strides[si::op_dst] = { 1, 64 };
    const si::select_nd pd = make_nd(s);
    const si::select_plan dbig = si::plan_select(pd, si::nt_candidate_bytes());
    ASSERT_TRUE(dbig.kernel) << dbig.kernel_str();
    ASSERT_TRUE(dbig.kernel_dt) << dbig.kernel_str();
    EXPECT_EQ(dbig.kernel_dt->name(), dt_name);
    EXPECT_EQ(policy != "never", dbig.kernel_dt_nt != nullptr);
    if (dbig.kernel_dt_nt) {
        EXPECT_EQ(dbig.kernel_dt_nt->name(), dt_name + "_nt");
    }
    EXPECT_NE(dbig.kernel_str().find("+dt:" + dt_name), std::string::npos)
            << dbig.kernel_str();
    nd_buffers bd(pd, g);
    std::vector<uint8_t> want_d(bd.dst.size());
    si::ref_select(pd, bd.cond.data(), bd.src0.data(), bd.src1.data(),
                   want_d.data(), 1);
    for (int i = 0; i < 3; ++i) {
        fill_bytes(bd.dst.data(), bd.dst.size(), g);
        ran = si::execute_plan(dbig, pd, bd.cond.data(), bd.src0.data(),
                               bd.src1.data(), bd.dst.data(), 1);
        ASSERT_TRUE(bytes_equal(bd.dst.data(), want_d.data(), bd.dst.size(), 4))
                << "execute " << i;
        ASSERT_TRUE(bd.canaries_ok());
    }
    ASSERT_TRUE(ran.kernel);
    EXPECT_EQ(ran.kernel,
              ran.nt ? dbig.kernel_dt_nt.get() : dbig.kernel_dt.get());
    EXPECT_EQ(dbig.kernel_str(ran), ran.kernel->name());
    if (policy == "always") {
        EXPECT_TRUE(ran.nt);
    } else if (policy == "never") {
        EXPECT_FALSE(ran.nt);
    }

    // The kinds of storing those dsts: regular (and nt) by the kernel
    // writing dst, or by dst's transposes from the scratch. Off the cache
    // lines (tbig) the nt kind already is the transpose's; whole lines
    // (dbig) have both nt kinds. The tuner chooses among them.
    using K = store_kind;
    const unsigned dt_kinds =
            si::store_kind_bit(K::regular)
            | si::store_kind_bit(K::regular_transpose)
            | (policy == "never" ? 0u : si::store_kind_bit(K::nt));
    EXPECT_EQ(tbig.store_kinds(), dt_kinds);
    EXPECT_EQ(dbig.store_kinds(),
              dt_kinds
                      | (policy == "never"
                                 ? 0u
                                 : si::store_kind_bit(K::nt_transpose)));
    if (policy == "auto") {
        ASSERT_TRUE(tbig.tuner);
        ASSERT_TRUE(dbig.tuner);
        EXPECT_EQ(tbig.tuner->kinds(), tbig.store_kinds());
        EXPECT_EQ(dbig.tuner->kinds(), dbig.store_kinds());
    }
    // dst's nt transpose: the plan's ISA, or where transpose_kernel_isa
    // says (dbig's lines 256 bytes apart on Zen 5) AVX2's.
    EXPECT_EQ(dst_nt_transpose_name(tbig, kisa()), nt_name);
    for (const si::select_plan *pl : { &dbig, &tbig }) {
        const si::select_nd &q = pl == &dbig ? pd : pt;
        for (const K k : { K::regular_transpose, K::nt_transpose }) {
            const std::string at = std::string(pl == &dbig ? "dbig" : "tbig")
                                   + ", " + si::store_kind_name(k);
            nd_buffers bq(q, g);
            fill_bytes(bq.dst.data(), bq.dst.size(), g);
            std::vector<uint8_t> want_q(bq.dst.data(),
                                        bq.dst.data() + bq.dst.size());
            si::ref_select(q, bq.cond.data(), bq.src0.data(), bq.src1.data(),
                           want_q.data(), 1);
            ran = si::execute_plan(*pl, q, bq.cond.data(), bq.src0.data(),
                                   bq.src1.data(), bq.dst.data(), 1,
                                   store_override_of(k));
            ASSERT_TRUE(
                    bytes_equal(bq.dst.data(), want_q.data(), bq.dst.size(), 4))
                    << at;
            ASSERT_TRUE(bq.canaries_ok()) << at;
            ASSERT_TRUE(ran.kernel) << at;
            if (k == K::nt_transpose && policy == "never") {
                // No nt kind at all: regular stores by the kernel writing
                // dst.
                EXPECT_FALSE(ran.nt) << at;
                EXPECT_EQ(ran.kernel, pl->kernel_dt.get()) << at;
                continue;
            }
            // By the row kernel and dst's transpose, in both plans.
            const bool nt = k == K::nt_transpose;
            EXPECT_EQ(ran.nt, nt) << at;
            EXPECT_EQ(ran.kernel, pl->kernel.get()) << at;
            EXPECT_EQ(pl->kernel_str(ran),
                      pl->kernel->name() + "+d:"
                              + (nt ? dst_nt_transpose_name(*pl, kisa())
                                    : tr_name))
                    << at;
        }
    }
}

SELGRAPH_INSTANTIATE_PER_JIT_ISA(store_policy_plans);

} // namespace
} // namespace selgraph_test
