#!/usr/bin/env bash
# Builds selgraph_bench (Release) and runs the whole benchmark, then the
# report: OUT_DIR gets results.json (Google Benchmark JSON), console.txt,
# lscpu.txt, report.md (tables) and performance.png (plot).
#
#   benchmarks/run.sh OUT_DIR [selgraph_bench options...]
#
# e.g. benchmarks/run.sh /tmp/bench --benchmark_filter='^S2/'  (one case),
#      benchmarks/run.sh /tmp/bench --sg_reps=3 --sg_min_time=0.05  (quick).
# The build directory is $SELGRAPH_BENCH_BUILD_DIR, default build-bench.
set -euo pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 OUT_DIR [selgraph_bench options...]" >&2
    exit 2
fi
out=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SELGRAPH_BENCH_BUILD_DIR:-$root/build-bench}

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DSELGRAPH_BUILD_BENCHMARKS=ON -DSELGRAPH_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target selgraph_bench -j"$(nproc)"

mkdir -p "$out"
lscpu >"$out/lscpu.txt" 2>/dev/null || true
# Repetitions are interleaved at random across all benchmarks: on a shared
# machine whose bandwidth drifts over seconds, each median then samples the
# whole run instead of one second of it, and same-run ratios stay fair.
"$build/benchmarks/selgraph_bench" --sg_reps=5 --sg_min_time=0.1 \
    --benchmark_enable_random_interleaving=true \
    --benchmark_out="$out/results.json" --benchmark_out_format=json "$@" \
    | tee "$out/console.txt"

# The report needs a Python with matplotlib for the plot (Debian's
# python3-matplotlib lives in /usr/bin/python3, which a pyenv python3 on
# PATH may hide).
py=python3
for cand in python3 /usr/bin/python3; do
    if command -v "$cand" >/dev/null 2>&1 \
        && "$cand" -c 'import matplotlib' >/dev/null 2>&1; then
        py=$cand
        break
    fi
done
"$py" "$root/benchmarks/report.py" "$out/results.json" \
    --md "$out/report.md" --png "$out/performance.png"
echo "report: $out/report.md, plot: $out/performance.png"
