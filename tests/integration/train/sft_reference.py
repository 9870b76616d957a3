"""Reference side of the SFT trainer's integration tests (transformers, PEFT, TensorBoard).

  make   --out DIR                       tiny Qwen2 checkpoint + byte-level BPE tokenizer with ChatML (DIR/model),
                                         datasets (DIR/train.jsonl: 32 conversations, DIR/eval.jsonl) and an
                                         unknown-architecture checkpoint (DIR/gpt2)
  step   --model DIR --batch F --out F   loss and gradients of one packed micro-batch, computed by transformers
                                         one example at a time (no packing: proves the packed mask isolates them)
  logits --model DIR --ids F --out F     logits of a saved checkpoint reloaded by transformers
  peft   --model DIR --adapter DIR --ids F --out F   logits of base + PEFT adapter (peft.PeftModel)
  tb     --dir DIR                       scalars read back by tensorboard's event reader, as JSON on stdout
Exit status: 0 ok, 2 usage.
"""
import argparse
import json
import os
import random
import sys

import torch
import transformers
from safetensors.torch import load_file, save_file

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                 r"\s*[\r\n]+|\s+(?!\S)|\s+")
CHATML_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
# The Qwen2.5 chat template (no tools): what transformers and our renderer both implement.
CHAT_TEMPLATE = ("{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + "
                 "'<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\n" + DEFAULT_SYSTEM + "<|im_end|>\\n' }}"
                 "{%- endif %}{%- for message in messages %}{%- if not (message.role == 'system' and loop.first) %}"
                 "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}{%- endif %}"
                 "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}")
OPS = ["relu", "gelu", "softmax", "layernorm", "matmul", "conv2d", "sigmoid", "tanh"]


def conversations(n, seed):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        op, a, b = OPS[i % len(OPS)], rng.randint(2, 9), rng.randint(10, 99)
        answer = f"out[i] = {op}(x[i]) * {a} + {b};"
        if i % 4 == 0:
            out.append({"prompt": f"kernel {i}: {op} scale {a} bias {b}", "completion": answer})
        elif i % 4 == 1:
            out.append({"messages": [{"role": "system", "content": "Write CUDA."},
                                     {"role": "user", "content": f"kernel {i} {op}"},
                                     {"role": "assistant", "content": answer}]})
        else:
            out.append({"messages": [{"role": "user", "content": f"task {i}: {op}"},
                                     {"role": "assistant", "content": f"plan {a}"},
                                     {"role": "user", "content": f"now code {b}"},
                                     {"role": "assistant", "content": answer}]})
    return out


def build_tokenizer(out, texts):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=384, special_tokens=CHATML_SPECIAL, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    tok.save(os.path.join(out, "tokenizer.json"))
    config = {"tokenizer_class": "Qwen2Tokenizer", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
              "chat_template": CHAT_TEMPLATE, "model_max_length": 4096}
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump(config, f)
    return tok.get_vocab_size()


def cmd_make(args):
    train, evals = conversations(32, 1), conversations(6, 2)
    texts = [json.dumps(c) for c in train + evals] * 4 + [DEFAULT_SYSTEM, "<|im_start|>system\nuser\nassistant\n"]
    model_dir = os.path.join(args.out, "model")
    os.makedirs(model_dir)
    vocab = build_tokenizer(model_dir, texts)
    assert vocab <= 400, vocab
    torch.manual_seed(0)
    cfg = transformers.Qwen2Config(vocab_size=400, hidden_size=96, intermediate_size=192, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                                   tie_word_embeddings=False, rope_theta=10000.0, eos_token_id=2)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    model.save_pretrained(model_dir, safe_serialization=True)
    for name, rows in (("train.jsonl", train), ("eval.jsonl", evals)):
        with open(os.path.join(args.out, name), "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    gpt2 = os.path.join(args.out, "gpt2")
    transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=400)).save_pretrained(gpt2)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        with open(os.path.join(model_dir, f)) as src, open(os.path.join(gpt2, f), "w") as dst:
            dst.write(src.read())
    print(json.dumps({"vocab": vocab}))
    return 0


def load(model_dir):
    return transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32,
                                                             attn_implementation="sdpa")


def cmd_step(args):
    model = load(args.model).train()
    b = load_file(args.batch)
    ids, seq = b["input_ids"][0], b["sequence_ids"][0]
    positions, targets = b["positions"].tolist(), b["targets"]
    total = torch.zeros(())
    for s in seq.unique().tolist():
        idx = (seq == s).nonzero().flatten()
        lo, hi = int(idx[0]), int(idx[-1]) + 1
        logits = model(input_ids=ids[lo:hi].unsqueeze(0)).logits[0]
        rows = [(p - lo, k) for k, p in enumerate(positions) if lo <= p < hi]
        if rows:
            sel = torch.tensor([r for r, _ in rows])
            tgt = targets[torch.tensor([k for _, k in rows])]
            total = total + torch.nn.functional.cross_entropy(logits[sel], tgt, reduction="sum")
    loss = total / len(positions)
    loss.backward()
    out = {"loss": loss.detach().reshape(1)}
    out.update({f"grad.{n}": p.grad for n, p in model.named_parameters()})
    save_file(out, args.out)
    return 0


def cmd_logits(args):
    model = load(args.model).eval()
    ids = load_file(args.ids)["input_ids"]
    with torch.no_grad():
        save_file({"logits": model(input_ids=ids).logits.float().contiguous()}, args.out)
    return 0


def cmd_peft(args):
    import peft
    model = peft.PeftModel.from_pretrained(load(args.model), args.adapter).eval()
    ids = load_file(args.ids)["input_ids"]
    with torch.no_grad():
        save_file({"logits": model(input_ids=ids).logits.float().contiguous()}, args.out)
    return 0


def cmd_tb(args):
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    files = [f for f in os.listdir(args.dir) if f.startswith("events.out.tfevents")]
    out = {}
    for name in sorted(files):
        for ev in EventFileLoader(os.path.join(args.dir, name)).Load():  # verifies the records' CRCs
            for v in ev.summary.value:
                value = v.simple_value if v.HasField("simple_value") else float(v.tensor.float_val[0])
                out.setdefault(v.tag, []).append([ev.step, value])
    print(json.dumps(out))
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=["make", "step", "logits", "peft", "tb"])
    for flag in ("--out", "--model", "--batch", "--ids", "--adapter", "--dir"):
        p.add_argument(flag)
    args = p.parse_args()
    return {"make": cmd_make, "step": cmd_step, "logits": cmd_logits, "peft": cmd_peft, "tb": cmd_tb}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
