#!/usr/bin/env bash
# SFT throughput, ours vs an eager transformers loop, side by side in one run (GPU machine):
#   cmake --build BUILD --target sft_throughput_bench && bash perf/sft_throughput/run_sft_throughput.sh BUILD
# Extra arguments go to both programs (e.g. --layers 4 for a quick look). MODES="off on" (default): checkpointing
# off, then on; MODES=off runs only the first pair. REF_PRECISIONS="bf16 amp" runs the Python loop in both
# precision schemes (sft_throughput_reference.py --precision: pure bf16, the default; or float32 masters under
# autocast, as ours). TRACE_DIR=DIR: each program also traces two steps with the PyTorch profiler
# (DIR/sft_musacoder[_ckpt].json, DIR/sft_transformers_PRECISION[_ckpt].json) and the GPU kernel summary of each
# (perf/common/trace_summary.py --per 2) is printed after the table. ONE_PASS=1 also runs ours with the one-pass
# AdamW kernel (--one-pass-adamw: AdamWOptions::one_pass_kernel) after the default.
set -uo pipefail
BUILD="${1:-build}"; shift || true
here="$(cd "$(dirname "$0")" && pwd)"
results=()
traces=()
for mode in ${MODES:-off on}; do
  case "$mode" in
    off) ckpt="" ;;
    on) ckpt="--gradient-checkpointing" ;;
    *) echo "MODES: off and/or on, not '$mode'" >&2; exit 2 ;;
  esac
  ours=()
  suffix="${ckpt:+_ckpt}"
  if [ -n "${TRACE_DIR:-}" ]; then
    mkdir -p "$TRACE_DIR"
    ours=(--trace "$TRACE_DIR/sft_musacoder$suffix.json")
    traces+=("${ours[1]}")
  fi
  # Each result is printed as soon as its program ends: a run cut short by a time limit keeps what it has.
  results+=("$("$BUILD"/perf/sft_throughput/sft_throughput_bench $ckpt "${ours[@]}" "$@" | tail -1)")
  echo "${results[-1]}"
  if [ -n "${ONE_PASS:-}" ]; then
    results+=("$("$BUILD"/perf/sft_throughput/sft_throughput_bench $ckpt --one-pass-adamw "$@" | tail -1)")
    echo "${results[-1]}"
  fi
  for precision in ${REF_PRECISIONS:-bf16}; do
    ref=()
    if [ -n "${TRACE_DIR:-}" ]; then
      ref=(--trace "$TRACE_DIR/sft_transformers_$precision$suffix.json")
      traces+=("${ref[1]}")
    fi
    results+=("$(python3 "$here"/sft_throughput_reference.py $ckpt --precision "$precision" "${ref[@]}" "$@" | tail -1)")
    echo "${results[-1]}"
  done
done
python3 - "${results[@]}" <<'PY'
import json, sys
rows = [json.loads(r) for r in sys.argv[1:] if r.startswith("{")]
print(f"{'checkpointing':>13} {'impl':>16} {'tokens/s':>10} {'MFU':>6} {'peak GiB':>9}")
for r in rows:
    print(f"{str(r['checkpointing']):>13} {r['impl']:>16} {r['tokens_per_second']:>10.0f} {r['mfu']:>6.1%} {r['peak_memory_gib']:>9.1f}")
for ck in (False, True):
    for mine in ("musacoder", "musacoder_one_pass"):
        ours = [r for r in rows if r["impl"] == mine and r["checkpointing"] == ck]
        for impl in ("transformers", "transformers_amp", "musacoder"):
            ref = [r for r in rows if r["impl"] == impl and r["checkpointing"] == ck]
            if ours and ref and impl != mine:
                print(f"checkpointing={ck}: {mine}/{impl} tokens/s = "
                      f"{ours[0]['tokens_per_second'] / ref[0]['tokens_per_second']:.2f}x")
PY
for t in "${traces[@]}"; do
  echo "== $t"
  python3 "$here"/../common/trace_summary.py "$t" --per 2 --top 20
done
