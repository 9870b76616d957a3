#!/usr/bin/env python3
"""Issue #24's second pass: a seeded sample of a synth run's kept pairs re-verified by a separate MooreEval run.

Every pair in sft.jsonl passed MooreEval once (verdict ok). This takes N of them at random (seeded), writes each
answer as it stands as a sample of its task (MooreEval extracts the code with the prompt contract, as it did), runs `mooreeval eval-batch` over the run's tasks (tasks without a sample
are skipped) with a build cache of its own (every candidate compiled again, on fresh inputs) and reports how many come back ok — the acceptance is all of them — with every disagreement.

  python3 perf/synth_gpu/reverify.py --run /tmp/synth_gpu/out --mooreeval build-gpu/tools/mooreeval/mooreeval \\
      --backend cuda --count 1000 --workers 16 --json /tmp/reverify.json
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="a musacoder synth output directory (sft.jsonl, tasks/)")
    ap.add_argument("--mooreeval", required=True)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--run-slots", type=int, default=4)
    ap.add_argument("--work", default="/tmp/synth_reverify")
    ap.add_argument("--json")
    a = ap.parse_args()
    with open(os.path.join(a.run, "sft.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    if not records:
        sys.exit("no pairs in %s/sft.jsonl" % a.run)
    chosen = random.Random(a.seed).sample(records, min(a.count, len(records)))
    samples = os.path.join(a.work, "samples")
    shutil.rmtree(a.work, ignore_errors=True)
    for r in chosen:  # samples/<task id>/answer.md: a raw response (eval-batch's sample layout)
        path = os.path.join(samples, r["metadata"]["id"], "answer.md")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(r["messages"][-1]["content"])
    verdicts_path = os.path.join(a.work, "verdicts.jsonl")
    cmd = [a.mooreeval, "eval-batch", "--backend", a.backend, "--tasks", os.path.join(a.run, "tasks"),
           "--samples", samples, "--workers", str(a.workers), "--run-slots", str(a.run_slots),
           "--cache-dir", os.path.join(a.work, "build-cache"), "--out", verdicts_path]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    verdicts = {}
    if os.path.exists(verdicts_path):
        for line in open(verdicts_path):
            v = json.loads(line)
            if "verdict" in v and "task" in v:
                verdicts[v["task"]] = v
    disagreements = []
    for r in chosen:
        v = verdicts.get(r["metadata"]["id"])
        if v is None or v["verdict"] != "ok":
            disagreements.append({"id": r["metadata"]["id"], "first": "ok",
                                  "second": v["verdict"] if v else "missing",
                                  "message": (v or {}).get("message", "")[:300]})
    ok = len(chosen) - len(disagreements)
    result = {"run": a.run, "pairs_in_run": len(records), "sampled": len(chosen), "seed": a.seed,
              "second_pass_ok": ok, "agreement": ok / len(chosen), "disagreements": disagreements,
              "eval_batch_exit": proc.returncode, "command": " ".join(cmd)}
    print("re-verified %d of %d pairs (seed %d): %d ok, agreement %.2f%%" % (
        len(chosen), len(records), a.seed, ok, 100.0 * ok / len(chosen)))
    for d in disagreements[:20]:
        print("  %s: %s %s" % (d["id"], d["second"], d["message"]))
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stderr[-3000:])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0 if not disagreements else 1


if __name__ == "__main__":
    sys.exit(main())
