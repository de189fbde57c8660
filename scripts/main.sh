#!/usr/bin/env bash
# The main job: builds vkformer, lists the Vulkan devices, runs a smoke dispatch and the quick
# benchmark (device ceilings, attention and matmul suites) on the best device (lavapipe when
# there is no GPU), keeping its result file for `vkf-bench compare`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh build
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
./build/apps/vkf-info --smoke
./build/apps/vkf-bench run --quick --out build/vkf-bench-quick.json
