#!/usr/bin/env bash
# Installs what vkformer needs to build and test on Debian 12 (apt-get; sudo when not root).
# Skips apt-get entirely when everything is already installed.
set -euo pipefail

packages=(
  g++ cmake ninja-build git pkg-config
  libvulkan-dev libvulkan-volk-dev glslang-tools spirv-tools libspirv-cross-c-shared-dev
  mesa-vulkan-drivers vulkan-validationlayers
  libfmt-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libutf8proc-dev libcpp-httplib-dev curl
  zlib1g-dev  # CRC-32 of saved sequence states (host/model/sequence_state.cpp)
  libgtest-dev python3 python3-numpy
  # vkf-server's answers validated against OpenAI's OpenAPI description (tests/serve/openapi_check.py)
  # and constrained decoding's JSON-schema checks (tests/grammar): an independent validator.
  python3-jsonschema python3-yaml
  # The layer split over MPI ranks (host/dist, docs/DISTRIBUTED.md): Debian's OpenMPI.
  libopenmpi-dev openmpi-bin
  abigail-tools
  # The Java binding (bindings/java, tests/java): the JNI headers, javac and the JVM its test
  # runs on (about 116 MB downloaded, 265 MB installed: OpenJDK 17's JDK and JRE, headless).
  default-jdk-headless
  # Debian's chromium, run headless by the tests of vkf-server's page and vkf-bench report
  # (tests/support/chromium_cdp.py; about 81 MB downloaded, 350 MB installed). No other browser.
  chromium
)
# Node.js and npm only run the comparisons with Hugging Face's JavaScript packages (tests/text)
# and vkf-server's end-to-end tests with the openai SDK, LangChain JS and the AI SDK (tests/serve);
# one installed otherwise will do (NodeSource's nodejs brings npm and conflicts with Debian's).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  sudo=(sudo)
fi
echo "vkformer: installing ${missing[*]}"
"${sudo[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
