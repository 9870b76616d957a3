#!/usr/bin/env python3
"""Reward stability: the same candidate evaluated N times, before and after the timing fixes.

Two ways of repeating an evaluation, each "before" and "after" a timing fix (the default settings): on cpu
"before" is the runners' malloc tuning off (`--no-stable-malloc`), on cuda the device-side head start before
each timed call off (`--no-host-head-start`):
  fresh     N one-shot `mooreeval eval --warm-runners` processes (new evaluator, new zygote, new reference
            server: what each new service worker does; the plain one-shot starts no warm pools since f8bf303);
  one       one `mooreeval eval-batch` evaluator over N copies of the candidate (warm runners, one
            resident reference server that lives across the N evaluations).
For each: the speedup's coefficient of variation (std/mean), its min/max, and the reward spread
(max - min). Targets (issue #29): speedup CV <= 10% on cpu and <= 5% on cuda; reward spread <= 0.05 on cuda.

  perf/reward_stability/run.py --mooreeval build/tools/mooreeval/mooreeval --backend cpu \\
      --task activation/relu --candidate solutions/cpu/activation/relu.py --runs 20 [--json out.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def verdict_numbers(v):
    return {"speedup": float(v.get("speedup") or 0.0), "reward": float((v.get("reward") or {}).get("total", 0.0)),
            "verdict": v.get("verdict"), "ref_ms": (v.get("reference_time") or {}).get("median_ms"),
            "cand_ms": (v.get("candidate_time") or {}).get("median_ms"),
            "ref_host_ms": (v.get("reference_time") or {}).get("host_ms"),
            "cand_host_ms": (v.get("candidate_time") or {}).get("host_ms")}


def run_fresh(args, extra):
    out = []
    for _ in range(args.fresh_runs or args.runs):
        cmd = [args.mooreeval, "eval", "--warm-runners", "--task", args.task, "--candidate", args.candidate,
               "--backend", args.backend, "--json"] + extra
        p = subprocess.run(cmd, capture_output=True, text=True)
        if not p.stdout.strip():
            raise SystemExit("mooreeval eval printed nothing (exit %d): %s" % (p.returncode, p.stderr[-2000:]))
        out.append(verdict_numbers(json.loads(p.stdout)))
    return out


def run_one(args, extra):
    with tempfile.TemporaryDirectory() as d:
        sample_dir = os.path.join(d, "samples", args.task)
        os.makedirs(sample_dir)
        with open(args.candidate, encoding="utf-8") as f:
            source = f.read()
        for i in range(args.runs):
            with open(os.path.join(sample_dir, "s%02d.py" % i), "w", encoding="utf-8") as f:
                f.write(source)
        verdicts = os.path.join(d, "verdicts.jsonl")
        cmd = [args.mooreeval, "eval-batch", "--tasks", args.tasks_dir, "--samples", os.path.join(d, "samples"),
               "--backend", args.backend, "--workers", "1", "--out", verdicts] + extra
        p = subprocess.run(cmd, capture_output=True, text=True)
        if not os.path.exists(verdicts):
            raise SystemExit("eval-batch wrote no verdicts (exit %d): %s" % (p.returncode, p.stderr[-2000:]))
        with open(verdicts, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        return [verdict_numbers(v) for v in rows if "summary" not in v]  # the last line is the batch's summary


def stats(rows):
    speedups = [r["speedup"] for r in rows if r["verdict"] == "ok"]
    rewards = [r["reward"] for r in rows]
    mean = statistics.fmean(speedups) if speedups else 0.0
    cv = statistics.pstdev(speedups) / mean if len(speedups) > 1 and mean > 0 else float("nan")
    return {"n": len(rows), "ok": len(speedups), "speedup_mean": mean, "speedup_cv": cv,
            "speedup_min": min(speedups, default=0.0), "speedup_max": max(speedups, default=0.0),
            "reward_spread": (max(rewards) - min(rewards)) if rewards else 0.0}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mooreeval", required=True)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--task", default="activation/relu")
    ap.add_argument("--tasks-dir", default="tasks")
    ap.add_argument("--candidate", required=True)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--fresh-runs", type=int, default=0, help="runs of the fresh mode (default: --runs)")
    ap.add_argument("--modes", default="one,fresh")
    ap.add_argument("--variants", default="before,after",
                    help="before (cpu: --no-stable-malloc, cuda: --no-host-head-start), after (the default "
                    "settings), or both")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    if args.runs < 2:
        ap.error("--runs must be at least 2")
    results = {}
    for mode in args.modes.split(","):
        before = ["--no-stable-malloc"] if args.backend == "cpu" else ["--no-host-head-start"]
        variants = [v for v in (("before", before), ("after", [])) if v[0] in args.variants.split(",")]
        for label, extra in variants:
            t0 = time.monotonic()
            rows = run_one(args, extra) if mode == "one" else run_fresh(args, extra)
            results["%s/%s" % (mode, label)] = {"stats": stats(rows), "rows": rows,
                                                "seconds": time.monotonic() - t0}
            s = results["%s/%s" % (mode, label)]["stats"]
            print("%-6s %-6s n=%2d ok=%2d speedup mean %.3f cv %5.1f%% [%.3f, %.3f] reward spread %.3f (%.0f s)"
                  % (mode, label, s["n"], s["ok"], s["speedup_mean"], 100 * s["speedup_cv"], s["speedup_min"],
                     s["speedup_max"], s["reward_spread"], results["%s/%s" % (mode, label)]["seconds"]),
                  flush=True)
    print("\nside by side (before -> after):")
    for mode in args.modes.split(","):
        if mode + "/before" not in results or mode + "/after" not in results:
            continue
        b, a = results[mode + "/before"]["stats"], results[mode + "/after"]["stats"]
        ratio = b["speedup_cv"] / a["speedup_cv"] if a["speedup_cv"] > 0 else float("inf")
        print("%-6s speedup CV %5.1f%% -> %5.1f%% (%.1fx lower), reward spread %.3f -> %.3f"
              % (mode, 100 * b["speedup_cv"], 100 * a["speedup_cv"], ratio, b["reward_spread"], a["reward_spread"]))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
