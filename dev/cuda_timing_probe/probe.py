#!/usr/bin/env python3
"""Why is a candidate's CUDA time bimodal across evaluations when the reference's is not? (issue #29)

perf/reward_stability on an H100: the bundled relu reference timed 7.4-7.8 us in every evaluation, the bundled
relu solution 8.4-8.9 us in some and 10.0-11.0 us in others. Two hypotheses, each a switch here:
  --cupti-first   open and close an empty torch.profiler session (CUDA activity) before the extension is loaded,
                  as the candidate runner does (kernel_profile.warm_up) and the reference runner does not;
  --rotate K      time over K input/output sets instead of one (per-process buffer placement).
Each configuration runs in FRESH processes (--processes of them); each process prints the median device time
of the reference (torch.relu) and of the extension, measured by mooreeval_runner.timing.benchmark (the harness's
own method). Spread across processes is the thing to look at.

  python3 dev/cuda_timing_probe/probe.py --processes 8            # all four configurations
  python3 dev/cuda_timing_probe/probe.py --host-delay-sweep       # the head start's effect (below)

Result on an H100 (2026-12-06): no configuration is bimodal (candidate 8.4-9.2 us in every process, CUPTI
first or not), so neither hypothesis explains the evaluations' 10-11 us. --host-delay-sweep tests the third: the
candidate runner's call path (CallWatch, wrappers) is slower on the host than the flush is on the device, so the
device idles inside the timed interval. It adds a host-side busy wait to each call and times it with the head
start off and on (timing.benchmark's head_start).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def child(args):
    import torch
    if args.cupti_first:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            pass
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from mooreeval_runner.timing import benchmark
    import importlib.util
    spec = importlib.util.spec_from_file_location("sol", os.path.join(ROOT, "solutions/cuda/activation/relu.py"))
    sol = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sol)  # load_inline: built once, then cached in torch's extension dir
    model = sol.ModelNew().cuda().eval()
    sets = [torch.randn(16, 65536, device="cuda") for _ in range(max(1, args.rotate))]
    state = {"i": 0}

    def run(fn):
        def call():
            x = sets[state["i"] % len(sets)]
            state["i"] += 1
            with torch.no_grad():
                fn(x)
        return benchmark(call, "cuda", 10, 50, True, False)["median_ms"]

    print(json.dumps({"ref_us": 1e3 * run(torch.relu), "cand_us": 1e3 * run(model)}))


def host_delay_sweep():
    import time
    import torch
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from mooreeval_runner.timing import benchmark
    x = torch.randn(16, 65536, device="cuda")
    for delay_us in (0, 20, 40, 80, 160):
        def call():
            t_end = time.perf_counter() + delay_us * 1e-6
            while time.perf_counter() < t_end:
                pass
            torch.relu(x)
        row = []
        for head_start in (False, True):
            meds = [benchmark(call, "cuda", 10, 50, True, head_start) for _ in range(3)]
            row.append("head start %-3s %s" % ("on" if head_start else "off",
                                              " ".join("%.2f" % (1e3 * m["median_ms"]) for m in meds)))
        print("host delay %3d us: relu us | %s | head_start_ms %.3f" % (delay_us, " | ".join(row),
                                                                        meds[-1]["head_start_ms"]), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--processes", type=int, default=8)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cupti-first", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rotate", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--host-delay-sweep", action="store_true")
    args = ap.parse_args()
    if args.host_delay_sweep:
        return host_delay_sweep()
    if args.child:
        return child(args)
    for name, extra in (("plain", []), ("cupti-first", ["--cupti-first"]), ("rotate-8", ["--rotate", "8"]),
                        ("cupti-first+rotate-8", ["--cupti-first", "--rotate", "8"])):
        rows = []
        for _ in range(args.processes):
            p = subprocess.run([sys.executable, __file__, "--child"] + extra, capture_output=True, text=True)
            if p.returncode != 0:
                raise SystemExit("%s: child failed (%d): %s" % (name, p.returncode, p.stderr[-2000:]))
            rows.append(json.loads(p.stdout.strip().splitlines()[-1]))
        ref = [r["ref_us"] for r in rows]
        cand = [r["cand_us"] for r in rows]
        print("%-22s ref us %s | cand us %s | speedup %s" % (
            name, " ".join("%.2f" % v for v in ref), " ".join("%.2f" % v for v in cand),
            " ".join("%.2f" % (a / b) for a, b in zip(ref, cand))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
