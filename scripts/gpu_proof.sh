#!/usr/bin/env bash
# One prepared command for a machine with a GPU (docs/GPU_PROOF.md).
#   scripts/gpu_proof.sh pack [DIR]   here: builds (Release) and packs into DIR (default
#       build/gpu-proof) what the run needs: the stripped programs and suites, Debian's Vulkan
#       loader and validation layer, libfmt (and libstdc++ for an older system) in
#       payload.tar.xz, random checkpoints in models/, and these scripts. Fails over 64 MiB;
#       its last output line is DIR.
#   DIR/gpu_proof.sh run OUT [--dry-run] [--budget S] [--tar FILE]   there: see
#       scripts/gpu_proof/run.sh. From the repository, `run OUT --dry-run` takes build/.
# VKF_BUILD_DIR (default build) is the build folder pack uses; VKF_CMAKE_ARGS adds
# configure options (a compiler launcher, say); VKF_JOBS build jobs (default 2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

usage() {
  echo "usage: $0 pack [DIR] | run OUT [--dry-run] [--build DIR] [--budget SECONDS] [--tar FILE]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
command=$1
shift
case "$command" in
  run) exec bash "$here/gpu_proof/run.sh" "$@" ;;
  pack) ;;
  *) usage ;;
esac
[ $# -le 1 ] || usage

repo=$(cd "$here/.." && pwd)
[ -f "$repo/CMakeLists.txt" ] || { echo "gpu_proof.sh pack: run it from the repository's scripts/" >&2; exit 2; }
# shellcheck source=scripts/gpu_proof/common.sh
source "$here/gpu_proof/common.sh"
limit=$((64 << 20))
t0=$(date +%s)
build=${VKF_BUILD_DIR:-$repo/build}
dir=${1:-$repo/build/gpu-proof}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# --- build what the run needs ----------------------------------------------------------------
targets=()
for p in $GPU_PROOF_PROGRAMS $GPU_PROOF_TESTS; do targets+=("$(basename "$p")"); done
if [ ! -f "$build/CMakeCache.txt" ]; then
  # shellcheck disable=SC2086  # VKF_CMAKE_ARGS holds several options
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVKF_WERROR=ON ${VKF_CMAKE_ARGS:-}
fi
grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$build/CMakeCache.txt" ||
  { echo "gpu_proof.sh pack: $build is not a Release build (VKF_BUILD_DIR names another)" >&2; exit 1; }
cmake --build "$build" --parallel "${VKF_JOBS:-2}" --target "${targets[@]}"

# --- stage: stripped programs and suites, the libraries a bare machine lacks ---------------
stage=$dir/.stage
rm -rf "${stage:?}" "${dir:?}/payload.tar.xz" "${dir:?}/models" "${dir:?}/gpu_proof" "${dir:?}/bin" "${dir:?}/tests" "${dir:?}/lib"
mkdir -p "$stage/bin" "$stage/tests" "$stage/lib/layers" "$stage/lib/fallback"
for p in $GPU_PROOF_PROGRAMS; do strip --strip-unneeded -o "$stage/bin/$(basename "$p")" "$build/$p"; done
for p in $GPU_PROOF_TESTS; do strip --strip-unneeded -o "$stage/tests/$(basename "$p")" "$build/tests/$p"; done

# Debian's loader (the programs dlopen it) and validation layer, its manifest pointing beside it.
multiarch=$(dirname "$(ldconfig -p | awk '/libvulkan\.so\.1 .*x86-64/ {print $NF; exit}')")
layer_json=/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json
for f in "$multiarch/libvulkan.so.1" "$multiarch/libVkLayer_khronos_validation.so" "$layer_json"; do
  [ -e "$f" ] || { echo "gpu_proof.sh pack: $f is missing (apt-get install libvulkan1 vulkan-validationlayers)" >&2; exit 1; }
done
cp -L "$multiarch/libvulkan.so.1" "$multiarch/libVkLayer_khronos_validation.so" "$stage/lib/"
sed 's|"library_path": *"[^"]*"|"library_path": "../libVkLayer_khronos_validation.so"|' "$layer_json" \
  >"$stage/lib/layers/VkLayer_khronos_validation.json"
# Every other library the binaries need but a recent glibc system has not: all but the C and
# C++ runtimes. libstdc++ goes to fallback/, which run.sh adds only when the system's is older.
base='^(linux-vdso|ld-linux|libc|libm|libgcc_s|libpthread|libdl|librt|libstdc\+\+)\.'
for f in "$stage"/bin/* "$stage"/tests/* "$stage/lib/libVkLayer_khronos_validation.so" "$stage/lib/libvulkan.so.1"; do
  ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  if [[ $name =~ ^libstdc\+\+\. ]]; then cp -L "$path" "$stage/lib/fallback/$name"
  elif ! [[ $name =~ $base ]]; then cp -L "$path" "$stage/lib/$name"; fi
done
# One xz stream with a 64 MiB dictionary: the suites hold the same SPIR-V, stored once.
XZ_OPT="-9 -T${VKF_JOBS:-2}" tar -C "$stage" -cJf "$dir/payload.tar.xz" bin tests lib

# --- checkpoints and the scripts ------------------------------------------------------------
make_checkpoints "$dir/models" "$stage/bin" gpu >"$dir/.checkpoints.log" 2>&1 ||
  { cat "$dir/.checkpoints.log" >&2; exit 1; }
rm -f "$dir/.checkpoints.log"
cp "$here/gpu_proof.sh" "$dir/"
mkdir -p "$dir/gpu_proof"
cp "$here"/gpu_proof/*.sh "$here"/gpu_proof/*.py "$dir/gpu_proof/"

# --- what is in it, and how big -------------------------------------------------------------
{
  echo "vkformer GPU proof pack: $(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown), $(date -u +%FT%TZ)"
  echo "component sizes in bytes (before xz; payload.tar.xz holds bin, tests and lib):"
  (cd "$stage" && find bin tests lib -type f -printf '%s %p\n' | sort -k2)
  (cd "$dir" && du -sb models/* payload.tar.xz gpu_proof gpu_proof.sh | awk '{print $1, $2}')
} >"$dir/MANIFEST.txt"
rm -rf "$stage"
size=$(du -sb "$dir" | cut -f1)
tree=$(git -C "$repo" ls-files -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
cat "$dir/MANIFEST.txt"
echo "gpu_proof.sh pack: $((size >> 10)) KiB in $dir ($(($(date +%s) - t0)) s); the repository's tracked files $((tree >> 10)) KiB"
if [ "$size" -gt "$limit" ]; then
  echo "gpu_proof.sh pack: $dir is $((size >> 20)) MiB, over the 64 MiB a device run carries" >&2
  exit 1
fi
if [ $((size + tree)) -gt "$limit" ]; then
  echo "gpu_proof.sh pack: warning: with the tracked files ($((tree >> 20)) MiB) a device run would carry over 64 MiB" >&2
fi
echo "$dir"
