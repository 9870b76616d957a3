#!/usr/bin/env bash
# Runs on the GPU machine: #27's learning demonstration (perf/learning_demo/run.py) detached from the device call,
# so a stage longer than one call (at most 600 s) goes on running on the warm machine; each call starts it (or
# finds it running), waits up to WAIT seconds, and copies its tables and logs into $OUT.
#
#   call 2:  ... convert && BUILD_DIR=build-gpu DEMO_ARGS="--train-tasks 48 ..." bash tests/gpu/demo_bg.sh
#   call 3+: BUILD_DIR=build-gpu DEMO_ARGS="<the same>" bash tests/gpu/demo_bg.sh   (within the 30 s warm window)
#
# The demo runs from a snapshot of the tree in /tmp/mctree (each call replaces the repository copy it runs in)
# with MOOREEVAL_RUNNER_DIR and MOOREEVAL_LEAN_DIR pointing into the snapshot. run.py skips stages whose outputs
# exist, so a demo killed with its machine resumes in a later session's /tmp/learning_demo only on that machine.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${OUT:-/tmp/demo-out}"
BUILD="$(cd "$ROOT" && realpath -m "${BUILD_DIR:-build-gpu}")"  # relative to the repository, or absolute
DEMO=/tmp/learning_demo
TREE=/tmp/mctree
WAIT="${WAIT:-540}"
mkdir -p "$OUT" "$DEMO"
source "$ROOT/tests/gpu/detached.sh"

start() {
  snapshot_tree "$ROOT" "$TREE"
  rm -rf "$TREE/.realsubs"
  cd "$TREE" || return 1
  export MOOREEVAL_RUNNER_DIR="$TREE/python" MOOREEVAL_LEAN_DIR="$TREE/src/mooreeval/compile/lean"
  start_detached "$DEMO" "python3 perf/learning_demo/run.py --musacoder '$BUILD/tools/musacoder/musacoder' \
    --base-model '${DEMO_MODEL:-$ROOT/build/models/smollm2-135m}' --out '$DEMO' ${DEMO_ARGS:-}"
  cd "$ROOT" || return 1
}

attach_or_start demo "$DEMO" "perf/learning_demo/run.py" "$WAIT" start
# A call brings back only a few files: the tables, and everything small (summaries, metrics, samples, logs,
# reports, curves) in one archive; no weights, no build scratch, no synthesized data.
cp "$DEMO"/learning_demo.md "$DEMO"/learning_demo.json "$OUT"/ 2>/dev/null
tar -C "$DEMO" -czf "$OUT/learning_demo.tgz" --exclude='*.safetensors' --exclude='*.pt' --exclude='*/scratch' \
  --exclude='*/.work' --exclude='*/tasks' --exclude='checkpoint-*' --exclude='*/build-cache' \
  --exclude='tokenizer.json' . 2>/dev/null
tail -25 "$DEMO/driver.log"
ls "$DEMO" "$DEMO/quickstart" 2>/dev/null | head -40
