#!/usr/bin/env python3
"""perf/compile_throughput/process_costs.py: what a fresh candidate process costs on this GPU
machine, and how those costs behave when several processes start at once — the fixed costs
that bound MooreEval's evaluations per second (every candidate runs in a fresh process with
its own CUDA context).

Like the warm runner's zygote, this process imports torch (and the modules the zygote
preloads) without initialising CUDA, then forks N children at the same moment. Each child
reports the seconds of each step of a candidate runner's set-up:
  ctx      torch.cuda.set_device + a first allocation (cuInit, the context)
  kernels  a first random draw, fill, comparison and copy to the host (lazy module loading)
  cupti    one empty torch.profiler session with CUDA activities (CUPTI initialisation)
  exit     from the child's last report until the parent has reaped it (context teardown)
For N in --concurrency, prints the p50 and max of every step and how many set-ups finished
per second (N over the wall time from the forks to the last reap). Variants set environment
variables in the children before CUDA starts (--variants).

Usage (GPU machine):  python3 perf/compile_throughput/process_costs.py
"""
import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")


def _child(write_fd, env, device):
    """One candidate-like process: reports its steps as one JSON line, then exits."""
    t = {"start": time.time()}
    os.environ.update(env)
    import torch
    torch.cuda.set_device(device)
    torch.empty(1, device=device)
    torch.cuda.synchronize()
    t["ctx"] = time.time()
    x = torch.randn(1 << 20, device=device)
    y = torch.empty_like(x).fill_(1.0)
    bool(torch.equal(x, y))
    x.to("cpu")
    torch.cuda.synchronize()
    t["kernels"] = time.time()
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        pass
    t["cupti"] = time.time()
    os.write(write_fd, (json.dumps(t) + "\n").encode())
    os._exit(0)


def run_round(n, env, device):
    r, w = os.pipe()
    t0 = time.time()
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                _child(w, env, device)
            finally:
                os._exit(1)
        pids.append(pid)
    os.close(w)
    reports, reaped = [], {}
    with os.fdopen(r) as f:
        for line in f:
            reports.append(json.loads(line))
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        reaped[pid] = time.time()
    wall = time.time() - t0
    last_reap = max(reaped.values())
    steps = {"fork": [], "ctx": [], "kernels": [], "cupti": [], "total": []}
    for rep in reports:
        steps["fork"].append(rep["start"] - t0)
        steps["ctx"].append(rep["ctx"] - rep["start"])
        steps["kernels"].append(rep["kernels"] - rep["ctx"])
        steps["cupti"].append(rep["cupti"] - rep["kernels"])
        steps["total"].append(rep["cupti"] - rep["start"])
    # The exit step of the slowest-reporting child: from its report to the last reap.
    steps["exit"] = [last_reap - max(rep["cupti"] for rep in reports)] if reports else []
    return {"n": n, "ok": len(reports), "wall": wall, "per_s": len(reports) / wall if wall else 0.0,
            "steps": {k: (statistics.median(v), max(v)) for k, v in steps.items() if v}}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concurrency", default="1,4,8,16")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--variants", default="default;CUDA_DEVICE_MAX_CONNECTIONS=1;CUDA_MODULE_LOADING=EAGER",
                    help="';'-separated; each is 'default' or comma-separated NAME=VALUE settings")
    ap.add_argument("--json", help="write the raw rounds here")
    args = ap.parse_args()
    t = time.time()
    import torch
    import torch.profiler  # noqa: F401
    import torch._dynamo  # noqa: F401
    print("parent imports: %.2f s; torch %s" % (time.time() - t, torch.__version__), flush=True)
    rounds = []
    for variant in args.variants.split(";"):
        env = {} if variant == "default" else dict(kv.split("=", 1) for kv in variant.split(","))
        for n in [int(x) for x in args.concurrency.split(",")]:
            res = run_round(n, env, args.device)
            res["variant"] = variant
            rounds.append(res)
            s = res["steps"]
            print("%-34s n=%2d ok=%2d wall %6.2f s  %5.2f set-ups/s | " % (variant, n, res["ok"], res["wall"],
                                                                           res["per_s"])
                  + " ".join("%s %.3f/%.3f" % (k, *s[k]) for k in ("fork", "ctx", "kernels", "cupti", "total",
                                                                   "exit") if k in s), flush=True)
    print("(p50/max seconds per step; set-ups/s = N / wall from the forks to the last reap)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rounds, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
