#!/usr/bin/env bash
# Configures and builds vkformer with warnings as errors.
# usage: scripts/build.sh [BUILD_DIR] [extra cmake arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVKF_WERROR=ON "$@"
cmake --build "$dir" --parallel "$(nproc)"
