#!/usr/bin/env bash
# Packs selgraph_bench to run on a machine without the Debian packages it
# links (another x86-64 Linux with AVX-512 or AVX2): the binary, every shared
# library ldd lists and the dynamic loader, into DIR.
#
#   benchmarks/pack.sh DIR [ARCH]     (ARCH: -march= of the peers, default
#                                      x86-64-v4, i.e. AVX-512; x86-64-v3
#                                      for an AVX2-only machine)
#
# On the other machine, from DIR:
#   lib/ld-linux-x86-64.so.2 --library-path lib ./selgraph_bench [options]
set -euo pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 DIR [ARCH]" >&2
    exit 2
fi
out=$1
arch=${2:-x86-64-v4}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SELGRAPH_BENCH_BUILD_DIR:-$root/build-bench-$arch}

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DSELGRAPH_BUILD_BENCHMARKS=ON -DSELGRAPH_BUILD_TESTS=OFF \
    -DSELGRAPH_BENCH_ARCH="$arch" >/dev/null
cmake --build "$build" --target selgraph_bench -j"$(nproc)"

rm -rf "$out"
mkdir -p "$out/lib"
cp "$build/benchmarks/selgraph_bench" "$out/"
ldd "$out/selgraph_bench" | awk '/=> \// { print $3 }' | while read -r lib; do
    cp -L "$lib" "$out/lib/"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$out/lib/"
cp "$root/benchmarks/report.py" "$out/"
du -sh "$out"
