#!/usr/bin/env bash
# The installed package as an application sees it: `cmake --install` of BUILD_DIR into a fresh
# prefix, then docs/API.md's C example (between its c-example markers) built outside the tree twice,
# through find_package(vkformer) and through pkg-config, each run on MODEL_DIR; and the install's
# files (header, SONAME link, package files) and the library's exports (vkf_* only) checked.
# usage: consumer_test.sh SOURCE_DIR BUILD_DIR MODEL_DIR C_COMPILER
set -euo pipefail
src=$1 build=$2 model=$3 cc=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

sed -n '/<!-- c-example begin -->/,/<!-- c-example end -->/p' "$src/docs/API.md" | sed '1,2d;$d' | sed '$d' >"$tmp/example.c"
lines=$(wc -l <"$tmp/example.c")
if [ "$lines" -lt 20 ] || ! grep -q '^int main' "$tmp/example.c"; then
  echo "consumer_test: no C example between the c-example markers of docs/API.md ($lines lines)" >&2
  exit 1
fi

cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/vkformer/vkformer.h include/vkformer/vkformer_encoder.h include/vkformer/vkformer_batch.h include/vkformer/vkformer_state.h include/vkformer/vkformer_logprobs.h lib/libvkformer.so lib/libvkformer.so.1 lib/pkgconfig/vkformer.pc \
         lib/cmake/vkformer/vkformerConfig.cmake lib/cmake/vkformer/vkformerConfigVersion.cmake; do
  if [ ! -e "$prefix/$f" ]; then
    echo "consumer_test: the install lacks $f" >&2
    exit 1
  fi
done
soname=$(readelf -d "$prefix/lib/libvkformer.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
abi=$(sed -n 's/^#define VKF_ABI_VERSION \([0-9]*\).*/\1/p' "$src/include/vkformer/vkformer.h")
if [ "$soname" != "libvkformer.so.$abi" ]; then
  echo "consumer_test: SONAME '$soname', expected libvkformer.so.$abi" >&2
  exit 1
fi
# Exports: the header's functions, nothing else (no C++ symbol of the static libraries).
nm -D --defined-only "$prefix/lib/libvkformer.so" | awk '$3 != "VKFORMER_1" {print $3}' | sed 's/@.*//' | sort >"$tmp/exports"
cat "$src"/include/vkformer/vkformer*.h | grep -o '^VKF_API [^(]*(' | sed 's/.*[ *]\(vkf_[a-z0-9_]*\)(/\1/' | sort >"$tmp/declared"
if ! diff "$tmp/declared" "$tmp/exports" >"$tmp/exports.diff"; then
  echo "consumer_test: libvkformer.so's exports differ from the header's functions (< header, > library):" >&2
  cat "$tmp/exports.diff" >&2
  exit 1
fi

run() {
  local out
  out=$("$@" "$model")
  if [ "${#out}" -lt 20 ]; then
    echo "consumer_test: $1 printed too little: '$out'" >&2
    exit 1
  fi
  echo "$1: In the beginning$out"
}

# 1. CMake: find_package(vkformer), target vkformer::vkformer.
cmake -S "$src/tests/consumer" -B "$tmp/cmake" -G Ninja -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" \
  -DEXAMPLE_C="$tmp/example.c" >/dev/null
cmake --build "$tmp/cmake" >/dev/null
run "$tmp/cmake/consumer"

# 2. pkg-config.
flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs vkformer)
# shellcheck disable=SC2086 # the flags are words
"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror "$tmp/example.c" -o "$tmp/pkgconfig_consumer" $flags
LD_LIBRARY_PATH="$prefix/lib" run "$tmp/pkgconfig_consumer"
