#!/usr/bin/env bash
# Runs what a borrowed machine is for, from a directory benchmarks/pack.sh
# made, within SECONDS (default 540), each phase cut short when the time is
# spent. $OUT (default ./out) gets three files: summary.txt,
# test_failures.txt and results.tar.gz (every log and result named below):
#   1. the unit tests, every test under every ISA the CPU has (the kernel
#      tests in shards over the cores), the API tests under each
#      SELGRAPH_MAX_CPU_ISA cap, the SELGRAPH_NT_STORES=always and never runs;
#      summary.txt gets each binary's verdict, test_failures.txt the output
#      before each failure;
#   2. the layout suite at 1 thread (default shapes): l1.json;
#   3. the layout suite at every core beyond the caches
#      (--sg_layout_scale=8), L20 and up first (the cases added last), then
#      L1-L19: lN_hi.json, lN_lo.json;
#   4. one seed of the layout survey at 1 thread, where 30 s are left:
#      survey.txt.
#
#   benchmarks/run_packed.sh [SECONDS]
set -uo pipefail

cd "$(dirname "$0")"
deadline=${1:-540}
start=$(date +%s)
out=${OUT:-out}
res=$out/run
mkdir -p "$res"
ld="lib/ld-linux-x86-64.so.2 --library-path lib"
all=$(nproc)
left() { echo $((deadline - ($(date +%s) - start))); }
# The smaller of $1 seconds and what is left (at least 5).
cap() {
    local l
    l=$(left)
    [ "$l" -lt 5 ] && l=5
    [ "$1" -lt "$l" ] && echo "$1" || echo "$l"
}
log() { echo "[$(($(date +%s) - start))s] $*" | tee -a "$out/summary.txt"; }
{ lscpu; free -g; } > "$res/lscpu.txt" 2>&1

t=$(cap 100)
shards=$((all / 2 > 1 ? all / 2 : 1))
for ((i = 0; i < shards; ++i)); do
    OMP_NUM_THREADS=2 GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i \
        timeout "$t" $ld ./selgraph_kernel_tests > "$res/t_kernels_$i.log" 2>&1 &
done
for isa in ALL AVX2 NONE; do
    SELGRAPH_MAX_CPU_ISA=$isa OMP_NUM_THREADS=4 \
        timeout "$t" $ld ./selgraph_api_tests > "$res/t_api_$isa.log" 2>&1 &
done
for nt in always never; do
    SELGRAPH_NT_STORES=$nt OMP_NUM_THREADS=2 timeout "$t" $ld \
        ./selgraph_kernel_tests --gtest_filter='*FollowsSelgraphNtStores*' \
        > "$res/t_nt_$nt.log" 2>&1 &
done
wait
for f in "$res"/t_*.log; do
    r=$(grep -E '^\[  (PASSED|FAILED)  \]' "$f" | tr '\n' ' ')
    echo "$(basename "$f"): ${r:-NO VERDICT (timed out or crashed): $(tail -n 2 "$f" | tr '\n' ' ')}"
done | tee -a "$out/summary.txt"
grep -h -B30 '^\[  FAILED' "$res"/t_*.log | head -c 200000 > "$out/test_failures.txt"
log tests
bench="$ld ./selgraph_bench --sg_reps=3 --sg_min_time=0.04 --benchmark_out_format=json"
impls="selgraph_avx512|dense_avx512|selgraph_avx2|dense_avx2|reorder_onednn"
OMP_NUM_THREADS=1 timeout "$(cap 190)" $bench \
    --benchmark_filter="^L[0-9]+/[a-z0-9]+/t1/($impls|loop_nd)/" \
    --benchmark_out="$res/l1.json" > "$res/l1.txt" 2>&1
log "layouts at 1 thread: rc $?"
for part in hi lo; do
    [ $part = hi ] && cases='2[0-9]' || cases='[1-9]|1[0-9]'
    OMP_NUM_THREADS=$all timeout "$(cap 150)" $bench --sg_layout_scale=8 \
        --benchmark_filter="^L($cases)/[a-z0-9]+/t$all/($impls)/" \
        --benchmark_out="$res/l${all}_$part.json" > "$res/l${all}_$part.txt" 2>&1
    log "layouts L$cases at $all threads from DRAM: rc $?"
done
if [ "$(left)" -ge 30 ]; then
    OMP_NUM_THREADS=1 timeout "$(cap 60)" $ld ./selgraph_layout_survey \
        --cases 40 --seed 1 > "$res/survey.txt" 2>&1
    log "survey: rc $?"
fi
log "done, $(left) s left"
tar czf "$out/results.tar.gz" -C "$res" . && rm -rf "$res"
