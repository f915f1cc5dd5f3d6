#!/usr/bin/env bash
# Installs what cujit needs on a fresh Debian 12 / Ubuntu machine that already has the CUDA
# toolkit (13.0 expected under /usr/local/cuda). Only missing packages are installed, so a
# machine that has them needs no network.
set -euo pipefail

# libhiredis-dev: the build cache's remote tier (Redis); zlib1g-dev: zlib.h, to compress its
# values (libz itself is loaded at run time); redis-server: its tests, which
# start their own server on a loopback port. doxygen: the API reference (`docs` target) and
# the check that every public declaration is documented; pkg-config: the package test;
# openssl: the fleet key commands of docs/fleet.md, which Docs.CommandBlocksRun runs.
packages=(cmake g++ make libgtest-dev libbenchmark-dev libssl-dev nlohmann-json3-dev libcli11-dev
          python3 python3-matplotlib clang libclang-rt-14-dev libhiredis-dev zlib1g-dev redis-server
          doxygen pkg-config openssl)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done

if ((${#missing[@]})); then
  echo "ci/setup.sh: installing ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
else
  echo "ci/setup.sh: all packages present"
fi

cuda_root=${CUDAToolkit_ROOT:-/usr/local/cuda}
if [ ! -x "$cuda_root/bin/nvcc" ] && ! command -v nvcc >/dev/null; then
  echo "ci/setup.sh: no CUDA toolkit at $cuda_root (nvcc not found); install CUDA 13.0" >&2
  exit 2
fi
echo "ci/setup.sh: CUDA toolkit: $("${cuda_root}/bin/nvcc" --version 2>/dev/null | tail -1 || nvcc --version | tail -1)"
