"""Reference side of the BPE trainer test (the `tokenizers` library).

  python3 bpe_trainer_reference.py --dir DIR

Reads DIR/input.json: {"corpus": [...], "heldout": [...], "tokenizers": {"NAME": "PATH/tokenizer.json"},
"vocab_size": N, "min_frequency": M, "special_tokens": [...]}. Writes DIR/reference.json:
  "encoded": {NAME: {"ids": [[...]], "decoded": [...]}}  -- each of our tokenizer.json files loaded by the
                                                           library, held-out texts encoded and decoded;
  "hf_merges": [["a", "b"], ...], "hf_vocab_size": N      -- the library's BpeTrainer on the same corpus
                                                           with the same pipeline and options.
Exits 77 with a message when the `tokenizers` package is missing.
"""
import argparse
import json
import os
import sys

try:
    from tokenizers import Tokenizer, pre_tokenizers, trainers
    from tokenizer_reference import qwen2_byte_level_bpe
except ImportError as e:
    print(f"the `tokenizers` Python package is missing ({e}); pip install tokenizers", file=sys.stderr)
    sys.exit(77)


def hf_train(cfg):
    """The shape of sft_reference.py's build_tokenizer."""
    tok = qwen2_byte_level_bpe()
    trainer = trainers.BpeTrainer(vocab_size=cfg["vocab_size"], min_frequency=cfg["min_frequency"],
                                  special_tokens=cfg["special_tokens"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(cfg["corpus"], trainer=trainer)
    model = json.loads(tok.to_str())["model"]
    return model["merges"], tok.get_vocab_size()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    args = ap.parse_args()
    with open(os.path.join(args.dir, "input.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    encoded = {}
    for name, path in cfg["tokenizers"].items():
        tok = Tokenizer.from_file(path)
        ids = [tok.encode(t, add_special_tokens=False).ids for t in cfg["heldout"]]
        encoded[name] = {"ids": ids, "decoded": [tok.decode(i, skip_special_tokens=False) for i in ids]}
    merges, vocab_size = hf_train(cfg)
    out = {"encoded": encoded, "hf_merges": merges, "hf_vocab_size": vocab_size}
    with open(os.path.join(args.dir, "reference.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
