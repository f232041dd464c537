#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this script):
#
#   1. installs missing Debian packages (scripts/setup-debian.sh)
#   2. Release build with warnings as errors, ctest
#   3. AddressSanitizer + UndefinedBehaviorSanitizer build, ctest
#   4. cmake --install to a temporary prefix, then builds and runs
#      tests/consumer against it (find_package(selgraph CONFIG))
#   5. libFuzzer targets (clang-14, ASan+UBSan), FUZZ_SECONDS (default 45)
#      each, from the corpus in fuzz/corpus/
#   6. ThreadSanitizer with LLVM's OpenMP and its Archer tool (clang-14):
#      the concurrency tests, which must report no race
#   7. clang-format --dry-run --Werror over the repository's C++ files
#
# Build trees go to build-test/ (gitignored) and are reused by later runs.
# JOBS (default 2) sets build and ctest parallelism. Exits nonzero at the
# first failing step.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
jobs=${JOBS:-2}
out=$root/build-test
start=$SECONDS

step() { printf '\n=== [%ds] %s\n' $((SECONDS - start)) "$*"; }

# Runs ctest in $1 and insists on its closing "100% tests passed" line: a
# tree where no test was registered must not pass silently.
run_ctest() {
    local dir=$1 log=$1/ctest.log
    ctest --test-dir "$dir" --output-on-failure --timeout 900 \
        --parallel "$jobs" 2>&1 | tee "$log"
    if ! grep -Eq '^100% tests passed, 0 tests failed out of [1-9]' "$log"; then
        echo "test.sh: ctest in $dir did not pass every test" >&2
        exit 1
    fi
}

step "packages"
bash "$root/scripts/setup-debian.sh"

step "Release build (-DSELGRAPH_WERROR=ON)"
cmake -S "$root" -B "$out/release" -DCMAKE_BUILD_TYPE=Release \
    -DSELGRAPH_WERROR=ON
cmake --build "$out/release" --parallel "$jobs"

step "ctest (Release)"
run_ctest "$out/release"

step "AddressSanitizer + UndefinedBehaviorSanitizer build"
# Debug: the sanitizers need no optimisation, and the test binaries build in
# half the time of -O2 (the whole ASan leg is then faster despite slower runs).
cmake -S "$root" -B "$out/asan" -DCMAKE_BUILD_TYPE=Debug \
    -DSELGRAPH_WERROR=ON -DSELGRAPH_SANITIZE=address,undefined
cmake --build "$out/asan" --parallel "$jobs"

# Leak checking needs ptrace, which some containers forbid; probe it with the
# example and only turn it off if LeakSanitizer itself cannot run.
leaks=1
probe=$(ASAN_OPTIONS=detect_leaks=1 "$out/asan/examples/selgraph_example" 2>&1 || true)
if grep -q "LeakSanitizer has encountered a fatal error" <<<"$probe"; then
    echo "test.sh: LeakSanitizer cannot run here (ptrace); detect_leaks=0"
    leaks=0
fi
# The JIT kernels are not instrumented (ASan sees their calls, not their
# loads and stores); the tests compare them with the instrumented reference.
export ASAN_OPTIONS="detect_leaks=$leaks:halt_on_error=1:abort_on_error=0:strict_string_checks=1:check_initialization_order=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

step "ctest (ASan+UBSan, $ASAN_OPTIONS)"
run_ctest "$out/asan"
unset ASAN_OPTIONS UBSAN_OPTIONS

step "install + consumer project"
prefix=$(mktemp -d "${TMPDIR:-/tmp}/selgraph-install.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
cmake --install "$out/release" --prefix "$prefix"
rm -rf "$out/consumer"
cmake -S "$root/tests/consumer" -B "$out/consumer" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
cmake --build "$out/consumer" --parallel "$jobs"
"$out/consumer/selgraph_consumer"

step "fuzz targets (clang-14, libFuzzer, ASan+UBSan)"
fuzz_seconds=${FUZZ_SECONDS:-45}
cmake -S "$root" -B "$out/fuzz" -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSELGRAPH_WERROR=ON \
    -DSELGRAPH_BUILD_FUZZERS=ON -DSELGRAPH_BUILD_TESTS=OFF \
    -DSELGRAPH_BUILD_EXAMPLES=OFF -DSELGRAPH_BUILD_TOOLS=OFF \
    -DSELGRAPH_SANITIZE=address,undefined,fuzzer-no-link
cmake --build "$out/fuzz" --parallel "$jobs"
for target in json_graph select_exec; do
    # New inputs go to a scratch directory, never into the checked-in corpus.
    scratch="$out/fuzz/corpus-$target"
    mkdir -p "$scratch"
    log="$out/fuzz/fuzz_$target.log"
    (cd "$out/fuzz" && OMP_NUM_THREADS=2 \
        ASAN_OPTIONS=detect_leaks=$leaks:halt_on_error=1 \
        "./fuzz/fuzz_$target" -max_total_time="$fuzz_seconds" -timeout=20 \
        -max_len=16384 -print_final_stats=1 "$scratch" \
        "$root/fuzz/corpus/$target") >"$log" 2>&1 || {
        tail -n 60 "$log"
        echo "test.sh: fuzz_$target found a failure" >&2
        exit 1
    }
    grep -E '^(Done [0-9]+ runs|stat::number_of_executed_units)' "$log"
done

step "ThreadSanitizer + LLVM OpenMP + Archer (clang-14)"
# Built against LLVM's libomp (clang's -fopenmp), whose Archer tool tells
# TSan about OpenMP's barriers; the runtime itself is not instrumented
# (ignore_noninstrumented_modules). Only the API test binary is built.
archer=/usr/lib/llvm-14/lib/libarcher.so
cmake -S "$root" -B "$out/tsan" -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSELGRAPH_WERROR=ON \
    -DSELGRAPH_SANITIZE=thread -DSELGRAPH_BUILD_EXAMPLES=OFF \
    -DSELGRAPH_BUILD_TOOLS=OFF
cmake --build "$out/tsan" --parallel "$jobs" --target selgraph_api_tests
for isa in ALL NONE; do
    log="$out/tsan/concurrency_$isa.log"
    SELGRAPH_MAX_CPU_ISA=$isa OMP_NUM_THREADS=4 \
        OMP_TOOL_LIBRARIES=$archer ARCHER_OPTIONS=verbose=1 \
        TSAN_OPTIONS="ignore_noninstrumented_modules=1:halt_on_error=1:exitcode=66" \
        "$out/tsan/tests/selgraph_api_tests" \
        --gtest_filter='ApiConcurrency.*' >"$log" 2>&1 || {
        tail -n 80 "$log"
        echo "test.sh: ThreadSanitizer leg failed (ISA $isa)" >&2
        exit 1
    }
    grep -q 'Archer detected OpenMP application with TSan' "$log" || {
        echo "test.sh: Archer did not load ($archer)" >&2
        exit 1
    }
    races=$(grep -c 'WARNING: ThreadSanitizer' "$log" || true)
    [[ $races -eq 0 ]] || { echo "test.sh: $races TSan reports" >&2; exit 1; }
    echo "tsan (ISA $isa): $(grep -E '^\[  PASSED  \]' "$log"), 0 reports"
done

step "clang-format"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t sources < <(git -C "$root" ls-files --cached --others \
        --exclude-standard -- '*.cpp' '*.hpp' '*.h' '*.cc')
else
    mapfile -t sources < <(find . \( -path './build*' -o -path './_install*' \
        -o -path './.git' \) -prune -o -type f \
        \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cc' \) \
        -print | sed 's|^\./||')
fi
# git ls-files also lists tracked files deleted in the work tree.
existing=()
for f in "${sources[@]}"; do [[ -f $f ]] && existing+=("$f"); done
clang-format --dry-run --Werror "${existing[@]}"
echo "clang-format: ${#existing[@]} files clean"

step "all passed in $((SECONDS - start)) s"
