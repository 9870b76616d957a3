#!/usr/bin/env bash
# When does the quickstart's from-scratch model learn to read the operator from its prompt? From a quickstart run
# directory (its model-init/ and data/train/sft.jsonl), trains on all pairs but the last 16 for UPDATES updates with
# a checkpoint every SAVE, then probes every checkpoint on the 16 unseen pairs and the last one on the trained pairs
# (op_probe.py). On the GPU machine, copy the run's model-init/ and sft.jsonl into a carried folder first.
#   dev/quickstart_learning/sweep.sh RUN_DIR OUT_DIR [cpu|cuda]
# Environment: UPDATES (4000; not STEPS, which the GPU scripts use for their step list) SAVE (500) LR (3e-3)
#              SCHED (cosine) LOSS_ON (all-assistant) BATCH_TOKENS (4096)
#              MUSACODER (build/tools/musacoder/musacoder)
set -euo pipefail
run=$1 out=$2 backend=${3:-cuda}
here=$(cd "$(dirname "$0")" && pwd)
tool=${MUSACODER:-build/tools/musacoder/musacoder}
mkdir -p "$out"
n=$(wc -l <"$run/data/train/sft.jsonl")
head -n $((n - 16)) "$run/data/train/sft.jsonl" >"$out/train.jsonl"
tail -n 16 "$run/data/train/sft.jsonl" >"$out/unseen.jsonl"
start=$SECONDS
"$tool" train-sft --base-model "$run/model-init" --dataset "$out/train.jsonl" --backend "$backend" \
  --max-seq-len 2048 --per-device-batch-tokens "${BATCH_TOKENS:-4096}" --learning-rate "${LR:-3e-3}" \
  --lr-scheduler "${SCHED:-cosine}" --warmup-ratio 0.03 --max-steps "${UPDATES:-4000}" --save-steps "${SAVE:-500}" \
  --logging-steps 100 --loss-on "${LOSS_ON:-all-assistant}" --output-dir "$out/sft" --no-progress >"$out/train.log" 2>&1
echo "trained ${UPDATES:-4000} updates in $((SECONDS - start)) s"
python3 "$here/op_probe.py" "$out/unseen.jsonl" $(ls -d "$out"/sft/checkpoint-* | sort -t- -k2 -n) 2>/dev/null
python3 "$here/op_probe.py" "$out/train.jsonl" "$out/sft" 2>/dev/null
