#!/usr/bin/env bash
# Runs on the GPU machine (see docs/benchmarks.md): builds the project against the carried
# Debian -dev packages, runs the embedded launch job on the cuda backend (one process: a
# single run slot, so timings do not overlap) and the gpu-labelled test suite.
# Usage there:  source .devdeps/unpack && bash tests/gpu/run_on_device.sh
set -uo pipefail
OUT="${OUT:-/tmp/mooreeval-gpu-out}"
mkdir -p "$OUT"
nvidia-smi -L
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())'
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMUSACODER_WERROR=OFF >"$OUT/cmake.log" 2>&1 \
  || { tail -50 "$OUT/cmake.log"; exit 1; }
ninja -C build-gpu -j16 ${TARGETS:-} >"$OUT/build.log" 2>&1 || { grep -E "error" -A3 "$OUT/build.log" | head -60; exit 1; }
echo "== launch --backend cuda"
time build-gpu/tools/mooreeval/mooreeval launch --backend cuda --workers "${WORKERS:-8}" \
  --cache-dir build-gpu/test-build-cache --out "$OUT/launch_cuda.jsonl" >"$OUT/launch_cuda.txt" 2>"$OUT/launch_cuda.err"
echo "launch exit code: $?"
cat "$OUT/launch_cuda.txt"
if [ "${RUN_CTEST:-1}" = 1 ]; then
  echo "== ctest -L gpu"
  # Stay inside the device call's limit: whatever time is left, minus a margin for copying back.
  left=$(( ${BUDGET_SECONDS:-570} - SECONDS ))
  timeout "$left" ctest --test-dir build-gpu -L gpu -j4 --output-on-failure >"$OUT/ctest_gpu.log" 2>&1
  echo "ctest exit code: $?"
  grep -E "tests passed|tests failed|Failed|Skipped" "$OUT/ctest_gpu.log" | tail -20
  grep -h "GPU_RESULT" "$OUT/ctest_gpu.log" | sort -u > "$OUT/gpu_results.txt"
fi
