#!/usr/bin/env bash
# On the GPU machine: builds only the model GPU test against the carried -dev packages and runs it.
# Usage there (repository root):
#   ../shared/device/fetch-debs libpcre2-dev libicu-dev && source .devdeps/unpack && bash tests/gpu/model/run_model_gpu.sh
set -uo pipefail
OUT="${OUT:-/tmp/model-gpu-out}"
mkdir -p "$OUT"
nvidia-smi -L
python3 -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available(), "transformers", transformers.__version__)'
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DMUSACODER_WERROR=OFF >"$OUT/cmake.log" 2>&1 \
  || { tail -40 "$OUT/cmake.log"; exit 1; }
ninja -C build-gpu -j16 model_gpu_tests >"$OUT/build.log" 2>&1 || { grep -E "error" -A3 "$OUT/build.log" | head -60; exit 1; }
build-gpu/tests/gpu/model/model_gpu_tests 2>&1 | tee "$OUT/model_gpu.log" | grep -E "GPU_RESULT|OK|FAILED|Failure|SKIPPED|expected|Which is" 
exit "${PIPESTATUS[0]}"
