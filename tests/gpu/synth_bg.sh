#!/usr/bin/env bash
# Runs on the GPU machine: #24's verified CUDA pairs at scale (`musacoder synth --backend cuda`, the rule teacher)
# detached from the device call (tests/gpu/detached.sh), resumable across calls and across sessions. Each call
# starts the run (or finds it running), waits up to WAIT seconds, and brings back its state — journal.jsonl
# (every finished program with its verdicts) and manifest.json, gzipped in parts of at most 15 MiB
# ($OUT/synth_state.tgz.NN) — with card.json and the log's tail. Carried back in a later session (here:
# `bash tests/gpu/synth_bg.sh keep FILES_AT` copies the parts into .synthstate/, git-ignored; then carry
# [".devdeps", ".synthstate"]), they seed a fresh run directory and synth resumes where the journal ends
# (same --out settings: it skips every program the journal holds).
#
#   call 1:  source .devdeps/unpack && STEPS="build synth" BUILD_TARGETS="musacoder mooreeval" \
#              bash tests/gpu/run_learner_on_device.sh
#   call 2+: bash tests/gpu/synth_bg.sh         (within the 30 s warm window; WAIT seconds, default 540)
#   done:    STEPS="synthcheck" bash tests/gpu/run_learner_on_device.sh   (perf/synth_gpu/reverify.py)
#
# SYNTH_COUNT (10000), SYNTH_SEED (24), SYNTH_WORKERS (16), SYNTH_RUN_SLOTS (4), SYNTH_BACKEND (cuda; cpu for a
# smoke test of this script without a GPU), SYNTH_ARGS (more flags; settings that differ from the
# carried manifest are refused by synth, so keep them across sessions).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
if [ "${1:-}" = keep ]; then  # here, after a call: keep the returned state for the next session's carry
  [ -d "${2:-}" ] || { echo "usage: $0 keep FILES_AT" >&2; exit 2; }
  ls "$2"/synth_state.tgz.* >/dev/null 2>&1 || { echo "no synth_state.tgz.* in $2" >&2; exit 1; }
  rm -rf "$ROOT/.synthstate" && mkdir -p "$ROOT/.synthstate" && cp "$2"/synth_state.tgz.* "$ROOT/.synthstate/"
  echo "kept $(cat "$ROOT"/.synthstate/synth_state.tgz.* | tar -xzOf - journal.jsonl | wc -l) journal entries in .synthstate/"
  exit 0
fi
OUT="${OUT:-/tmp/synth-gpu-out}"
BUILD="$(cd "$ROOT" && realpath -m "${BUILD_DIR:-build-gpu}")"
RUN="${SYNTH_RUN_DIR:-/tmp/synth_gpu}"
TREE="$RUN-tree"
WAIT="${WAIT:-540}"
mkdir -p "$OUT" "$RUN"
source "$ROOT/tests/gpu/detached.sh"

restore_state() {  # a previous session's journal, when this machine has none
  [ -s "$RUN/out/journal.jsonl" ] && return 0
  ls "$ROOT"/.synthstate/synth_state.tgz.* >/dev/null 2>&1 || return 0
  mkdir -p "$RUN/out" && cat "$ROOT"/.synthstate/synth_state.tgz.* | tar -xzf - -C "$RUN/out" &&
    echo "resuming from $(wc -l <"$RUN/out/journal.jsonl") carried journal entries"
}

start() {
  snapshot_tree "$ROOT" "$TREE"
  rm -rf "$TREE/.realsubs" "$TREE/.synthstate"
  restore_state || return 1
  export MOOREEVAL_RUNNER_DIR="$TREE/python" MOOREEVAL_LEAN_DIR="$TREE/src/mooreeval/compile/lean"
  # The progress bar (stderr, into driver.log) carries the rate: done/total, ok/fail, pairs/s, ETA.
  start_detached "$RUN" "'$BUILD/tools/musacoder/musacoder' synth --out '$RUN/out' --backend ${SYNTH_BACKEND:-cuda} \
    --count ${SYNTH_COUNT:-10000} --seed ${SYNTH_SEED:-24} --workers ${SYNTH_WORKERS:-16} \
    --run-slots ${SYNTH_RUN_SLOTS:-4} --benchmark-iters 20 --warmup-iters 5 --cache-dir '$RUN/build-cache' ${SYNTH_ARGS:-}"
}

attach_or_start synth "$RUN" "musacoder synth --out $RUN/out" "$WAIT" start
entries=$(cat "$RUN/out/journal.jsonl" 2>/dev/null | wc -l)
echo "journal: $entries of ${SYNTH_COUNT:-10000} programs finished (t=${SECONDS}s)"
[ -s "$RUN/out/journal.jsonl" ] && (cd "$RUN/out" && tar -czf - journal.jsonl manifest.json $(ls card.json dataset_card.md 2>/dev/null)) |
  split -b 15m -d - "$OUT/synth_state.tgz."
cp "$RUN"/out/card.json "$RUN"/out/dataset_card.md "$OUT"/ 2>/dev/null
tail -c 4000 "$RUN/driver.log" >"$OUT/synth_driver_tail.log"
tail -5 "$RUN/driver.log"
