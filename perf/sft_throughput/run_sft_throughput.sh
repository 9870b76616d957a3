#!/usr/bin/env bash
# SFT throughput, ours vs an eager transformers loop, side by side in one run (GPU machine):
#   cmake --build BUILD --target sft_throughput_bench && bash perf/sft_throughput/run_sft_throughput.sh BUILD
# Extra arguments go to both programs (e.g. --layers 4 for a quick look).
set -uo pipefail
BUILD="${1:-build}"; shift || true
here="$(cd "$(dirname "$0")" && pwd)"
results=()
for ckpt in "" "--gradient-checkpointing"; do
  results+=("$("$BUILD"/perf/sft_throughput/sft_throughput_bench $ckpt "$@" | tail -1)")
  results+=("$(python3 "$here"/sft_throughput_reference.py $ckpt "$@" | tail -1)")
done
printf '%s\n' "${results[@]}"
python3 - "${results[@]}" <<'PY'
import json, sys
rows = [json.loads(r) for r in sys.argv[1:] if r.startswith("{")]
print(f"{'checkpointing':>13} {'impl':>12} {'tokens/s':>10} {'MFU':>6} {'peak GiB':>9}")
for r in rows:
    print(f"{str(r['checkpointing']):>13} {r['impl']:>12} {r['tokens_per_second']:>10.0f} {r['mfu']:>6.1%} {r['peak_memory_gib']:>9.1f}")
for ck in (False, True):
    ours = [r for r in rows if r["impl"] == "musacoder" and r["checkpointing"] == ck]
    ref = [r for r in rows if r["impl"] == "transformers" and r["checkpointing"] == ck]
    if ours and ref:
        print(f"checkpointing={ck}: ours/transformers tokens/s = {ours[0]['tokens_per_second'] / ref[0]['tokens_per_second']:.2f}x")
PY
