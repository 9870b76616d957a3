"""The baseline of perf/sft_throughput: an eager PyTorch/transformers SFT loop on the same random model shape
(Qwen2.5-Coder-1.5B by default), bf16 parameters, SDPA attention, fused torch.optim.AdamW, optional gradient
checkpointing, one 4096-token row per step. Prints one JSON line like sft_throughput.

--precision bf16 (default): the loop updates bf16 parameters directly (no fp32 master copy, bf16 Adam moments) —
the cheaper of the two precision schemes, so the comparison is conservative for us.
--precision amp: the scheme our trainer uses and HF Trainer's `--bf16` runs — float32 parameters (the masters),
the forward and backward under torch.autocast(bfloat16), fused AdamW over float32 parameters and moments.
"""
import argparse
import json
import time

import torch
import transformers


def main():
    p = argparse.ArgumentParser()
    for name, default in (("hidden", 1536), ("intermediate", 8960), ("layers", 28), ("heads", 12), ("kv-heads", 2),
                          ("vocab", 151936), ("seq", 4096), ("batch", 1), ("steps", 10), ("warmup", 3)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--gradient-checkpointing", action="store_true")
    p.add_argument("--precision", choices=["bf16", "amp"], default="bf16")
    p.add_argument("--peak-tflops", type=float, default=989.0)
    p.add_argument("--trace", help="also trace two steps with the PyTorch profiler into this file")
    a = p.parse_args()
    cfg = transformers.Qwen2Config(vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=a.intermediate,
                                   num_hidden_layers=a.layers, num_attention_heads=a.heads,
                                   num_key_value_heads=a.kv_heads, max_position_embeddings=32768,
                                   tie_word_embeddings=True, rope_theta=1e6)
    amp = a.precision == "amp"
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32 if amp else torch.bfloat16,
                                                          attn_implementation="sdpa")
    model = model.cuda().train()
    if a.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, betas=(0.9, 0.95), fused=True)
    ids = torch.randint(0, a.vocab, (a.batch, a.seq), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    if a.trace:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(2):
                step()
            torch.cuda.synchronize()
        prof.export_chrome_trace(a.trace)
    n_params = sum(p.numel() for p in model.parameters())
    per_token = 6 * n_params + 6 * a.layers * a.hidden * a.seq / 2
    tps = a.batch * a.seq * a.steps / secs
    print(json.dumps({"impl": "transformers_amp" if amp else "transformers", "checkpointing": a.gradient_checkpointing, "seq": a.seq,
                      "tokens_per_second": round(tps, 1), "mfu": round(tps * per_token / (a.peak_tflops * 1e12), 4),
                      "peak_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
                      "loss": round(loss.item(), 4), "params": n_params, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
