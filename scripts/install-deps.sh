#!/usr/bin/env bash
# Installs glass's build and test dependencies from Debian 12's packages (see docs/dependencies.md).
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libfmt-dev libpcre2-dev libutf8proc-dev libcpp-httplib-dev
  # Boost.Beast + Asio: glass serve's HTTP transport (header-only).
  libboost1.81-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  pybind11-dev python3-dev python3-numpy python3-pytest python3-setuptools python3-wheel python3-venv
  # The independent oracle grammar_e2e_schema_outputs validates constrained outputs with.
  python3-jsonschema
  # libFuzzer exists only with clang: the fuzz harnesses (fuzz/, scripts/fuzz.sh) build with these.
  clang-14 libfuzzer-14-dev
)
# Test and benchmark tools, each taken as present when its command is (NodeSource's nodejs brings
# its own npm and conflicts with Debian's npm package): node + npm run the openai npm client test
# (scripts/test.sh installs the package into the build tree), wrk the server benchmarks.
tools=(nodejs:node npm:npm wrk:wrk)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
for t in "${tools[@]}"; do
  command -v "${t#*:}" >/dev/null || missing+=("${t%%:*}")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
