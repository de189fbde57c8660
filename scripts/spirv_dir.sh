#!/usr/bin/env bash
# Prints build/shaders/spv, brought up to date, for a second build to take its SPIR-V from
# (cmake -DVKF_SPIRV_DIR=..., cmake/VkfShaders.cmake): the sanitizer and aarch64 builds then
# skip glslang and spirv-val (~25 s of CPU each). Prints nothing when there is no configured
# build/ or its shaders cannot be built, and the second build compiles its own.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -f build/build.ninja ] && cmake --build build --target vkf_spirv >&2; then
  echo "$PWD/build/shaders/spv"
fi
