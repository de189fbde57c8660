#!/usr/bin/env bash
# libvkformer.so's ABI against the baseline stored in capi/abi/libvkformer.abi (abigail-tools:
# abidw describes the exported functions and the types they reach, from the C API files' debug
# information; opaque handles stay declarations). Fails on any change abidiff reports (a
# removed or changed function, a struct's member or size, an enumerator) unless the SONAME's
# ABI version (VKF_ABI_VERSION) differs from the baseline's, i.e. was raised on purpose. An
# added function passes, and so does an enumerator added (abidiff counts that harmless): store
# the new baseline anyway, so that removing it later fails. A compatible change by the header's
# rules that abidiff reports (a field appended to a size-carrying struct): review it, then store
# the new baseline with --update and say so in the commit message.
# usage: abi_check.sh LIBRARY SOURCE_DIR [--update]
set -euo pipefail
lib=$1 src=$2
baseline=$src/capi/abi/libvkformer.abi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
abidw --headers-dir "$src/include/vkformer" --drop-private-types --exported-interfaces-only --no-corpus-path \
  --no-comp-dir-path --no-show-locs --no-elf-needed "$lib" --out-file "$tmp/current.abi"
if [ "${3:-}" = --update ]; then
  cp "$tmp/current.abi" "$baseline"
  echo "abi_check: stored $baseline"
  exit 0
fi
soname() { sed -n "s/.*soname='\([^']*\)'.*/\1/p" "$1" | head -1; }
if [ "$(soname "$baseline")" != "$(soname "$tmp/current.abi")" ]; then
  echo "abi_check: the ABI version was raised ($(soname "$baseline") -> $(soname "$tmp/current.abi")):" \
    "store the new baseline (tests/capi/abi_check.sh LIBRARY SOURCE_DIR --update)"
  exit 0
fi
status=0
abidiff "$baseline" "$tmp/current.abi" >"$tmp/report" || status=$?
if [ "$status" -ne 0 ]; then
  cat "$tmp/report" >&2
  echo "abi_check: libvkformer.so's ABI changed against capi/abi/libvkformer.abi (abidiff status $status)." \
    "Incompatible: raise VKF_ABI_VERSION. Compatible by the header's rules: review, then --update." >&2
  exit 1
fi
echo "abi_check: $(grep -c '<elf-symbol' "$baseline") functions, no change against the baseline"
