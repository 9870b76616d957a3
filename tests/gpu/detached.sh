#!/usr/bin/env bash
# Sourced by the GPU machine's long jobs (demo_bg.sh, kb_eval_bg.sh): a job longer than one device call (at most
# 600 s) runs detached on the warm machine; each call starts it or finds it running, and waits on it.
#   snapshot_tree ROOT TREE      copy the repository (no builds, carried payloads or .git) to TREE: each call
#                                replaces the repository copy, so a detached job must not run from it
#   start_detached DIR COMMAND   run COMMAND in its own session; output appended to DIR/driver.log, its exit
#                                status to DIR/exit_code
#   wait_detached PATTERN WAIT   wait while a process matching PATTERN runs, until $SECONDS reaches WAIT
#   attach_or_start LABEL DIR PATTERN WAIT START
#                                the call of a job: START (a function that ends in start_detached DIR ...) unless a
#                                process matching PATTERN runs or DIR/exit_code holds 0 (finished), then
#                                wait_detached, then where the job stands
export PATH="$PATH:/opt/devdeps/usr/bin"  # the carried bubblewrap: the verifier sandboxes the model's kernels
export LD_LIBRARY_PATH="/opt/devdeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"  # the carried shared libraries

snapshot_tree() {
  rm -rf "$2" && mkdir -p "$2"
  tar -C "$1" --exclude=./build --exclude=./build-gpu --exclude=./.devdeps --exclude=./.devmodel \
    --exclude=./.git -cf - . | tar -C "$2" -xf -
}

start_detached() {
  local dir=$1
  shift
  rm -f "$dir/exit_code"
  setsid nohup bash -c "$*; echo \$? > '$dir/exit_code'" >>"$dir/driver.log" 2>&1 </dev/null &
  sleep 3  # the detached process must be visible to pgrep before the wait loop looks
}

wait_detached() {
  while pgrep -f "$1" >/dev/null && [ "$SECONDS" -lt "$2" ]; do sleep 5; done
}

attach_or_start() {
  local label=$1 dir=$2 pattern=$3 wait=$4 start=$5
  if pgrep -f "$pattern" >/dev/null; then
    echo "$label already running"
  elif [ "$(cat "$dir/exit_code" 2>/dev/null)" = 0 ]; then
    echo "$label already finished"
  else
    "$start" && echo "$label started (t=${SECONDS}s)"
  fi
  wait_detached "$pattern" "$wait"
  if pgrep -f "$pattern" >/dev/null; then
    echo "$label still running at t=${SECONDS}s"
  else
    echo "$label exit $(cat "$dir/exit_code" 2>/dev/null)"
  fi
}
