"""Reference side of the Qwen3.5 hybrid parity tests (qwen3_5_parity_test.cpp): transformers builds tiny
random qwen3_5 checkpoints (VLM-wrapped Qwen3_5ForConditionalGeneration and text-only Qwen3_5ForCausalLM,
tied and untied embeddings), their logits, and the gradients of a loss; it also reloads checkpoints that
our C++ writer saved.

  make  --out DIR                 one sub-directory per case: config.json + model.safetensors (transformers'
                                  save_pretrained), ref.safetensors (ids_k, logits_k), grad.safetensors
  check --case DIR --saved DIR    transformers reloads DIR/saved; weights and logits must equal the original's
  gpu   --out DIR                 (GPU) a 4-layer random model of Qwen3.5-9B's layer shapes in bf16 on CUDA
                                  (3 Gated DeltaNet + 1 gated attention), saved, with reference logits in bf16
                                  and, from the same weights, in float32 (logits32_k)

ref.safetensors: ids_k (B, T) int64 and logits_k (B, T, V) float32, ascending T, the longest (> the delta
rule's chunk size, 64) as a batch of two rows. grad.safetensors: grad_ids (2, T), loss (scalar) and one
tensor per parameter, named in the text-only naming ("model.layers.0...."), of
loss = cross_entropy(logits[:, :-1], ids[:, 1:]) (mean). Exit status: 0 ok, 1 mismatch, 2 usage.
"""
import argparse
import json
import os
import sys

import torch
import transformers
from safetensors.torch import load_file, save_file

TEXT = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4,
            num_key_value_heads=2, head_dim=32, linear_num_key_heads=2, linear_num_value_heads=4,
            linear_key_head_dim=16, linear_value_head_dim=16, linear_conv_kernel_dim=4, max_position_embeddings=512,
            rms_norm_eps=1e-6,
            rope_parameters=dict(rope_type="default", rope_theta=1e7, partial_rotary_factor=0.25,
                                 mrope_section=[2, 1, 1], mrope_interleaved=True))
VISION = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, patch_size=4,
              num_position_embeddings=16)

# name -> (VLM-wrapped?, tied?, text-config overrides)
CASES = {
    "vlm_tied": (True, True, {}),
    "vlm_untied": (True, False, dict(layer_types=["linear_attention", "full_attention", "linear_attention",
                                                  "full_attention"])),
    "text_untied": (False, False, dict(linear_num_key_heads=4, attention_bias=True)),
    "text_tied": (False, True, dict(num_hidden_layers=3, full_attention_interval=3, num_key_value_heads=4)),
}
LENGTHS = [1, 9, 70, 150]  # the last one (2 rows) spans three 64-token chunks


def build(wrapped, tied, extra, seed):
    torch.manual_seed(seed)
    text = {**TEXT, **extra}
    if wrapped:
        cfg = transformers.Qwen3_5Config(text_config=text, vision_config=VISION, tie_word_embeddings=tied)
        model = transformers.Qwen3_5ForConditionalGeneration(cfg)
    else:
        cfg = transformers.Qwen3_5TextConfig(**text, tie_word_embeddings=tied)
        model = transformers.Qwen3_5ForCausalLM(cfg)
    # Random init is tiny (std 0.02) and norms start at 0: widen everything so each term matters.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return model.float().eval()


def load(path):
    cfg = json.load(open(os.path.join(path, "config.json")))
    cls = (transformers.Qwen3_5ForConditionalGeneration if cfg["model_type"] == "qwen3_5"
           else transformers.Qwen3_5ForCausalLM)
    return cls.from_pretrained(path, dtype=torch.float32).eval()


def logits_of(model, ids):
    with torch.no_grad():
        return model(input_ids=ids).logits.float()


def text_name(name):
    return name.replace("model.language_model.", "model.", 1)


def gradients(model, ids):
    model.zero_grad()
    logits = model(input_ids=ids).logits
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
    loss.backward()
    out = {"grad_ids": ids, "loss": loss.detach().reshape(1)}
    for name, p in model.named_parameters():
        if name.startswith("model.visual.") or p.grad is None:
            continue
        out[text_name(name)] = p.grad.detach().clone()
    return out


def cmd_make(args):
    for k, (name, (wrapped, tied, extra)) in enumerate(CASES.items()):
        out = os.path.join(args.out, name)
        model = build(wrapped, tied, extra, seed=2000 + k)
        model.save_pretrained(out)
        if wrapped and tied:
            # Released checkpoints carry a multi-token-prediction head (mtp.*) that transformers skips: add
            # one, so the loader's skip list and the save pass-through are exercised.
            weights = load_file(os.path.join(out, "model.safetensors"))
            weights["mtp.fc.weight"] = torch.randn(TEXT["hidden_size"], 2 * TEXT["hidden_size"], generator=
                                                   torch.Generator().manual_seed(5))
            save_file(weights, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
        g = torch.Generator().manual_seed(11 + k)
        ref = {}
        for i, t in enumerate(LENGTHS):
            batch = 2 if i == len(LENGTHS) - 1 else 1
            ids = torch.randint(0, TEXT["vocab_size"], (batch, t), generator=g)
            ref[f"ids_{i}"] = ids
            ref[f"logits_{i}"] = logits_of(model, ids)
        save_file(ref, os.path.join(out, "ref.safetensors"))
        grad_ids = torch.randint(0, TEXT["vocab_size"], (2, 80), generator=g)
        save_file(gradients(model, grad_ids), os.path.join(out, "grad.safetensors"))
    print(json.dumps({"cases": list(CASES), "transformers": transformers.__version__, "torch": torch.__version__}))
    return 0


def cmd_check(args):
    ref = load_file(os.path.join(args.case, "ref.safetensors"))
    orig, saved = load(args.case), load(args.saved)
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
    # Weights are compared bit for bit above; the logits check the config we wrote (tying, layer types,
    # partial RoPE), whose mistakes move logits by far more than 1e-5.
    if worst > 1e-5:
        bad.append(f"reloaded logits differ from the original checkpoint's: max abs {worst:g}")
    print(json.dumps({"case": args.case, "max_abs": worst, "problems": bad}))
    return 1 if bad else 0


def cmd_gpu(args):
    """Qwen3.5-9B's text config with 4 layers, random weights (widened like the tiny cases), bf16 on CUDA."""
    cfg = transformers.Qwen3_5TextConfig(
        vocab_size=248320, hidden_size=4096, intermediate_size=12288, num_hidden_layers=4, num_attention_heads=16,
        num_key_value_heads=4, head_dim=256, linear_num_key_heads=16, linear_num_value_heads=32,
        linear_key_head_dim=128, linear_value_head_dim=128, linear_conv_kernel_dim=4, max_position_embeddings=262144,
        rms_norm_eps=1e-6, tie_word_embeddings=False,
        rope_parameters=dict(rope_type="default", rope_theta=1e7, partial_rotary_factor=0.25,
                             mrope_section=[11, 11, 10], mrope_interleaved=True))
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.Qwen3_5ForCausalLM(cfg).to(torch.bfloat16)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "norm" in name:
                    p.add_(torch.randn_like(p) * 0.1)
    model.eval()
    model.save_pretrained(args.out)
    g = torch.Generator().manual_seed(1)
    ref = {}
    for i, (b, t) in enumerate([(1, 512), (2, 200)]):
        ids = torch.randint(0, cfg.vocab_size, (b, t), generator=g)
        ref[f"ids_{i}"] = ids
        ref[f"logits_{i}"] = logits_of(model, ids.cuda()).cpu()
    # The same weights in float32: the exact model, against which the test measures how often bf16 alone (ours
    # and transformers') changes the argmax.
    model.float()
    for i in range(2):
        ref[f"logits32_{i}"] = logits_of(model, ref[f"ids_{i}"].cuda()).cpu()
    save_file(ref, os.path.join(args.out, "ref.safetensors"))
    print(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}))
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
    args = p.parse_args()
    return {"make": cmd_make, "check": cmd_check, "gpu": cmd_gpu}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
