#!/usr/bin/env bash
# This session's GPU checks (not committed): build, the delta rule's no-grad path and bench, three real
# submissions re-run (#29), the engine's tests and bench, the bf16 LM-head gradient, Qwen3.5 parity.
set -uo pipefail
source .devdeps/unpack
export PATH="$PATH:/opt/devdeps/usr/bin"
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
B=build-gpu
left() { echo $((${BUDGET:-530} - SECONDS)); }
step() {  # step NAME CAP CMD...
  local name=$1 cap=$2 t; shift 2; t=$(($(left) - 10)); [ $t -gt $cap ] && t=$cap
  [ $t -gt 15 ] || { echo "skip $name"; return; }
  timeout $t "$@" > $OUT/$name.log 2>&1; echo "== $name exit $? (t=${SECONDS}s)"
  grep -E "GPU_RESULT|\[ +(OK|FAILED|SKIPPED) +\]|Failure|Expected|ratio|tok/s|x$|bound|forward|error" $OUT/$name.log | cut -c1-220 | head -30
}
nvidia-smi -L
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DMUSACODER_WERROR=OFF -DMUSACODER_BUILD_PERF=ON > $OUT/cmake.log 2>&1 || tail -20 $OUT/cmake.log
timeout 200 ninja -C $B -j16 -k 0 mooreeval engine_gpu_tests model_gpu_tests deltanet_kernels_bench train_unit_tests engine_throughput > $OUT/build.log 2>&1
echo "build $? (t=${SECONDS}s)"; grep -E "error|FAILED" -A3 $OUT/build.log | head -40
step delta_tests 60 $B/tests/gpu/model/model_gpu_tests --gtest_filter='DeltaRuleGpu.*'
step engine_tests 60 $B/tests/gpu/engine/engine_gpu_tests
step lm_loss 30 $B/tests/unit/train/train_unit_tests --gtest_filter='ChunkedLmLoss.*'
step realsubs3 150 $B/tools/mooreeval/mooreeval eval-batch --backend cuda --tasks .realsubs/tasks --samples .realsubs/rs3 --workers 3 --out $OUT/realsubs3.jsonl
python3 -c 'import json,sys
for l in open(sys.argv[1]):
    v=json.loads(l); print(v["task"], v.get("sample",""), v["verdict"], v.get("speedup"), v["message"][:200].replace("\n"," "))' $OUT/realsubs3.jsonl
step deltanet 40 $B/perf/deltanet_kernels/deltanet_kernels_bench --seq 4096 --iters 10 --trace-dir /tmp/dt2
python3 perf/common/trace_summary.py /tmp/dt2/deltanet_forward.json --top 12 2>&1 | cut -c1-160 | head -16
step enginebench 60 python3 perf/engine_throughput/run.py --batch-sizes 1,64 --skip-transformers --engine $B/perf/engine_throughput/engine_throughput --json $OUT/engine_bench.json
tail -5 $OUT/enginebench.log
echo "done t=${SECONDS}s"
