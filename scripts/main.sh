#!/usr/bin/env bash
# The main job: builds vkformer, lists the Vulkan devices, then runs the small BLOOM model
# the project trained itself (models/kjv-bloom: 128-token training context) on the best
# device (lavapipe when there is no GPU):
#   1. a text prompt, 64 generated tokens streamed as text, every step's logits checked
#      against the double-precision CPU reference model;
#   2. the ALiBi extrapolation table: held-out perplexity at 1, 2, 4, 8 and 16 times the
#      training length, and its plot (build/kjv-bloom-perplexity.svg).
# usage: scripts/main.sh [--bloom-560m]
#   --bloom-560m  instead: the speed run on a seeded random BLOOM-560m-shaped checkpoint
#                 (made once, 1.1 GB, under ~/.cache/vkformer/models or VKF_MODEL_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh build
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
./build/apps/vkf-info

if [ "${1:-}" = "--bloom-560m" ]; then
  model=${VKF_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vkformer/models/bloom-560m-f16}
  if [ ! -f "$model/config.json" ]; then
    echo "making a random-weight BLOOM-560m-shaped checkpoint in $model (once)"
    rm -rf "$model.partial"
    ./build/apps/vkf-make-checkpoint --preset bloom-560m --dtype f16 --seed 1 --out "$model.partial"
    mv "$model.partial" "$model"
  fi
  exec ./build/apps/vkf-run --model "$model" --prompt-ids 59414,632,267,8760,664,1517,17,4176 \
    --n-predict 32 --check --profile
fi

echo
echo "== text generation: models/kjv-bloom (trained by training/train_kjv_bloom.py) =="
./build/apps/vkf-run --model models/kjv-bloom --prompt "And God said unto Moses," --n-predict 64 --check

echo
echo "== ALiBi extrapolation: held-out perplexity past the 128-token training length =="
./build/apps/vkf-perplexity --model models/kjv-bloom --file models/kjv-bloom/heldout.txt \
  --ctx 128,256,512,1024,2048 --max-tokens 12288 --plot build/kjv-bloom-perplexity.svg
echo "plot: build/kjv-bloom-perplexity.svg"
