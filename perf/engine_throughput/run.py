"""Engine throughput vs transformers' generate, side by side in one run (GPU machine).

  python3 perf/engine_throughput/run.py --engine build-gpu/perf/engine_throughput/engine_throughput \
      [--batch-sizes 1,16,64,256] [--prompt-len 512] [--new-tokens 512] [--model DIR] [--json OUT] [--compare-unfused]
      [--compare-one-step] [--compare-decode-linear] [--compare-no-pdl] [--trace-dir DIR [--trace-tokens 32]]

Without --model: a random model of Qwen2.5-Coder-1.5B's shape in bf16 (saved to a temp dir). Both sides decode
greedily with eos ignored: output tokens/s per batch size, and batch-1 decode as a fraction of the HBM bound
(weight bytes / bandwidth per token). transformers: bf16, SDPA, static cache (cache_implementation="static").
--compare-unfused: our engine once more with its modules' ops instead of the fused kernels (fused_ops_cuda.h) and
separate q/k/v and gate/up matmuls (fused_linear.h).
--compare-one-step: our engine once more with one decode step per host round trip (--decode-steps 1) instead of
its multi-step default (EngineOptions::decode_steps); print default / one-step per batch.
--compare-decode-linear: our engine once more with --no-decode-linear (cuBLAS after the norm and SiLU·mul kernels
instead of the decode_linear kernels of decode_linear_cuda.h, batches of at most 4); print with / without per batch.
--compare-no-pdl: our engine once more with --no-pdl (the decode_linear kernels launched the ordinary way instead of
with programmatic dependent launch); print with / without per batch.
--trace-dir: our engine also traces --trace-tokens decode steps per batch size with the PyTorch profiler
(DIR/engine_b<B>.json) and the GPU time per step by kernel is printed (perf/common/trace_summary.py).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
import transformers

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import trace_summary  # noqa: E402

HBM_TBPS = {"H100": 3.35, "H200": 4.8, "A100": 2.0}  # SXM parts, TB/s


def bandwidth(name):
    for k, v in HBM_TBPS.items():
        if k in name:
            return v * 1e12
    return None


def make_model(out):
    cfg = transformers.Qwen2Config(vocab_size=151936, hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                                   num_attention_heads=12, num_key_value_heads=2, max_position_embeddings=32768,
                                   rope_theta=1e6, rms_norm_eps=1e-6, tie_word_embeddings=True, eos_token_id=151643)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation="sdpa")
    model.save_pretrained(out, safe_serialization=True)
    return model.eval()


def hf_throughput(model, batch, prompt_len, new_tokens):
    g = torch.Generator().manual_seed(batch)
    ids = torch.randint(100, model.config.vocab_size, (batch, prompt_len), generator=g).cuda()
    kw = dict(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
              cache_implementation="static", pad_token_id=0)
    with torch.no_grad():
        # Warm-up with the timed run's own lengths: with a static cache transformers compiles the decode step
        # (torch.compile) per cache shape, and a shorter warm-up left that compilation inside the timed run
        # (batch 1 measured 13.5 tokens/s on an H100, 2026-12-06).
        model.generate(ids, **kw)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = model.generate(ids, **kw)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
    tokens = (out.shape[1] - prompt_len) * batch
    return {"engine": "transformers", "batch": batch, "output_tokens": tokens, "seconds": dt, "tokens_per_s": tokens / dt}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--engine", required=True)
    p.add_argument("--model")
    p.add_argument("--batch-sizes", default="1,16,64,256")
    p.add_argument("--prompt-len", type=int, default=512)
    p.add_argument("--new-tokens", type=int, default=512)
    p.add_argument("--skip-transformers", action="store_true")
    p.add_argument("--json")
    p.add_argument("--compare-unfused", action="store_true",
                   help="also run the engine with --no-fused-ops --no-fused-projections; print fused / unfused per batch")
    p.add_argument("--compare-one-step", action="store_true",
                   help="also run the engine with --decode-steps 1; print multi-step / one-step per batch")
    p.add_argument("--compare-decode-linear", action="store_true",
                   help="also run the engine with --no-decode-linear; print with / without per batch")
    p.add_argument("--compare-no-pdl", action="store_true",
                   help="also run the engine with --no-pdl; print with / without per batch")
    p.add_argument("--trace-dir", help="also trace decode steps of our engine per batch size (PyTorch profiler)")
    p.add_argument("--trace-tokens", type=int, default=32)
    a = p.parse_args()
    batches = [int(b) for b in a.batch_sizes.split(",")]
    tmp = tempfile.mkdtemp(prefix="engine-bench-")
    model_dir = a.model or tmp
    model = make_model(tmp) if not a.model else transformers.AutoModelForCausalLM.from_pretrained(
        a.model, dtype=torch.bfloat16, attn_implementation="sdpa").cuda().eval()
    weight_bytes = sum(t.numel() * t.element_size() for t in model.parameters())
    hf = {}
    if not a.skip_transformers:
        for b in batches:
            hf[b] = hf_throughput(model, b, a.prompt_len, a.new_tokens)
            print(json.dumps(hf[b]), flush=True)
    del model
    torch.cuda.empty_cache()
    cmd = [a.engine, "--model", model_dir, "--batch-sizes", a.batch_sizes, "--prompt-len", str(a.prompt_len),
           "--new-tokens", str(a.new_tokens)]
    traced = ["--trace-dir", a.trace_dir, "--trace-tokens", str(a.trace_tokens)] if a.trace_dir else []
    if a.trace_dir:
        os.makedirs(a.trace_dir, exist_ok=True)
    ours, code = run_engine(cmd + traced)
    unfused = run_engine(cmd + ["--no-fused-ops", "--no-fused-projections"])[0] if a.compare_unfused else {}
    one_step = run_engine(cmd + ["--decode-steps", "1"])[0] if a.compare_one_step else {}
    no_gemv = run_engine(cmd + ["--no-decode-linear"])[0] if a.compare_decode_linear else {}
    no_pdl = run_engine(cmd + ["--no-pdl"])[0] if a.compare_no_pdl else {}
    gpu = torch.cuda.get_device_name()
    bw = bandwidth(gpu)
    print(f"\n{gpu}, {weight_bytes / 1e9:.2f} GB of weights, prompt {a.prompt_len}, new {a.new_tokens}")
    print(f"{'batch':>6} {'musacoder tok/s':>16} {'transformers tok/s':>19} {'ratio':>7}")
    rows = []
    for b in batches:
        o, h = ours.get(b, {}), hf.get(b, {})
        ratio = o.get("tokens_per_s", 0) / h["tokens_per_s"] if h and o else float("nan")
        print(f"{b:>6} {o.get('tokens_per_s', float('nan')):>16.1f} {h.get('tokens_per_s', float('nan')):>19.1f} {ratio:>7.2f}")
        rows.append({"batch": b, "musacoder": o, "transformers": h, "ratio": ratio})
        # Our engine against itself with one feature off, same batch: (row key, what it is, ratio name, runs).
        for key, label, ratio_name, other in (("musacoder_unfused", "unfused", "fused / unfused", unfused),
                                              ("musacoder_one_step", "one step per round trip",
                                               "multi-step / one-step", one_step),
                                              ("musacoder_no_decode_linear", "without decode_linear",
                                               "with / without", no_gemv),
                                              ("musacoder_no_pdl", "without PDL", "with / without", no_pdl)):
            if b in other and o:
                rows[-1][key] = other[b]
                print(f"{'':>6} {label} {other[b]['tokens_per_s']:>8.1f} tok/s: {ratio_name} "
                      f"{o['tokens_per_s'] / other[b]['tokens_per_s']:.2f}x, decode step "
                      f"{other[b]['decode_step_s'] * 1e3:.2f} -> {o['decode_step_s'] * 1e3:.2f} ms")
    summary = {"gpu": gpu, "weight_bytes": weight_bytes, "rows": rows, "torch": torch.__version__,
               "transformers": transformers.__version__}
    if 1 in ours and bw:
        bound = weight_bytes / bw
        frac = bound / ours[1]["decode_step_s"]
        summary["batch1_decode_step_s"] = ours[1]["decode_step_s"]
        summary["batch1_bandwidth_bound_s"] = bound
        summary["batch1_fraction_of_bound"] = frac
        print(f"batch-1 decode: {ours[1]['decode_step_s'] * 1e3:.2f} ms/token; HBM bound {bound * 1e3:.2f} ms "
              f"({weight_bytes / 1e9:.2f} GB at {bw / 1e12:.2f} TB/s) -> {100 * frac:.1f}% of the bound")
    for b in batches if a.trace_dir else []:
        path = os.path.join(a.trace_dir, "engine_b%d.json" % b)
        if os.path.exists(path):
            print(f"\nbatch {b}: {a.trace_tokens} decode steps traced ({path})")
            trace_summary.print_summary(trace_summary.summarize(trace_summary.load_events(path), 15), a.trace_tokens)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=1)
    return code


def run_engine(cmd):
    """Our engine's JSON lines by batch size, and its exit code."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    sys.stderr.write(proc.stderr[-3000:])
    out = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            r["fused_ops"] = "--no-fused-ops" not in cmd
            r["fused_projections"] = "--no-fused-projections" not in cmd
            r["decode_linear"] = "--no-decode-linear" not in cmd
            r["pdl"] = "--no-pdl" not in cmd
            r["decode_steps"] = cmd[cmd.index("--decode-steps") + 1] if "--decode-steps" in cmd else "default"
            out[r["batch"]] = r
            print(json.dumps(r), flush=True)
    return out, proc.returncode


if __name__ == "__main__":
    sys.exit(main())
