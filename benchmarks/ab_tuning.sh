#!/usr/bin/env bash
# Times one change of the dispatcher's per-CPU tuning against this CPU's
# own, from one binary: alternating runs of selgraph_bench without and with
# SELGRAPH_CPU_TUNING=SPEC (README, Environment variables), so that a rule
# measured on one CPU is measured on another within one borrowed session.
#
#   benchmarks/ab_tuning.sh SPEC [FILTER] [ROUNDS] [SECONDS]
#
# FILTER: a --benchmark_filter (default: the layout cases with a transposed
# operand, f32 and bf16, 1 thread, the AVX-512 plan and its dense case);
# ROUNDS: pairs of runs (default 3); SECONDS: a cap on the whole (default
# 300), each run cut short once it is spent. Run from the directory
# benchmarks/pack.sh made (BENCH, the command to run, defaults to the
# packed selgraph_bench through its loader). $OUT (default ./out) gets each
# run's console output (ab_<round>_own.txt, ab_<round>_spec.txt) and
# summary.txt: per benchmark, the median over rounds of each side's median
# time and their ratio (SPEC over own: below 1, SPEC ran faster). The plan
# labels in the outputs name the kernels each side picked.
set -uo pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 SPEC [FILTER] [ROUNDS] [SECONDS]" >&2
    exit 2
fi
spec=$1
filter=${2:-'^L([4-9]|1[0-9]|2[0-4])/(f32|bf16)/t1/(selgraph|dense)_avx512/'}
rounds=${3:-3}
deadline=${4:-300}
cd "$(dirname "$0")"
out=${OUT:-out}
mkdir -p "$out"
bench=${BENCH:-"lib/ld-linux-x86-64.so.2 --library-path lib ./selgraph_bench"}
start=$(date +%s)
left() { echo $((deadline - ($(date +%s) - start))); }
for ((r = 1; r <= rounds; ++r)); do
    for side in own spec; do
        l=$(left)
        [ "$l" -lt 5 ] && break 2
        if [ $side = spec ]; then
            export SELGRAPH_CPU_TUNING=$spec
        else
            unset SELGRAPH_CPU_TUNING
        fi
        timeout "$l" $bench --sg_reps=3 --sg_min_time=0.04 \
            --benchmark_filter="$filter" > "$out/ab_${r}_$side.txt" 2>&1
        echo "[$(($(date +%s) - start))s] round $r $side: rc $?"
    done
done
unset SELGRAPH_CPU_TUNING
python3 - "$out" "$spec" > "$out/summary.txt" <<'EOF'
import glob, re, statistics, sys
out, spec = sys.argv[1], sys.argv[2]
unit = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
times = {}  # (name, side) -> [us per round]
for path in sorted(glob.glob(out + "/ab_*_*.txt")):
    side = path.rsplit("_", 1)[1][:-4]
    for line in open(path):
        m = re.match(r"(\S+?)/min_time\S*_median\s+([\d.]+) (\w+)", line)
        if m:
            times.setdefault((m.group(1), side), []).append(
                float(m.group(2)) * unit[m.group(3)])
print(f"SELGRAPH_CPU_TUNING={spec} against the CPU's own tuning: "
      "medians over rounds, us")
print(f"{'benchmark':48s} {'own':>10s} {'spec':>10s} {'spec/own':>9s} rounds")
for name in sorted({k[0] for k in times}):
    a, b = times.get((name, "own"), []), times.get((name, "spec"), [])
    if a and b:
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"{name:48s} {ma:10.1f} {mb:10.1f} {mb / ma:9.3f} "
              f"{min(len(a), len(b))}")
EOF
cat "$out/summary.txt"
