#!/usr/bin/env bash
# Packs selgraph_bench, selgraph_layout_survey and the unit tests
# (selgraph_kernel_tests, selgraph_api_tests) to run on a machine without the
# Debian packages they link (another x86-64 Linux with AVX-512 or AVX2): the
# binaries, every shared library ldd lists, the dynamic loader, report.py,
# run_packed.sh and ab_tuning.sh, into DIR.
#
#   benchmarks/pack.sh DIR [ARCH]     (ARCH: -march= of the peers, default
#                                      x86-64-v4, i.e. AVX-512; x86-64-v3
#                                      for an AVX2-only machine; the tests
#                                      are built for any x86-64)
#
# On the other machine, from DIR:
#   lib/ld-linux-x86-64.so.2 --library-path lib ./selgraph_bench [options]
#   ./run_packed.sh [SECONDS]         (the tests under every ISA, the layout
#                                      suite at 1 thread and every core, the
#                                      survey: run_packed.sh)
#   ./ab_tuning.sh SPECS [FILTER] [ROUNDS] [SECONDS]
#                                     (per-CPU rules or kinds' tables timed
#                                      against the CPU's own tuning:
#                                      ab_tuning.sh)
set -euo pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 DIR [ARCH]" >&2
    exit 2
fi
out=$1
arch=${2:-x86-64-v4}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SELGRAPH_BENCH_BUILD_DIR:-$root/build-bench-$arch}
tests=${SELGRAPH_TEST_BUILD_DIR:-$root/build-pack-tests}

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DSELGRAPH_BUILD_BENCHMARKS=ON -DSELGRAPH_BUILD_TESTS=OFF \
    -DSELGRAPH_BENCH_ARCH="$arch" >/dev/null
cmake --build "$build" --target selgraph_bench selgraph_layout_survey \
    -j"$(nproc)"
cmake -S "$root" -B "$tests" -DCMAKE_BUILD_TYPE=Release \
    -DSELGRAPH_BUILD_BENCHMARKS=OFF -DSELGRAPH_BUILD_TESTS=ON >/dev/null
cmake --build "$tests" --target selgraph_kernel_tests selgraph_api_tests \
    -j"$(nproc)"

rm -rf "$out"
mkdir -p "$out/lib"
cp "$build/benchmarks/selgraph_bench" "$build/benchmarks/selgraph_layout_survey" \
    "$tests/tests/selgraph_kernel_tests" "$tests/tests/selgraph_api_tests" \
    "$out/"
for bin in "$out"/selgraph_*; do
    ldd "$bin" | awk '/=> \// { print $3 }'
done | sort -u | while read -r lib; do
    cp -L "$lib" "$out/lib/"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$out/lib/"
cp "$root/benchmarks/report.py" "$root/benchmarks/run_packed.sh" \
    "$root/benchmarks/ab_tuning.sh" "$out/"
du -sh "$out"
