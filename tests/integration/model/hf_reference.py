"""Reference side of the model parity tests: transformers builds tiny random checkpoints and their logits,
and reloads checkpoints written by our C++ writer.

  make  --out DIR                 one sub-directory per case (config.json + model.safetensors + ref.safetensors)
  check --case DIR --saved DIR    loads DIR/../saved checkpoint in transformers and compares with ref logits
  gpu   --out DIR                 (GPU) Qwen2.5-Coder-1.5B-shaped random bf16 model, reference logits, tokens/s

ref.safetensors holds, per sequence k: ids_k (B, T) int64 and logits_k (B, T, V) float32, in ascending
length (transformers' dynamic RoPE keeps state across calls; ascending order makes it equal a fresh module).
Exit status: 0 ok, 1 mismatch, 2 usage.
"""
import argparse
import json
import os
import sys
import time

import torch
import transformers
from safetensors.torch import load_file, save_file

TINY = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-6)

# name -> (config class, extra config, sequence lengths)
CASES = {
    "qwen2": (transformers.Qwen2Config, dict(tie_word_embeddings=True, rope_theta=1e6), [1, 5, 17, 40]),
    "qwen3": (transformers.Qwen3Config, dict(head_dim=24, tie_word_embeddings=False), [1, 6, 23, 40]),
    "llama": (transformers.LlamaConfig, dict(tie_word_embeddings=False, rope_theta=5e5), [1, 4, 19, 40]),
    "llama_rope_llama3": (transformers.LlamaConfig, dict(max_position_embeddings=256, rope_scaling=dict(
        rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
        original_max_position_embeddings=64)), [3, 70]),
    "qwen2_rope_yarn": (transformers.Qwen2Config, dict(max_position_embeddings=256, rope_scaling=dict(
        rope_type="yarn", factor=4.0, original_max_position_embeddings=64)), [3, 70]),
    "llama_rope_linear": (transformers.LlamaConfig, dict(rope_scaling=dict(rope_type="linear", factor=2.0)), [9, 30]),
    "qwen3_rope_dynamic": (transformers.Qwen3Config, dict(max_position_embeddings=32, rope_scaling=dict(
        rope_type="dynamic", factor=2.0)), [12, 50]),
}


def build_model(cls, extra, seed):
    torch.manual_seed(seed)
    cfg = cls(**{**TINY, **extra})
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32, attn_implementation="sdpa")
    # Random init is tiny (std 0.02); widen it so logits differ in more than the 5th digit.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return model.eval()


def logits_of(model, ids):
    with torch.no_grad():
        return model(input_ids=ids).logits.float()


def cmd_make(args):
    for k, (name, (cls, extra, lengths)) in enumerate(CASES.items()):
        out = os.path.join(args.out, name)
        model = build_model(cls, extra, seed=1000 + k)
        model.save_pretrained(out, safe_serialization=True)
        g = torch.Generator().manual_seed(7 + k)
        ref = {}
        for i, t in enumerate(sorted(lengths)):
            batch = 2 if i == len(lengths) - 1 else 1  # the longest one as a batch of two rows
            ids = torch.randint(0, TINY["vocab_size"], (batch, t), generator=g)
            ref[f"ids_{i}"] = ids
            ref[f"logits_{i}"] = logits_of(model, ids)
        save_file(ref, os.path.join(out, "ref.safetensors"))
    print(json.dumps({"cases": list(CASES), "transformers": transformers.__version__, "torch": torch.__version__}))
    return 0


def cmd_check(args):
    ref = load_file(os.path.join(args.case, "ref.safetensors"))
    orig = transformers.AutoModelForCausalLM.from_pretrained(args.case, dtype=torch.float32).eval()
    saved = transformers.AutoModelForCausalLM.from_pretrained(args.saved, dtype=torch.float32).eval()
    bad = []
    so, ss = orig.state_dict(), saved.state_dict()
    if so.keys() != ss.keys():
        bad.append(f"state dict keys differ: {sorted(set(so) ^ set(ss))}")
    for name in so.keys() & ss.keys():
        if not torch.equal(so[name], ss[name]):
            bad.append(f"tensor {name} differs after our save")
    worst = 0.0
    for i in range(len([k for k in ref if k.startswith("ids_")])):
        got = logits_of(saved, ref[f"ids_{i}"])
        worst = max(worst, (got - ref[f"logits_{i}"]).abs().max().item())
    # The tensors are compared bit for bit above; the logits check the config we wrote (tied
    # embeddings, RoPE scaling, norms), whose mistakes move logits by far more than 1e-5. Not
    # exactly 0: the reference logits come from another process, and oneDNN/MKL may take
    # another kernel for differently aligned buffers (seen: 3.6e-7 on a loaded 2-core machine).
    if worst > 1e-5:
        bad.append(f"reloaded logits differ from the original checkpoint's: max abs {worst:g}")
    print(json.dumps({"case": args.case, "max_abs": worst, "problems": bad}))
    return 1 if bad else 0


def cmd_gpu(args):
    """A random model of Qwen2.5-Coder-1.5B's shape on CUDA in bf16: reference logits and forward tokens/s."""
    cfg = transformers.Qwen2Config(vocab_size=151936, hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                                   num_attention_heads=12, num_key_value_heads=2, max_position_embeddings=32768,
                                   rope_theta=1e6, rms_norm_eps=1e-6, tie_word_embeddings=True)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation="sdpa")
    model.eval()
    model.save_pretrained(args.out, safe_serialization=True)
    g = torch.Generator().manual_seed(1)
    ref = {}
    for i, (b, t) in enumerate([(1, 64), (2, 512)]):
        ids = torch.randint(0, cfg.vocab_size, (b, t), generator=g)
        ref[f"ids_{i}"] = ids
        ref[f"logits_{i}"] = logits_of(model, ids.cuda()).cpu()
    save_file(ref, os.path.join(args.out, "ref.safetensors"))
    # Forward throughput: batch 4 x 1024 tokens, no grad, median of 10 after 3 warm-ups.
    ids = torch.randint(0, cfg.vocab_size, (args.bench_batch, args.bench_len), generator=g).cuda()
    times = []
    with torch.no_grad():
        for it in range(13):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            model(input_ids=ids)
            torch.cuda.synchronize()
            if it >= 3:
                times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2]
    print(json.dumps({"transformers_forward_tokens_per_s": ids.numel() / med, "median_s": med,
                      "batch": args.bench_batch, "seq": args.bench_len, "torch": torch.__version__,
                      "transformers": transformers.__version__, "gpu": torch.cuda.get_device_name()}))
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--out", required=True)
    c = sub.add_parser("check")
    c.add_argument("--case", required=True)
    c.add_argument("--saved", required=True)
    gp = sub.add_parser("gpu")
    gp.add_argument("--out", required=True)
    gp.add_argument("--bench-batch", type=int, default=4)
    gp.add_argument("--bench-len", type=int, default=1024)
    args = p.parse_args()
    return {"make": cmd_make, "check": cmd_check, "gpu": cmd_gpu}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
