#!/usr/bin/env bash
# Installs kiln's Debian 12 build and test dependencies with apt, only when something is missing.
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config libprotobuf-dev protobuf-compiler libonnx-dev libdnnl-dev libopenblas-openmp-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libsleef-dev libgtest-dev libxxhash-dev libsqlite3-dev python3 python3-numpy python3-onnx
  python3-dev pybind11-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The tests run ONNX Runtime under Node.js; a node that is already there (Debian's or NodeSource's,
# which bundles npm) is used as it is.
# The HTML report test renders it in headless Chromium; the Python module's tests run under pytest.
if [ "${1:-}" = "--test" ]; then
  command -v node >/dev/null || missing+=(nodejs)
  command -v npm >/dev/null || missing+=(npm)
  command -v chromium >/dev/null || missing+=(chromium)
  dpkg-query -W -f='${Status}' python3-pytest 2>/dev/null | grep -q "install ok installed" || missing+=(python3-pytest)
fi
# The fuzz targets need clang with libFuzzer and the sanitizer runtimes.
if [ "${1:-}" = "--fuzz" ]; then
  for p in clang libclang-rt-14-dev libomp-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "installing: ${missing[*]}"
sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
$sudo_cmd apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
