#!/usr/bin/env bash
# Runs on the GPU machine: #23's full KernelBench L1–L3 evaluation of a local checkpoint (`musacoder eval-model`,
# 8 samples at T=0.7, 2,048 new tokens) detached from the device call (tests/gpu/detached.sh); each call starts it
# (or finds it running), waits up to WAIT seconds, and copies its summary, report and samples into $OUT.
# eval-model resumes where it stopped, so a later call on the same machine continues a cut run.
#
#   call 2:  bash scripts/device_model_parts.sh stash .devmodel/part-2 && bash scripts/device_model_parts.sh convert &&
#            BUILD_DIR=build-gpu bash tests/gpu/kb_eval_bg.sh            (carry [".devmodel/part-2", ".realsubs"])
#   call 3+: BUILD_DIR=build-gpu bash tests/gpu/kb_eval_bg.sh            (within the 30 s warm window)
#
# KB_DIR: the KernelBench checkout (default .realsubs/KernelBench, relative to the repository or absolute; its
# KernelBench/level{1,2,3} folders);
# EVAL_MODEL: the checkpoint (default build/models/smollm2-135m); EVAL_ARGS: more flags (a later one wins).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${OUT:-/tmp/kb-eval-out}"
BUILD="$(cd "$ROOT" && realpath -m "${BUILD_DIR:-build-gpu}")"
RUN=/tmp/kb_eval
TREE=/tmp/kbtree
WAIT="${WAIT:-540}"
mkdir -p "$OUT" "$RUN"
source "$ROOT/tests/gpu/detached.sh"

start() {
  local kb="${KB_DIR:-.realsubs/KernelBench}"
  snapshot_tree "$ROOT" "$TREE"
  case "$kb" in /*) ;; *) kb="$TREE/$kb" ;; esac  # relative: the snapshot's copy
  [ -d "$kb/KernelBench" ] || { echo "no KernelBench checkout in $kb"; return 1; }
  export MOOREEVAL_RUNNER_DIR="$TREE/python" MOOREEVAL_LEAN_DIR="$TREE/src/mooreeval/compile/lean"
  start_detached "$RUN" "'$BUILD/tools/musacoder/musacoder' eval-model \
    --model '${EVAL_MODEL:-$ROOT/build/models/smollm2-135m}' --device cuda --backend cuda \
    --kernelbench-dir '$kb' --levels 1,2,3 --samples 8 --max-new-tokens 2048 \
    --concurrency 256 --max-num-seqs 256 --verify-workers 14 --progress-seconds 30 --out '$RUN/run' ${EVAL_ARGS:-}"
}

attach_or_start eval "$RUN" "musacoder eval-model" "$WAIT" start
# Everything but build scratch comes back: summary.md, report.html, samples.jsonl, the driver log.
tar -C "$RUN" -czf "$OUT/kb_eval.tgz" --exclude='*/scratch' --exclude='*/.work' --exclude='*/build-cache' . 2>/dev/null
cp "$RUN"/run/summary.md "$OUT"/ 2>/dev/null
tail -30 "$RUN/driver.log"
