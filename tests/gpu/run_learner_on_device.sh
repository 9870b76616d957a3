#!/usr/bin/env bash
# Runs on the GPU machine: builds the learner (Release, perf on) against the carried -dev packages and runs
# the GPU steps named in STEPS, in order, each within what is left of BUDGET_SECONDS (default 580):
#   build-gpu-tests  model_gpu_tests engine_gpu_tests deltanet_kernels_bench
#   gpu-tests        those two test programs (Qwen3.5/delta rule/Qwen2 parity, paged decode kernel, engine)
#                    in the background while build-rest builds the rest (needs build-gpu-tests first)
#   build-rest       musacoder mooreeval train_gpu_tests engine_throughput sft_throughput_bench
#   build-all        both lists in one ninja call
#   train            train_gpu_tests (train-sft bf16 on CUDA against the CPU run)
#   check            in the foreground, one after another: engine_gpu_tests (decode kernel, fused kernels, engine),
#                    model_gpu_tests' packed/grouped attention and fused SwiGLU tests, train_gpu_tests (needs them
#                    built)
#   deltanet         perf/deltanet_kernels (ours vs transformers' torch fallback)
#   enginebench      perf/engine_throughput (ours vs transformers generate; ENGINE_BATCHES; ENGINE_ARGS, e.g.
#                    "--compare-unfused" for the fusions against the modules' ops, "--trace-dir /tmp/tr" for the
#                    GPU time per decode step by kernel)
#   sftbench         perf/sft_throughput (ours vs an eager transformers loop)
#   quickstart       musacoder quickstart --backend cuda (QUICKSTART_ARGS)
#   demo             tests/gpu/demo_bg.sh: perf/learning_demo/run.py (#27: SmolLM2 SFT + GRPO, the five-way
#                    ablation; DEMO_ARGS) detached into /tmp/learning_demo, waited on for what is left of the budget
#                    (a later call, or demo_bg.sh alone, waits on it again); its tables come back in $OUT. The
#                    model must be in build/models/smollm2-135m first (scripts/device_model_parts.sh)
#   kbeval           tests/gpu/kb_eval_bg.sh: #23's full KernelBench L1–L3 eval-model run of SmolLM2 (8 samples),
#                    detached and waited on like demo; needs .realsubs/KernelBench carried and the model converted
#   build-eval       musacoder mooreeval musa_shim_gpu_tests (what demo, stability and musa need)
#   build            the targets in BUILD_TARGETS, in one ninja call
#   deltanet-tests   model_gpu_tests' DeltaRuleGpu.* and Qwen35Gpu.* (the kernels' correctness, bf16 parity)
#   stability        perf/reward_stability on cuda with the default timing (#29; RUNS, FRESH_RUNS, STABILITY_MODES)
#   musa             #25 on the GPU: musa_shim_gpu_tests (every bundled CUDA solution ported to MUSA and shimmed
#                    back, same verdict class), then port-suite of the KernelBench checkout in KB_DIR (default
#                    .realsubs/KernelBench, carried), shimmed back, references loaded and run (KB_PER_LEVEL)
#   realsubs         #29's real KernelBench submissions through mooreeval eval-batch on cuda (REALSUBS_SAMPLES,
#                    default .realsubs/samples; tasks in .realsubs/tasks; dev/real_submissions/fetch.sh makes both)
#   synth            tests/gpu/synth_bg.sh: #24's verified CUDA pairs (musacoder synth, SYNTH_COUNT, default 10,000)
#                    detached and waited on like demo; resumes from a carried .synthstate/; its state comes back
#   synthcheck       perf/synth_gpu/reverify.py: REVERIFY_COUNT (1,000) of the finished run's pairs re-verified by a
#                    second MooreEval run with a build cache of its own
#   cudaunit         the unit tests that also run on CUDA when a device is there (ChunkedLmLoss.*, AdamW.*)
#   extra            bash -c "$EXTRA" (an experiment of the session; output in $OUT/extra.log)
# Usage there: source .devdeps/unpack && STEPS="build-gpu-tests gpu-tests build-rest train" bash tests/gpu/run_learner_on_device.sh
# A later call on the same warm machine reuses build-gpu (configure is skipped when build.ninja exists).
set -uo pipefail
OUT="${OUT:-/tmp/learner-gpu-out}"
BUILD="${BUILD_DIR:-build-gpu}"
STEPS="${STEPS:-build-gpu-tests gpu-tests build-rest train}"
mkdir -p "$OUT"
export PATH="$PATH:/opt/devdeps/usr/bin"
left() { echo $((${BUDGET_SECONDS:-580} - SECONDS)); }

build() {
  if [ ! -f "$BUILD/build.ninja" ]; then
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMUSACODER_WERROR=OFF -DMUSACODER_BUILD_PERF=ON \
      >"$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; return 1; }
    grep -E "CUDA kernels|NCCL|engine" "$OUT/cmake.log" | head
  fi
  timeout "$(left)" ninja -C "$BUILD" -k 0 -j"${JOBS:-16}" "$@" >>"$OUT/build.log" 2>&1
  local rc=$?
  echo "ninja $* exit $rc (t=${SECONDS}s)"
  [ $rc = 0 ] || grep -E "error|FAILED" -A3 "$OUT/build.log" | head -60
  return $rc
}

# run NAME TIMEOUT_CAP COMMAND...: output to $OUT/NAME.log, a summary on stdout
run() {
  local name=$1 cap=$2 t
  shift 2
  t=$(($(left) - 15))
  [ "$t" -gt "$cap" ] && t=$cap
  [ "$t" -gt 20 ] || { echo "skipped $name: no time left"; return; }
  timeout "$t" "$@" >"$OUT/$name.log" 2>&1
  echo "$name exit $? (t=${SECONDS}s)"
  grep -E "GPU_RESULT|\[ +(OK|FAILED|SKIPPED) +\]|Failure|Which is|Expected|rror|x$|tokens/s|ratio" "$OUT/$name.log" | head -40
}

gpu_tests() {
  run model_gpu 240 "$BUILD"/tests/gpu/model/model_gpu_tests
  run engine_gpu 240 "$BUILD"/tests/gpu/engine/engine_gpu_tests
}

musa() {
  local kb="${KB_DIR:-.realsubs/KernelBench}"
  run musa_shim 300 "$BUILD"/tests/gpu/musa_shim_gpu_tests
  [ -d "$kb/KernelBench" ] || { echo "musa: no KernelBench checkout in $kb"; return; }
  rm -rf /tmp/kb_musa /tmp/kb_shim
  "$BUILD"/tools/musacoder/musacoder port-suite --kernelbench-dir "$kb" --out /tmp/kb_musa >"$OUT/port_suite.log" 2>&1 &&
    "$BUILD"/tools/musacoder/musacoder port /tmp/kb_musa --to cuda --shim --out /tmp/kb_shim >>"$OUT/port_suite.log" 2>&1
  tail -2 "$OUT/port_suite.log"
  run kb_shim 200 python3 tests/gpu/musa_kernelbench_shim.py --original "$kb/KernelBench" --shimmed /tmp/kb_shim \
    --per-level "${KB_PER_LEVEL:-20}"
  tail -5 "$OUT/kb_shim.log"
}

nvidia-smi -L
python3 -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__)'
bg=""
for step in $STEPS; do
  echo "== $step (t=${SECONDS}s)"
  case "$step" in
    build-gpu-tests) build model_gpu_tests engine_gpu_tests deltanet_kernels_bench ;;
    gpu-tests) gpu_tests >"$OUT/gpu_tests.summary" 2>&1 &
      bg=$! ;;
    build-rest) JOBS=14 build musacoder mooreeval train_gpu_tests engine_throughput sft_throughput_bench ;;
    build-all) build model_gpu_tests engine_gpu_tests deltanet_kernels_bench musacoder mooreeval train_gpu_tests \
      engine_throughput sft_throughput_bench ;;
    build-eval) build musacoder mooreeval musa_shim_gpu_tests ;;
    build) build ${BUILD_TARGETS:?BUILD_TARGETS names the targets} ;;
    deltanet-tests) run deltanet_tests 240 "$BUILD"/tests/gpu/model/model_gpu_tests --gtest_filter='DeltaRuleGpu.*:Qwen35Gpu.*' ;;
    stability) run stability 560 python3 perf/reward_stability/run.py --mooreeval "$BUILD"/tools/mooreeval/mooreeval \
      --backend cuda --task activation/relu --candidate solutions/cuda/activation/relu.py --runs "${RUNS:-20}" \
      --fresh-runs "${FRESH_RUNS:-10}" --modes "${STABILITY_MODES:-one,fresh}" --variants after --json "$OUT/stability_cuda.json"
      tail -25 "$OUT/stability.log" ;;
    musa) musa ;;
    train) run train_gpu 300 "$BUILD"/tests/gpu/train/train_gpu_tests ;;
    check) run engine_gpu 240 "$BUILD"/tests/gpu/engine/engine_gpu_tests
      run model_packed 150 "$BUILD"/tests/gpu/model/model_gpu_tests --gtest_filter='*Packed*:*GroupedSdpa*:*Swiglu*'
      run train_gpu 240 "$BUILD"/tests/gpu/train/train_gpu_tests ;;
    deltanet) run deltanet 200 "$BUILD"/perf/deltanet_kernels/deltanet_kernels_bench --seq 4096 --iters 10 ;;
    enginebench) run enginebench 420 python3 perf/engine_throughput/run.py --batch-sizes "${ENGINE_BATCHES:-1,16,64,256}" \
      --engine "$BUILD"/perf/engine_throughput/engine_throughput --json "$OUT/engine_bench.json" ${ENGINE_ARGS:-}
      tail -15 "$OUT/enginebench.log" ;;
    sftbench) run sftbench 420 bash perf/sft_throughput/run_sft_throughput.sh "$BUILD" ${SFT_ARGS:-}
      tail -8 "$OUT/sftbench.log" ;;
    quickstart) run quickstart 560 "$BUILD"/tools/musacoder/musacoder quickstart --backend cuda --out "$OUT/quickstart" \
      --overwrite --no-progress ${QUICKSTART_ARGS:-}
      tail -30 "$OUT/quickstart.log" ;;
    demo) BUILD_DIR="$BUILD" WAIT=$(($(left) - 15)) OUT="$OUT" bash tests/gpu/demo_bg.sh ;;
    kbeval) BUILD_DIR="$BUILD" WAIT=$(($(left) - 15)) OUT="$OUT" bash tests/gpu/kb_eval_bg.sh ;;
    synth) BUILD_DIR="$BUILD" WAIT=$(($(left) - 20)) OUT="$OUT" bash tests/gpu/synth_bg.sh ;;
    synthcheck) run synthcheck 560 python3 perf/synth_gpu/reverify.py --run /tmp/synth_gpu/out \
      --mooreeval "$BUILD"/tools/mooreeval/mooreeval --backend cuda --count "${REVERIFY_COUNT:-1000}" \
      --json "$OUT/reverify.json"
      tail -25 "$OUT/synthcheck.log" ;;
    realsubs) run realsubs 400 "$BUILD"/tools/mooreeval/mooreeval eval-batch --backend cuda --tasks .realsubs/tasks \
      --samples "${REALSUBS_SAMPLES:-.realsubs/samples}" --workers "${WORKERS:-8}" --out "$OUT/realsubs.jsonl"
      python3 -c 'import json, sys
for line in open(sys.argv[1]):
    v = json.loads(line)
    if "verdict" not in v: continue  # the summary line
    print(v["task"], v.get("sample", ""), v["verdict"], v.get("speedup"), v["message"][:160].replace("\n", " "))' \
        "$OUT/realsubs.jsonl" | tee "$OUT/realsubs_table.txt" | tail -60 ;;
    cudaunit) run cudaunit 120 "$BUILD"/tests/unit/train/train_unit_tests --gtest_filter='ChunkedLmLoss.*:AdamW.*' ;;
    extra) run extra 560 bash -c "${EXTRA:-true}"
      cat "$OUT/extra.log" | tail -40 ;;
    *) echo "unknown step $step" ;;
  esac
done
if [ -n "$bg" ]; then
  wait "$bg"
  cat "$OUT/gpu_tests.summary"
fi
echo "done at t=${SECONDS}s"
