#!/usr/bin/env bash
# The aarch64 leg (phones are arm64): cross-builds vkformer for aarch64 Linux with Debian's
# cross toolchain against the arm64 libraries of dpkg multiarch, warnings as errors, into
# build-aarch64; checks that the programs are aarch64; runs the Android portability check of the
# library archives (scripts/check_portable_symbols.sh); then runs the test suites under
# qemu-aarch64-static on Debian's arm64 lavapipe with the Khronos validation layer on.
# Installs what it needs first (apt-get; sudo when not root; nothing when all is there).
#
# usage: scripts/test_aarch64.sh [--all]
#   Without --all the tests run are the SUBSET below, chosen to fit about 10 minutes on 2 cores
#   (lavapipe compiles every pipeline with LLVM, which qemu emulates too); --all runs every suite.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-aarch64
all=0
if [ "${1:-}" = "--all" ]; then
  all=1
fi

# The host's tools and arch-independent headers (glslangValidator, spirv-val, cmake, ninja,
# python3-numpy, volk, nlohmann-json, CLI11): what the native build installs.
bash scripts/deps.sh

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  sudo=(sudo)
fi
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
amd64_version() { dpkg-query -W -f='${Version}' "$1:amd64" 2>/dev/null || true; }

update=0
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "vkformer: dpkg --add-architecture arm64"
  "${sudo[@]}" dpkg --add-architecture arm64
  update=1
fi
# Multi-Arch: same packages, installed beside their amd64 versions (never in their place).
# mesa-vulkan-drivers must be the amd64 one's version exactly (Multi-Arch: same): pinned to it.
packages=(g++-aarch64-linux-gnu qemu-user-static
  libvulkan-dev:arm64 libvulkan1:arm64 libfmt-dev:arm64 libpcre2-dev:arm64 libutf8proc-dev:arm64 zlib1g-dev:arm64
  libgtest-dev:arm64 mesa-vulkan-drivers:arm64 vulkan-validationlayers:arm64)
missing=()
for p in "${packages[@]}"; do
  if ! installed "$p"; then
    version=$(amd64_version "${p%:arm64}")
    if [[ "$p" == mesa-vulkan-drivers:arm64 && -n "$version" ]]; then
      p="$p=$version"
    fi
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ] || [ $update -eq 1 ]; then
  echo "vkformer: installing ${missing[*]}"
  "${sudo[@]}" apt-get update -q
  if [ ${#missing[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
fi

# SPIRV-Cross's static libraries: libspirv-cross-c-shared-dev is not Multi-Arch (its arm64
# package would replace the amd64 one the native build links), so its arm64 package is unpacked
# into a folder of its own, which the toolchain file searches first (VKF_CROSS_ROOTS).
sysroot=$PWD/$dir/sysroot
if [ ! -f "$sysroot/usr/lib/aarch64-linux-gnu/libspirv-cross-core.a" ]; then
  version=$(amd64_version libspirv-cross-c-shared-dev)
  tmp=$(mktemp -d)
  chmod 755 "$tmp" # apt-get download fetches as the _apt user where it can
  (cd "$tmp" && apt-get download -q "libspirv-cross-c-shared-dev:arm64${version:+=$version}")
  mkdir -p "$sysroot"
  dpkg -x "$tmp"/libspirv-cross-c-shared-dev_*_arm64.deb "$sysroot"
  rm -rf "$tmp"
fi

# SUBSET: every suite but these, the slowest under qemu, which the x86 legs run in full and whose
# code the rest still runs on arm64 (test_model, test_quantized_model, test_encoder and
# vkf_run_cli: whole forward passes through the attention, matmul, quantized matmul, layernorm,
# embedding and KV kernels; test_attention_alibi_forms, test_attention_naive and test_op_limits:
# the attention and matmul families of the kernel suites below):
#   test_attention (the shape grid) and the suites split from it (test_attention_kernels,
#   test_attention_limits, test_attention_plans, test_attention_arith: the tiled kernel's fp16 and
#   subgroup variants), test_model_attention_f16 (the same fp16 variant in a model), test_attention_window (its float64 reference
#   runs at position 100,003), test_matmul, test_matmul_fused, test_matmul_coopmat (its emulated form:
#   shaders and planning, nothing aarch64),
#   test_matmul_quant and test_matmul_quant_int8 (split from it), test_matmul_f16 (fp16
#   arithmetic: ~25 s of cold llvmpipe compiles on x86 alone), test_model_head_sizes,
#   test_model_faults, test_model_threads, test_prepare, test_model_families, test_batch, test_batch_window,
#   test_model_split, test_split_batch, test_batch_session and test_perplexity_model (more forward passes of the same kernels: per family, per head size,
#   per batch; test_model runs every step through the same Batch code, and
#   test_attention_paged the paged kernels),
#   vkf_families_cli, vkf_quantize_cli, vkf_text_cli, vkf_shell_cli, vkf_split_cli and the four vkf-bench runs (the same
#   programs' other commands; test_bench covers vkf-bench's own code), hf_tokenizers_compare
#   (npm; nothing aarch64 in it), test_capi_model, test_capi_adopt and test_capi_state (the C
#   API over the same forward passes, test_capi_model 21 s of CPU under qemu; the arm64
#   libvkformer.so is built, symbol-checked and run by test_capi_basic), vkf_prompt_cache_cli
#   (a dozen vkf-run loads, each a cold start under qemu), capi_sampler_chain (the sampler
#   chain's ids against vkf-run's: host code, four cold starts), vkf_gguf_families (GGUF
#   architectures mapped by host code, two dozen vkf-run loads: 110 s under qemu) and
#   vkf_kquant_perplexity (llama.cpp's x86 tools beside vkf-perplexity over six GGUF files; the
#   K-quant kernels are test_matmul_kquant's, left out with test_matmul_quant: 62 s), and
#   test_batch_prefix_families (test_batch's forward passes per family again: 114 s),
#   vkf_gguf_write_families (the GGUF writer is host code, which vkf_gguf_write runs here for
#   BLOOM; 15 vkf-run loads and llama.cpp's x86 library), and the CTest entries labelled
#   spec_minimum (the reruns under VKF_LIMITS=spec_minimum) or full (what scripts/test.sh leaves to --full).
skipped='^(test_attention|test_attention_kernels|test_attention_limits|test_attention_plans|test_attention_arith'
skipped+='|test_attention_window|test_model_attention_f16'
skipped+='|test_matmul|test_matmul_fused|test_matmul_quant|test_matmul_quant_int8|test_matmul_f16|test_model_head_sizes'
skipped+='|test_model_faults|test_model_threads|test_prepare|test_model_families|test_batch|test_batch_window|test_perplexity_model'
skipped+='|test_model_split|test_split_batch|test_batch_session|test_matmul_coopmat'
skipped+='|vkf_families_cli|vkf_quantize_cli|vkf_text_cli|vkf_shell_cli|vkf_split_cli|vkf_bench_run_compare|vkf_bench_attention_quick'
skipped+='|vkf_bench_llama|vkf_bench_report'
skipped+='|hf_tokenizers_compare|test_capi_model|test_capi_adopt|test_capi_state|vkf_prompt_cache_cli|capi_sampler_chain'
skipped+='|vkf_gguf_families|vkf_kquant_perplexity|test_matmul_kquant|test_batch_prefix_families|vkf_gguf_write_families)$'
selection=()
if [ $all -eq 0 ]; then
  selection=(-E "$skipped" -LE '^(spec_minimum|full)$')
fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVKF_WERROR=ON \
  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake -DVKF_CROSS_ROOTS="$sysroot" -DVKF_SERVER=OFF \
  -DVKF_SPIRV_DIR="$(bash scripts/spirv_dir.sh)"
# Every library and program, and of the test programs those that the selection runs
# (scripts/test_targets.py): the 24 the SUBSET leaves out took ~75 s of the cross-compiler's CPU.
targets=(all)
if [ $all -eq 0 ]; then
  list=$(python3 scripts/test_targets.py "$dir" "${selection[@]}")
  mapfile -t targets <<<"$list"
fi
cmake --build "$dir" --parallel "$(nproc)" --target "${targets[@]}"

# Every program, test suite and shared library built (the JNI glue of bindings/java, built
# when deps.sh's JDK gives its headers; its Java test runs on the x86 legs) must be aarch64.
checked=0
while IFS= read -r -d '' f; do
  header=$(readelf -h "$f" 2>/dev/null) || continue # not ELF (scripts)
  if ! grep -q 'Machine:.*AArch64' <<<"$header"; then
    echo "test_aarch64: $f is not an aarch64 executable:" >&2
    grep 'Machine:' <<<"$header" >&2
    exit 1
  fi
  checked=$((checked + 1))
done < <(find "$dir/apps" "$dir/tests" "$dir/bindings" -type f -perm -u+x -print0 2>/dev/null)
echo "test_aarch64: $checked programs, test suites and libraries are aarch64 executables"

bash scripts/check_portable_symbols.sh "$dir"

# The tests, under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR; no binfmt_misc needed) on the arm64
# lavapipe only, with the validation layer (arm64 vulkan-validationlayers) on. Debian 12's own
# arm64 lavapipe (Mesa 22.3.6) aborts in LLVM 15's AArch64 instruction selection ("Cannot
# select: v4f32 = truncate", "v4f32 = AArch64ISD::VLSHR ... 16") on every kernel that converts
# fp16 or bf16, so the suites run on bookworm-backports' arm64 Mesa 25.0 lavapipe (same LLVM 15,
# unpacked into build-aarch64/mesa25 like the x86 one; 22.3's arm64 package stays installed for
# the libraries both link).
eval "$(bash scripts/mesa25_driver.sh --arch arm64 "$dir/mesa25")"
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
export VKF_VALIDATION=1
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
# The attention shape grid runs its quick subset (as under the sanitizers).
export VKF_TEST_QUICK=1

ctest --test-dir "$dir" --output-on-failure --parallel "$(nproc)" --timeout 1500 "${selection[@]}"
