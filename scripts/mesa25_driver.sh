#!/usr/bin/env bash
# Unpacks Mesa 25's lavapipe (mesa-vulkan-drivers from bookworm-backports, with the newer
# libdrm it links) into a folder beside the system's Mesa 22.3, replacing nothing, and writes
# an ICD file for it. Select it with the two variables this prints:
#   eval "$(bash scripts/mesa25_driver.sh)"   # VK_DRIVER_FILES=... LD_LIBRARY_PATH=...
# Adds bookworm-backports to the apt sources when it is missing (root or sudo); the download
# is skipped when the folder already holds the driver.
# usage: scripts/mesa25_driver.sh [--arch arm64] [DIR]   (default: build-mesa25)
#   --arch arm64  the arm64 driver (for the aarch64 leg, under qemu), on an amd64 machine
set -euo pipefail
cd "$(dirname "$0")/.."
arch=$(dpkg --print-architecture)
if [ "${1:-}" = "--arch" ]; then
  arch=$2
  shift 2
fi
dir=$(realpath -m "${1:-build-mesa25}")
root="$dir/root"
icd="$dir/lvp_icd.json"
case "$arch" in
  amd64) lib="$root/usr/lib/x86_64-linux-gnu" ;;
  arm64) lib="$root/usr/lib/aarch64-linux-gnu" ;;
  *) echo "mesa25_driver.sh: no rule for architecture $arch" >&2; exit 1 ;;
esac

if [ ! -f "$lib/libvulkan_lvp.so" ] || [ ! -f "$icd" ]; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
  fi
  policy=$(apt-cache policy mesa-vulkan-drivers 2>/dev/null || true)
  if [[ "$policy" != *bookworm-backports* ]]; then
    echo "mesa25_driver.sh: adding bookworm-backports to the apt sources" >&2
    # The mirror the system's own bookworm entry uses, where there is one.
    uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
    printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "${uri:-http://deb.debian.org/debian}" |
      "${sudo[@]}" tee /etc/apt/sources.list.d/vkformer-backports.sources >/dev/null
    "${sudo[@]}" apt-get update -q >&2
  fi
  rm -rf "$dir"
  mkdir -p "$dir/debs" "$root"
  # Only these two: the rest lavapipe links (LLVM 15, xcb, wayland, zstd) is the system's,
  # installed with Mesa 22.3.
  chmod 755 "$dir/debs" # apt-get download fetches as the _apt user where it can
  (cd "$dir/debs" &&
    apt-get download -q "mesa-vulkan-drivers:$arch/bookworm-backports" "libdrm2:$arch/bookworm-backports" >&2)
  for deb in "$dir"/debs/*.deb; do
    dpkg -x "$deb" "$root"
  done
  version=$(dpkg-deb -f "$dir"/debs/mesa-vulkan-drivers_*.deb Version)
  case "$version" in
    25.*) ;;
    *) echo "mesa25_driver.sh: bookworm-backports has mesa-vulkan-drivers $version, not 25.x" >&2; exit 1 ;;
  esac
  json=$(ls "$root"/usr/share/vulkan/icd.d/lvp_icd*.json | head -1)
  sed "s|\"library_path\": *\"[^\"]*\"|\"library_path\": \"$lib/libvulkan_lvp.so\"|" "$json" >"$icd"
  echo "mesa25_driver.sh: Mesa $version lavapipe in $dir" >&2
fi
echo "export VK_DRIVER_FILES=$icd"
echo "export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
