// The harness shared by the benchmark files (defined in bench_main.cpp): the
// thread sweep, the timing loop, the counters and the repetition settings.
#ifndef SELGRAPH_BENCHMARKS_BENCH_HARNESS_HPP
#define SELGRAPH_BENCHMARKS_BENCH_HARNESS_HPP

#include <cstdint>
#include <functional>
#include <vector>

#include <benchmark/benchmark.h>

namespace sgbench {

/// 1, 2, 4, ... up to and including every core present.
std::vector<int> thread_counts();

/// One warm-up call, then Google Benchmark's timing loop over `fn`.
void time_loop(benchmark::State &st, const std::function<void()> &fn);

/// bytes and GBps per call, threads, items (dst elements) per second.
void set_counters(benchmark::State &st, int64_t bytes, int64_t elems,
                  int nthreads);

/// Real time, microseconds, --sg_min_time and --sg_reps repetitions with
/// their aggregates (median, mean, stddev, cv, min).
void finish(benchmark::internal::Benchmark *b);

/// The layout cases L1..L8 (bench_layouts.cpp), their outermost dim times
/// `scale` (--sg_layout_scale; 1: the shapes of docs/performance.md).
void register_layouts(int scale);

/// The transposing kernel alone against memcpy (bench_transpose.cpp).
void register_transpose();

} // namespace sgbench

#endif
