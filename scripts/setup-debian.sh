#!/usr/bin/env bash
# Installs the Debian 12 packages selgraph needs, only those that are
# missing, with apt-get (nothing is downloaded from anywhere else). Run as
# root (or with sudo available). When every package is already installed it
# does nothing and needs no network.
#
#   build-essential cmake     compiler and build system
#   libdnnl-dev               oneDNN: dnnl::engine / dnnl::stream, the API's base
#   ocl-icd-opencl-dev        OpenCL headers that Debian's oneDNN CMake package expects
#   libxbyak-dev              the JIT assembler of the kernels
#   libgtest-dev              the test suite
#   libbenchmark-dev libeigen3-dev python3-matplotlib
#                             benchmarks (Eigen is a peer) and their plots
#   clang-format              the formatting check of scripts/test.sh
#   nlohmann-json3-dev        the JSON graph loader (src/json_graph.cpp)
#   clang-14 libclang-rt-14-dev libomp-14-dev
#                             the fuzz targets (libFuzzer) and the
#                             ThreadSanitizer leg (LLVM's OpenMP and Archer)
set -euo pipefail

packages=(build-essential cmake libdnnl-dev ocl-icd-opencl-dev libxbyak-dev
          libgtest-dev libbenchmark-dev libeigen3-dev python3-matplotlib
          clang-format nlohmann-json3-dev clang-14 libclang-rt-14-dev
          libomp-14-dev)

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "setup-debian: not a Debian system (no dpkg-query); install by hand:" >&2
    echo "  ${packages[*]}" >&2
    exit 1
fi

missing=()
for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ $status == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "setup-debian: all ${#packages[@]} packages are installed"
    exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
        sudo=(sudo)
    else
        echo "setup-debian: missing ${missing[*]}; run as root to install" >&2
        exit 1
    fi
fi

echo "setup-debian: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
