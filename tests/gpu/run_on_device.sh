#!/usr/bin/env bash
# Runs on the GPU machine (see docs/benchmarks.md): builds the project against the carried
# Debian -dev packages, then runs the steps named in STEPS (default "launch suite"):
#   launch  the embedded launch job on the cuda backend (every CUDA solution + broken candidate)
#   suite   the gpu-labelled test suite (ctest -L gpu; CTEST_LABEL="gpu|equivalence" adds the
#           heavy cpu comparisons, CTEST_REGEX narrows it)
#   bench   perf/compile_throughput (KernelBench-style load_inline vs MooreEval)
#   model   the model's bf16 parity test and tokens/s (tests/gpu/model)
#   stability  perf/reward_stability on cuda and cpu (RUNS, STABILITY_TASK, STABILITY_MODES)
#   realsubs   the real KernelBench submissions in .realsubs (REALSUBS_SAMPLES for another folder)
#   timingprobe  dev/cuda_timing_probe: the candidate-only bimodal cuda time (add TARGETS=mooreeval to skip most of the build)
# Usage there:  source .devdeps/unpack && STEPS="suite bench" bash tests/gpu/run_on_device.sh
# (.devdeps: ../shared/device/fetch-debs nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libcpp-httplib-dev
#  libcpp-httplib0.11 libbrotli-dev libbrotli1 zlib1g-dev libhiredis-dev libsqlite3-dev libseccomp-dev bubblewrap libgloo-dev
#  libssl-dev libssl3 libpcre2-dev libicu-dev)
set -uo pipefail
OUT="${OUT:-/tmp/mooreeval-gpu-out}"
STEPS="${STEPS:-launch suite}"
BUILD="${BUILD_DIR:-build-gpu}"
mkdir -p "$OUT"
# bubblewrap from the carried .deb when the machine has none: the sandbox is on (--sandbox auto)
export PATH="$PATH:/opt/devdeps/usr/bin"
nvidia-smi -L
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())'
# libtorch components need Torch's CMake config to find CUDA; without it, build the rest.
if ! cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMUSACODER_WERROR=OFF -DMUSACODER_BUILD_PERF=ON >"$OUT/cmake.log" 2>&1; then
  echo "configure with libtorch failed (see cmake.log); building without the model components"
  tail -15 "$OUT/cmake.log"
  BUILD="$BUILD-notorch"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMUSACODER_WERROR=OFF \
    -DMUSACODER_WITH_TORCH=OFF >"$OUT/cmake-notorch.log" 2>&1 || { tail -50 "$OUT/cmake-notorch.log"; exit 1; }
fi
targets="mooreeval gpu_tests gpu_build_path_tests build_path_equivalence_tests"
case " $STEPS " in *" model "*) targets="$targets model_gpu_tests" ;; esac
ninja -C "$BUILD" -j16 ${TARGETS:-$targets} >"$OUT/build.log" 2>&1 || { grep -E "error" -A3 "$OUT/build.log" | head -60; exit 1; }
left() { echo $(( ${BUDGET_SECONDS:-570} - SECONDS )); }
for step in $STEPS; do
  echo "== $step (t=${SECONDS}s)"
  case "$step" in
    launch)
      timeout "$(left)" "$BUILD"/tools/mooreeval/mooreeval launch --backend cuda --workers "${WORKERS:-8}" \
        --cache-dir "$BUILD"/launch-cache --out "$OUT/launch_cuda.jsonl" >"$OUT/launch_cuda.txt" 2>"$OUT/launch_cuda.err"
      echo "launch exit code: $?"
      tail -60 "$OUT/launch_cuda.txt" ;;
    suite)
      timeout "$(left)" ctest --test-dir "$BUILD" -L "${CTEST_LABEL:-gpu}" ${CTEST_REGEX:+-R "$CTEST_REGEX"} -j"${CTEST_JOBS:-4}" \
        --output-on-failure >"$OUT/ctest_gpu.log" 2>&1
      echo "ctest exit code: $?"
      grep -E "tests passed|tests failed|Failed|\*\*\*" "$OUT/ctest_gpu.log" | tail -30
      grep -h "GPU_RESULT" "$OUT/ctest_gpu.log" | sort -u > "$OUT/gpu_results.txt"
      grep -h "^PATHS" "$OUT/ctest_gpu.log" > "$OUT/paths.txt"; tail -3 "$OUT/paths.txt" ;;
    bench)
      # One sandboxed CUDA evaluation first: if the sandbox cannot run CUDA candidates here, say
      # so and measure without it (BENCH_SANDBOX=on|off|auto forces the mode).
      # (a variant of add.py, so the benchmark's candidates stay uncached; the lean shim it builds
      # in the benchmark's cache is not charged to any candidate anyway)
      bench_cache=$(mktemp -d /tmp/me-bench-cache-XXXXXX)
      { cat solutions/cuda/elementwise/add.py; echo "_BENCH_PROBE = 1"; } >/tmp/bench_probe_add.py
      "$BUILD"/tools/mooreeval/mooreeval eval --backend cuda --task elementwise/add --cache-dir "$bench_cache" \
        --candidate /tmp/bench_probe_add.py --json >"$OUT/bench_probe.json" 2>"$OUT/bench_probe.err"
      probe=$(python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); print(v["verdict"], v["config"].get("candidate_runner"), json.dumps(v["config"]["sandbox"].get("strategy")), json.dumps(v["config"]["sandbox"].get("cgroup")), v["message"][:300])' "$OUT/bench_probe.json" 2>&1)
      echo "bench probe (sandbox auto): $probe"; tail -3 "$OUT/bench_probe.err"
      sandbox="${BENCH_SANDBOX:-auto}"
      case "$probe" in ok*) ;; *) [ -z "${BENCH_SANDBOX:-}" ] && sandbox=off && echo "SANDBOXED CUDA EVALUATION FAILED: benchmarking with --sandbox off" ;; esac
      timeout "$(left)" python3 perf/compile_throughput/run.py --backend cuda --workers "${BENCH_WORKERS:-16}" \
        --run-slots "${BENCH_RUN_SLOTS:-1}" "--mooreeval-args=--sandbox $sandbox" --cache-dir "$bench_cache" \
        --mooreeval "$BUILD"/tools/mooreeval/mooreeval --json "$OUT/compile_throughput.json" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.txt"
      echo "bench exit code: ${PIPESTATUS[0]}" ;;
    model)
      if [ -x "$BUILD"/tests/unit/model/model_unit_tests ]; then  # built when TARGETS names it
        timeout "$(left)" "$BUILD"/tests/unit/model/model_unit_tests >"$OUT/model_unit.log" 2>&1
        echo "model_unit_tests exit code: $?"; grep -E "FAILED|Failure|PASSED|tests ran" "$OUT/model_unit.log" | head -20
      fi
      readelf -d "$BUILD"/tests/gpu/model/model_gpu_tests | grep NEEDED >"$OUT/model_gpu_needed.txt" 2>&1
      timeout "$(left)" "$BUILD"/tests/gpu/model/model_gpu_tests >"$OUT/model_gpu.log" 2>&1
      rc=$?
      echo "model_gpu_tests exit code: $rc$( [ $rc -gt 128 ] && echo " (signal $((rc - 128)))")"
      grep -E "GPU_RESULT|OK \]|FAILED|Failure|SKIPPED|Which is|rror" "$OUT/model_gpu.log" | head -40
      grep -A30 "fatal signal" "$OUT/model_gpu.log" | head -40
      [ $rc -gt 128 ] && command -v gdb >/dev/null && timeout 300 gdb -q -batch -ex run -ex bt -ex "info sharedlibrary" \
        "$BUILD"/tests/gpu/model/model_gpu_tests >"$OUT/model_gdb.log" 2>&1 && grep -A25 "received signal" "$OUT/model_gdb.log" | head -40
      if [ $rc -gt 128 ] && [ -n "${MODEL_NOCUDNN:-}" ]; then  # a crash: once more with cuDNN's SDPA off
        MC_SDPA_NO_CUDNN=1 timeout "$(left)" "$BUILD"/tests/gpu/model/model_gpu_tests >"$OUT/model_gpu_nocudnn.log" 2>&1
        echo "model_gpu_tests (cuDNN SDPA off) exit code: $?"
        grep -E "GPU_RESULT|OK \]|FAILED|Failure|Which is" "$OUT/model_gpu_nocudnn.log" | head -20
        grep -A30 "fatal signal" "$OUT/model_gpu_nocudnn.log" | head -40
      fi ;;
    stability)
      # perf/reward_stability: the same solution evaluated RUNS times, malloc tuning off vs on, on cuda and
      # on cpu (this host's 16 idle cores), fresh processes and one evaluator.
      for backend in ${STABILITY_BACKENDS:-cuda cpu}; do
        sol=solutions/$backend/${STABILITY_TASK:-activation/relu}.py
        timeout "$(left)" python3 perf/reward_stability/run.py --mooreeval "$BUILD"/tools/mooreeval/mooreeval \
          --backend $backend --task "${STABILITY_TASK:-activation/relu}" --candidate "$sol" --runs "${RUNS:-20}" --fresh-runs "${FRESH_RUNS:-10}" \
          --modes "${STABILITY_MODES:-one,fresh}" --variants "${STABILITY_VARIANTS:-before,after}" --json "$OUT/stability_$backend.json" 2>&1 | tee "$OUT/stability_$backend.txt"
      done ;;
    bypass)
      # The dispatcher-bypass cases with the import check off (what they scored before it) and on.
      python3 - "$BUILD"/tools/mooreeval/mooreeval <<'PYEOF' 2>&1 | tee "$OUT/bypass.txt"
import json, subprocess, sys
cases = [c for c in json.load(open("tests/adversarial/manifest.json")) if c["file"].startswith("bypass_")]
for c in cases:
    for backend in c["backends"]:
        for flags in (["--no-import-check"], []):
            p = subprocess.run([sys.argv[1], "eval", "--task", c["task"], "--candidate", "tests/adversarial/" + c["file"],
                                "--backend", backend, "--json"] + flags, capture_output=True, text=True)
            try:
                v = json.loads(p.stdout)
                print(c["file"], backend, "import-check" if not flags else "no-import-check", v["verdict"],
                      "reward=%.3f" % v["reward"]["total"], v["message"][:200].replace("\n", " "), flush=True)
            except Exception as e:
                print(c["file"], backend, flags, "no verdict", p.returncode, p.stderr[-300:], flush=True)
PYEOF
      ;;
    realsubs)
      # Real KernelBench submissions of public systems (dev/real_submissions: fetched, carried as .realsubs,
      # never committed), each with its KernelBench reference task.
      timeout "$(left)" "$BUILD"/tools/mooreeval/mooreeval eval-batch --backend cuda --tasks .realsubs/tasks \
        --samples "${REALSUBS_SAMPLES:-.realsubs/samples}" --workers "${WORKERS:-8}" --out "$OUT/realsubs.jsonl" >"$OUT/realsubs.txt" 2>&1
      echo "realsubs exit code: $?"
      python3 -c 'import json,sys
for l in open(sys.argv[1]):
    v=json.loads(l)
    if "summary" in v: print("summary", json.dumps(v["summary"])); continue
    print(v["task"], v.get("sample",""), v["verdict"], (v.get("speedup") or 0), v["message"][:150].replace("\n"," "))' "$OUT/realsubs.jsonl" | tee "$OUT/realsubs_table.txt" | tail -60 ;;
    timingprobe)
      # Issue #29's open question (why a candidate's cuda time is bimodal across evaluations): no build needed.
      timeout "$(left)" python3 dev/cuda_timing_probe/probe.py --processes "${PROBE_PROCESSES:-8}" 2>&1 | tee "$OUT/timing_probe.txt" ;;
    *) echo "unknown step $step" ;;
  esac
done
echo "done at t=${SECONDS}s"
