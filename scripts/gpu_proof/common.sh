# shellcheck shell=bash disable=SC2034  # sourced: the lists are used by its callers
# Shared by scripts/gpu_proof.sh pack and scripts/gpu_proof/run.sh: what a GPU proof run
# needs, in one place. Sourced, not run.

# Programs, by their path under the build folder.
GPU_PROOF_PROGRAMS="apps/vkf-info apps/vkf-run apps/vkf-attention apps/vkf-make-checkpoint apps/vkf-quantize
apps/bench/vkf-bench"

# The GoogleTest suites that exercise the kernels (attention, matmul, quantized matmul) and
# the models (families, batching, quantized weights), by their path under build/tests.
GPU_PROOF_TESTS="ops/test_attention ops/test_attention_kernels ops/test_attention_arith ops/test_attention_window
ops/test_attention_paged ops/test_matmul ops/test_matmul_coopmat
ops/test_matmul_quant ops/test_matmul_fused model/test_model model/test_model_families model/test_batch
model/test_quantized_model model/test_model_attention_f16 ops/test_matmul_f16"

# The suites whose tolerances follow the arithmetic their plans run (fp16 arithmetic, a GPU's
# default on fp16 and quantized weights and over an fp16 KV cache). The others assert fp32
# arithmetic's bounds (1e-5 and 2e-5 where their references read the stored roundings), so
# the run gives them VKF_LIMITS=no_fp16_arithmetic: on lavapipe under VKF_LIMITS=gpu_attention,
# gpu_matmul eight of them fail their fp32 bounds by fp16 arithmetic's error (1e-4 to 2.5e-3).
GPU_PROOF_FP16_TESTS="test_attention_arith test_matmul_f16 test_matmul_fused test_matmul_coopmat
test_model_attention_f16"

# Random checkpoints: NAME FAMILY and vkf-make-checkpoint's shape options. Each is written in
# f16 and quantized to q8_0 and q4_0 (NAME-f16, NAME-q8_0, NAME-q4_0). The MPT one keeps the
# options Hugging Face's MptForCausalLM reads (no QK LayerNorm, no GQA), so that its logits can
# be compared with theirs. The GPU size: 4 heads of 64, two blocks, vocabulary 2048 (4 MiB in
# f16); --dry-run: the tiny preset.
GPU_PROOF_CHECKPOINTS="bloom bloom
mpt mpt"
GPU_PROOF_SHAPE="--layers 2 --hidden 256 --heads 4 --vocab 2048 --max-seq-len 512"

# make_checkpoints DIR BIN_DIR tiny|gpu: writes the checkpoints above into DIR.
make_checkpoints() {
  local dir=$1 bin=$2 size=$3 shape name family
  if [ "$size" = tiny ]; then shape="--preset tiny"; else shape=$GPU_PROOF_SHAPE; fi
  mkdir -p "$dir"
  while read -r name family; do
    # shellcheck disable=SC2086  # shape holds several options
    "$bin/vkf-make-checkpoint" --out "$dir/$name-f16" --family "$family" $shape --dtype f16 --seed 29 >/dev/null
    "$bin/vkf-quantize" --model "$dir/$name-f16" --out "$dir/$name-q8_0" --to q8_0 >/dev/null
    "$bin/vkf-quantize" --model "$dir/$name-f16" --out "$dir/$name-q4_0" --to q4_0 >/dev/null
  done <<<"$GPU_PROOF_CHECKPOINTS"
}
