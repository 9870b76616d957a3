"""Reference side of the RL trainer's integration tests (transformers + plain torch).

  make --out DIR                          tiny Qwen2 checkpoint with a ChatML tokenizer whose vocabulary covers the
                                          bundled tasks' prompts (DIR/model), and the same without a chat template
                                          (DIR/base_no_chat)
  loss --model DIR --batch F --out F      the GRPO loss of one recorded batch (ids, mask, advantages, old and
                                          reference logprobs) and its gradients, by autograd over full logits:
                                            rho = exp(logp - old); pg = -min(rho A, clip(rho, 1-el, 1+eh) A)
                                            k3 = exp(ref - logp) - (ref - logp) - 1
                                            loss = mean_rows(sum_t m pg / sum_t m) + coef * mean_rows(sum_t m k3 / sum_t m)
Exit status: 0 ok, 2 usage.
"""
import argparse
import glob
import json
import os
import sys

import torch
import transformers
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sft_reference  # noqa: E402  (the tokenizer builder and chat template of the SFT tests)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def corpus():
    texts = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tasks", "**", "*.py"), recursive=True)):
        with open(path) as f:
            texts.append(f.read())
    for path in sorted(glob.glob(os.path.join(ROOT, "solutions", "cpu", "activation", "*.py"))):
        with open(path) as f:
            texts.append(f.read())
    texts += ["ModelNew load_inline ```python compile_error wrong_answer format_error correctness speedup",
              sft_reference.DEFAULT_SYSTEM, "<|im_start|>system\nuser\nassistant\n"]
    return texts * 2


def cmd_make(args):
    model_dir = os.path.join(args.out, "model")
    os.makedirs(model_dir)
    vocab = sft_reference.build_tokenizer(model_dir, corpus())
    with open(os.path.join(model_dir, "tokenizer.json")) as f:
        special = {t["content"]: t["id"] for t in json.load(f)["added_tokens"]}
    torch.manual_seed(0)
    config = transformers.Qwen2Config(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16384,
                                      tie_word_embeddings=True, eos_token_id=special["<|im_end|>"], bos_token_id=None)
    model = transformers.Qwen2ForCausalLM(config)
    model.save_pretrained(model_dir, safe_serialization=True)
    # The same model with a tokenizer that has no chat tokens (<|im_start|> renamed): a base checkpoint train-rl
    # must refuse.
    base = os.path.join(args.out, "base_no_chat")
    os.makedirs(base)
    model.save_pretrained(base, safe_serialization=True)
    with open(os.path.join(model_dir, "tokenizer.json")) as f:
        text = f.read().replace("<|im_start|>", "<|xx_begin|>")
    with open(os.path.join(base, "tokenizer.json"), "w") as f:
        f.write(text)
    return 0


def cmd_loss(args):
    model = transformers.AutoModelForCausalLM.from_pretrained(args.model, torch_dtype=torch.float32)
    b = load_file(args.batch)
    ids, mask = b["input_ids"].long(), b["mask"].double()
    adv, old, ref = b["advantage"].double(), b["old_logp"].double(), b["ref_logp"].double()
    el, eh, coef = (float(x) for x in b["hyper"].tolist())
    logits = model(input_ids=ids).logits.double()
    logp = torch.log_softmax(logits, -1).gather(-1, b["targets"].long().unsqueeze(-1)).squeeze(-1)
    rho = torch.exp(logp - old)
    pg = -torch.min(rho * adv, torch.clamp(rho, 1 - el, 1 + eh) * adv)
    lr = ref - logp
    k3 = torch.exp(lr) - lr - 1
    rows = mask.sum(1) > 0
    per_row = lambda x: ((x * mask).sum(1)[rows] / mask.sum(1)[rows]).mean()
    loss = per_row(pg) + coef * per_row(k3)
    loss.backward()
    out = {"loss": loss.detach().float().reshape(1)}
    for name, p in model.named_parameters():
        out["grad." + name] = p.grad.float().contiguous()
    save_file(out, args.out)
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--out", required=True)
    l = sub.add_parser("loss")
    for a in ("--model", "--batch", "--out"):
        l.add_argument(a, required=True)
    args = p.parse_args()
    return {"make": cmd_make, "loss": cmd_loss}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
