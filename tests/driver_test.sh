#!/usr/bin/env bash
# Runs selgraph_benchdnn and checks its exit status and output.
#
#   driver_test.sh EXPECTED_RC SUMMARY_REGEX [--grep REGEX]... -- DRIVER ARGS...
#
# The last line must match SUMMARY_REGEX (benchdnn's summary line); each
# --grep REGEX must match some line of the output.
set -uo pipefail
want_rc=$1 summary=$2
shift 2
greps=()
while [[ $1 != -- ]]; do
    [[ $1 == --grep ]] || { echo "driver_test: bad argument $1" >&2; exit 2; }
    greps+=("$2")
    shift 2
done
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
fail=0
if [[ $rc -ne $want_rc ]]; then
    echo "driver_test: exit status $rc, expected $want_rc" >&2
    fail=1
fi
last=$(printf '%s\n' "$out" | tail -n 1)
if ! grep -Eq -- "$summary" <<<"$last"; then
    echo "driver_test: last line '$last' does not match '$summary'" >&2
    fail=1
fi
for g in "${greps[@]}"; do
    if ! grep -Eq -- "$g" <<<"$out"; then
        echo "driver_test: no line matches '$g'" >&2
        fail=1
    fi
done
exit $fail
