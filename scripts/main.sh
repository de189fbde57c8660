#!/usr/bin/env bash
# The main job: builds vkformer, lists the Vulkan devices, runs a smoke dispatch and a quick
# tiled-vs-naive attention benchmark on the best device (lavapipe when there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh build
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
./build/apps/vkf-info --smoke
./build/apps/vkf-bench attention --quick
