"""The baseline of perf/deltanet_kernels: transformers' torch_chunk_gated_delta_rule (the torch fallback
that Qwen3.5 runs without flash-linear-attention) on CUDA, at one Gated DeltaNet layer's shape.

  python3 torch_fallback.py --batch 1 --seq 4096 --k-heads 16 --v-heads 32 --dk 128 --dv 128 [--iters 10]

Prints one JSON line: forward and forward+backward median seconds and tokens/s (inputs float32, as the
fallback computes; q/k L2-normalised inside, as Qwen3.5 calls it).
"""
import argparse
import json
import time

import torch
from transformers.models.qwen3_5.modeling_qwen3_5 import torch_chunk_gated_delta_rule


def inputs(a, requires_grad):
    g = torch.Generator(device="cuda").manual_seed(0)
    def r(*shape):
        return torch.randn(*shape, device="cuda", generator=g)
    q, k = r(a.batch, a.seq, a.k_heads, a.dk), r(a.batch, a.seq, a.k_heads, a.dk)
    v = r(a.batch, a.seq, a.v_heads, a.dv)
    gate = -torch.rand(a.batch, a.seq, a.v_heads, device="cuda", generator=g) * 0.3
    beta = torch.rand(a.batch, a.seq, a.v_heads, device="cuda", generator=g)
    xs = [q, k, v, gate, beta]
    return [x.requires_grad_(requires_grad) for x in xs]


def fallback(q, k, v, gate, beta):
    """The layer's call: q/k heads repeated to the value heads first (transformers up to 5.2x does this in the
    module, later versions inside torch_chunk_gated_delta_rule; repeating here works with both)."""
    rep = v.shape[2] // q.shape[2]
    if rep > 1:
        q, k = q.repeat_interleave(rep, dim=2), k.repeat_interleave(rep, dim=2)
    return torch_chunk_gated_delta_rule(q, k, v, g=gate, beta=beta, use_qk_l2norm_in_kernel=True)


def median_seconds(fn, iters):
    for _ in range(2):
        fn()
    times = []
    for _ in range(iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def main():
    p = argparse.ArgumentParser()
    for name, default in [("batch", 1), ("seq", 4096), ("k-heads", 16), ("v-heads", 32), ("dk", 128), ("dv", 128),
                          ("iters", 10)]:
        p.add_argument("--" + name, type=int, default=default)
    a = p.parse_args()
    fwd_in = inputs(a, False)
    with torch.no_grad():
        fwd = median_seconds(lambda: fallback(*fwd_in), a.iters)
    bwd_in = inputs(a, True)

    def step():
        out, _ = fallback(*bwd_in)
        out.sum().backward()
    both = median_seconds(step, a.iters)
    tokens = a.batch * a.seq
    print(json.dumps({"impl": "transformers torch_chunk_gated_delta_rule", "forward_s": fwd, "forward_backward_s": both,
                      "forward_tokens_per_s": tokens / fwd, "forward_backward_tokens_per_s": tokens / both,
                      "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
