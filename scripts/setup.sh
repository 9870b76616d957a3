#!/usr/bin/env bash
# Installs what MusaCoder needs on a fresh Debian/Ubuntu machine and builds it into build/.
# Idempotent: re-running only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
DEBS="build-essential cmake ninja-build pkg-config libgtest-dev libgmock-dev nlohmann-json3-dev libcli11-dev libssl-dev clang-format libcpp-httplib-dev libhiredis-dev libsqlite3-dev redis-server"
missing=""
for p in $DEBS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  echo "setup: installing Debian packages:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import torch, numpy' >/dev/null 2>&1; then
  echo "setup: installing torch==2.13.0 and numpy for $PYTHON"
  "$PYTHON" -m pip install -q torch==2.13.0 numpy
fi
# pytest runs the Python client's tests (python/client) against the real server.
if ! "$PYTHON" -c 'import pytest' >/dev/null 2>&1; then
  echo "setup: installing pytest for $PYTHON"
  "$PYTHON" -m pip install -q pytest
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"
