#!/usr/bin/env bash
# The main job: builds vkformer, lists the Vulkan devices, makes (once) a seeded random
# BLOOM-560m-shaped checkpoint in the Hugging Face format, and generates 32 tokens with it
# on the best device (lavapipe when there is no GPU), checking every step's logits against
# the double-precision CPU reference model and printing the throughput and where the GPU
# time goes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh build
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
./build/apps/vkf-info

model=${VKF_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vkformer/models/bloom-560m-f16}
if [ ! -f "$model/config.json" ]; then
  echo "making a random-weight BLOOM-560m-shaped checkpoint in $model (once)"
  rm -rf "$model.partial"
  ./build/apps/vkf-make-checkpoint --preset bloom-560m --dtype f16 --seed 1 --out "$model.partial"
  mv "$model.partial" "$model"
fi
./build/apps/vkf-run --model "$model" --prompt-ids 59414,632,267,8760,664,1517,17,4176 \
  --n-predict 32 --check --profile
