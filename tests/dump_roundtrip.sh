#!/usr/bin/env bash
# A dump -> load round trip through selgraph_benchdnn: the driver runs a case
# with SELGRAPH_GRAPH_DUMP=graph,subgraph, then runs again, unchanged, on
# every file the first run dumped.
#
#   dump_roundtrip.sh DRIVER WORKDIR CASE.json
set -euo pipefail
driver=$1 work=$2 case=$3
rm -rf "$work"
mkdir -p "$work"
cd "$work"
SELGRAPH_GRAPH_DUMP=graph,subgraph "$driver" --graph --case="$case"
shopt -s nullglob
dumps=(selgraph_graph_*.json selgraph_partition_*.json)
if [[ ${#dumps[@]} -lt 2 ]]; then
    echo "dump_roundtrip: expected a graph and a partition dump, got: ${dumps[*]}" >&2
    exit 1
fi
args=()
for f in "${dumps[@]}"; do args+=("--case=$f"); done
out=$("$driver" --graph "${args[@]}")
printf '%s\n' "$out"
n=${#dumps[@]}
grep -Eq "^tests:$n passed:[1-9][0-9]* skipped:0 mistrusted:0 unimplemented:[0-9]+ invalid_arguments:0 failed:0 listed:0$" <<<"$out"
# A partition dump holds the Select alone and passes.
for f in selgraph_partition_*.json; do
    grep -q '"kind": "Select"' "$f"
done
grep -Eq "^[0-9]+:PASSED .*--case=selgraph_partition_" <<<"$out"
