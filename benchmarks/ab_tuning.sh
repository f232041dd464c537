#!/usr/bin/env bash
# Times changes of the dispatcher's per-CPU tuning against this CPU's own,
# from one binary: rounds of selgraph_bench runs, one under the CPU's own
# tuning and one under each SELGRAPH_CPU_TUNING=SPEC (README, Environment
# variables), so that a rule measured on one CPU is measured on another
# within one borrowed session. The order of the sides rotates from round to
# round (own, A, B; then A, B, own; ...), since a run's place in a round
# can favour it.
#
#   benchmarks/ab_tuning.sh SPECS [FILTER] [ROUNDS] [SECONDS]
#
# SPECS: one SELGRAPH_CPU_TUNING value, or several separated by spaces
# ('zen4 zen5'; a value itself has no spaces); FILTER: a --benchmark_filter
# (default: the layout cases with a transposed operand, f32 and bf16, 1
# thread, the AVX-512 plan and its dense case; the thread count is
# OMP_NUM_THREADS's); ROUNDS: rounds (default 3); SECONDS: a cap on the
# whole (default 300), each run cut short once it is spent. Run from the
# directory benchmarks/pack.sh made (BENCH, the command to run, defaults to
# the packed selgraph_bench through its loader); extra selgraph_bench
# options (--sg_layout_scale=4) in BENCH_ARGS. $OUT (default ./out) gets
# each run's console output (ab_<round>_<side>.txt; side own, or s1, s2,
# ... in the order of SPECS) and summary.txt: per benchmark, the median
# over rounds of the CPU's own time, and for each SPEC the median of its
# times over that median, with their range (below 1: SPEC ran faster). The
# plan labels in the outputs name the kernels each side picked.
set -uo pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 SPECS [FILTER] [ROUNDS] [SECONDS]" >&2
    exit 2
fi
read -r -a specs <<< "$1"
if [ ${#specs[@]} -eq 0 ]; then
    echo "$0: no SPEC given" >&2
    exit 2
fi
filter=${2:-'^L([4-9]|1[0-9]|2[0-4])/(f32|bf16)/t1/(selgraph|dense)_avx512/'}
rounds=${3:-3}
deadline=${4:-300}
cd "$(dirname "$0")"
out=${OUT:-out}
mkdir -p "$out"
bench=${BENCH:-"lib/ld-linux-x86-64.so.2 --library-path lib ./selgraph_bench"}
sides=(own)
for ((i = 1; i <= ${#specs[@]}; ++i)); do
    sides+=("s$i")
done
n=${#sides[@]}
start=$(date +%s)
left() { echo $((deadline - ($(date +%s) - start))); }
for ((r = 1; r <= rounds; ++r)); do
    for ((k = 0; k < n; ++k)); do
        i=$(((r - 1 + k) % n))
        side=${sides[$i]}
        l=$(left)
        [ "$l" -lt 5 ] && break 2
        if [ "$i" -gt 0 ]; then
            export SELGRAPH_CPU_TUNING=${specs[$((i - 1))]}
        else
            unset SELGRAPH_CPU_TUNING
        fi
        # shellcheck disable=SC2086 # BENCH and BENCH_ARGS are word lists
        timeout "$l" $bench ${BENCH_ARGS:-} --sg_reps=3 --sg_min_time=0.04 \
            --benchmark_filter="$filter" > "$out/ab_${r}_$side.txt" 2>&1
        echo "[$(($(date +%s) - start))s] round $r $side: rc $?"
    done
done
unset SELGRAPH_CPU_TUNING
python3 - "$out" "${specs[@]}" > "$out/summary.txt" <<'EOF'
import glob, re, statistics, sys
out, specs = sys.argv[1], sys.argv[2:]
unit = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
times = {}  # (name, side) -> [us per round]
for path in sorted(glob.glob(out + "/ab_*_*.txt")):
    side = path.rsplit("_", 1)[1][:-4]
    for line in open(path):
        m = re.match(r"(\S+?)/min_time\S*_median\s+([\d.]+) (\w+)", line)
        if m:
            times.setdefault((m.group(1), side), []).append(
                float(m.group(2)) * unit[m.group(3)])
print("SELGRAPH_CPU_TUNING against the CPU's own tuning: the median of the "
      "own side's rounds (us), and each SPEC's median over it (range)")
for i, s in enumerate(specs, 1):
    print(f"  s{i}: {s}")
head = f"{'benchmark':48s} {'own':>10s}"
for i in range(1, len(specs) + 1):
    head += f" {'s' + str(i):>18s}"
print(head + " rounds")
for name in sorted({k[0] for k in times}):
    a = times.get((name, "own"), [])
    if not a:
        continue
    ma = statistics.median(a)
    row, counts = f"{name:48s} {ma:10.1f}", [len(a)]
    for i in range(1, len(specs) + 1):
        b = times.get((name, f"s{i}"), [])
        if b:
            row += (f" {statistics.median(b) / ma:6.3f} "
                    f"({min(b) / ma:.2f}-{max(b) / ma:.2f})")
            counts.append(len(b))
        else:
            row += f" {'-':>18s}"
    print(f"{row} {min(counts)}")
EOF
cat "$out/summary.txt"
