#!/usr/bin/env python3
"""Issue #27's learning demonstration and the lesson's ablation, for the GPU machine.

1. `musacoder quickstart --base-model M`: synthesized, MooreEval-verified pairs (training split) and a held-out
   split decontaminated against it; held-out first-turn Pass@1/Pass@k/Avg@k/fast_1 before SFT, after SFT
   (full fine-tuning of M) and after GRPO with PrimeEcho, BDR and MirrorPop on.
2. The ablation (the lesson's advice 3): from the same SFT model, GRPO with the same seed, steps and budget as
   baseline (none of the three), +BDR, +PrimeEcho, +MirrorPop and all four, each evaluated on the held-out split
   (and the bundled suite with --bundled), with what the lesson claims for each component read from the run's
   metrics.jsonl: BDR's share of update groups recovered from the buffer (lesson: 8-12%), first-turn pass rate
   over the run (PrimeEcho, lesson 38% -> 56% at its scale), MirrorPop's learned share (<= 30%) and the compute
   it saved (lesson 25-35%).

3. With --rl-split N, the variants' RL runs on N fresh tasks of the quickstart's grammar (`synth --tasks-only`,
   decontaminated against the training and the held-out tasks) instead of the SFT tasks, whose answers the SFT
   model has memorised: a success there shows the skill the held-out split measures, not recall.

4. With --curve-every K, each variant's RL also saves a checkpoint every K steps and each one is evaluated on the
   held-out split: held-out first-turn Pass@1 over RL steps (step 0: the SFT model), with the passing samples
   counted, so a rise can be told from noise.

Writes OUT/learning_demo.json and OUT/learning_demo.md (the tables, with the commands run and wall times).
Stages whose outputs exist are skipped, so a run cut short by a time limit continues where it stopped.

  python3 perf/learning_demo/run.py --musacoder build/tools/musacoder/musacoder \\
      --base-model build/models/smollm2-135m --backend cuda --out runs/learning_demo
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

VARIANTS = {  # name -> the train-rl flags of its components
    "baseline": [],
    "bdr": ["--enable-bdr"],
    "prime_echo": ["--enable-prime-echo"],
    "mirrorpop": ["--enable-mirrorpop"],
    "all": ["--enable-bdr", "--enable-prime-echo", "--enable-mirrorpop"],
}


def run(cmd, log_path):
    """Runs cmd with its output in log_path; returns (exit code, seconds)."""
    t0 = time.monotonic()
    with open(log_path, "w") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        code = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
    return code, time.monotonic() - t0


def eval_numbers(summary_path):
    """First-turn Pass@1, Pass@k, Avg@k, fast_1 (means) of an eval-model summary.json."""
    with open(summary_path) as f:
        overall = json.load(f)["views"]["turn1"]["overall"]
    return {"pass_at_1": overall["pass_at_1"]["mean"], "pass_at_k": overall["pass_at_k"]["mean"],
            "avg_at_k": overall["avg_at_k"]["mean"], "fast_1": overall["fast_p"]["1"]["mean"],
            "verdicts": overall.get("verdicts", {})}


def rl_numbers(metrics_path):
    """What the lesson claims per component, from a train-rl metrics.jsonl (training rows only)."""
    rows = []
    with open(metrics_path) as f:
        for line in f:
            row = json.loads(line)
            if row.get("split", "train") == "train":
                rows.append(row)
    if not rows:
        return {}

    def mean(key):
        values = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
        return statistics.mean(values) if values else None

    in_update = sum(r.get("groups/in_update", 0) for r in rows)
    recovered = sum(r.get("groups/bdr_recovered", 0) for r in rows)
    half = max(len(rows) // 2, 1)
    return {"steps": len(rows),
            "reward_mean": mean("reward/mean"),
            "first_turn_pass_first_half": statistics.mean(r.get("pass_rate/first_turn", 0) for r in rows[:half]),
            "first_turn_pass_second_half": statistics.mean(r.get("pass_rate/first_turn", 0) for r in rows[half:])
            if len(rows) > 1 else None,
            "bdr_recovered_share": recovered / in_update if in_update else 0.0,
            "mirrorpop_learned_share": mean("mirrorpop/learned_share"),
            "mirrorpop_compute_saved": mean("mirrorpop/compute_saved"),
            "seconds_per_step": mean("time/step_s")}


def quickstart(args, out):
    qs = os.path.join(out, "quickstart")
    if os.path.exists(os.path.join(qs, "summary.json")):
        return qs, None
    cmd = [args.musacoder, "quickstart", "--backend", args.backend, "--base-model", args.base_model, "--out", qs,
           "--overwrite", "--no-progress", "--seed", str(args.seed), "--train-tasks", str(args.train_tasks),
           "--heldout-tasks", str(args.heldout_tasks), "--samples", str(args.samples),
           "--steps", str(args.sft_steps), "--max-seq-len", str(args.max_seq_len),
           "--rl-steps", str(args.rl_steps if args.quickstart_rl_steps is None else args.quickstart_rl_steps),
           "--rl-prompts", str(args.rl_prompts),
           "--rl-samples", str(args.rl_samples), "--max-new-tokens", str(args.max_new_tokens),
           "--verify-workers", str(args.verify_workers)]
    code, seconds = run(cmd, os.path.join(out, "quickstart.log"))
    if not os.path.exists(os.path.join(qs, "summary.json")):
        sys.exit("quickstart failed (exit %d): see %s" % (code, os.path.join(out, "quickstart.log")))
    return qs, seconds


def rl_split(args, out, qs):
    """N fresh tasks for the variants' RL, decontaminated against the training and held-out tasks: (dir, info)."""
    split = os.path.join(out, "rl-split")
    tasks = os.path.join(split, "tasks")
    if not os.path.exists(os.path.join(out, "rl-split.done")):  # deterministic: a rerun rewrites the same tasks
        suite = os.path.join(out, "rl-split-suite")  # both splits, as one folder for --exclude-suite
        shutil.rmtree(suite, ignore_errors=True)
        for part in ("train", "heldout"):
            shutil.copytree(os.path.join(qs, "data", part, "tasks"), os.path.join(suite, part))
        cmd = [args.musacoder, "synth", "--tasks-only", "--out", split, "--count", str(args.rl_split),
               "--seed", str(1000003 * args.seed + 7), "--backend", args.backend, "--categories", "elementwise",
               "activation", "--dtypes", "float32", "--exclude-suite", suite, "--no-progress"]
        code, _ = run(cmd, os.path.join(out, "rl-split.log"))
        if code != 0:
            sys.exit("synth --tasks-only for the RL split failed (exit %d): see %s" %
                     (code, os.path.join(out, "rl-split.log")))
        open(os.path.join(out, "rl-split.done"), "w").close()
    count = sum(1 for _, _, files in os.walk(tasks) for f in files if f.endswith(".py"))
    dropped = os.path.join(split, "decontamination.jsonl")
    overlaps = sum(1 for _ in open(dropped)) if os.path.exists(dropped) else 0
    return tasks, {"tasks": count, "draws_dropped_as_overlaps": overlaps}


def variant(args, out, qs, name, rl_tasks):
    rl_dir, eval_dir = os.path.join(out, "rl-" + name), os.path.join(out, "eval-" + name)
    seconds = {}
    if not os.path.exists(os.path.join(rl_dir, "config.json")):
        cmd = [args.musacoder, "train-rl", "--base-checkpoint", os.path.join(qs, "sft"),
               "--tasks", rl_tasks, "--output-dir", rl_dir, "--overwrite",
               "--backend", args.backend, "--device", args.backend, "--build-path", "lean",
               "--reward-env-workers", str(args.verify_workers), "--samples-per-prompt", str(args.rl_samples),
               "--prompts-per-step", str(args.rl_prompts), "--max-turns", "2", "--max-steps", str(args.rl_steps),
               "--max-new-tokens", str(args.max_new_tokens), "--temperature", "0.9", "--seed", str(args.seed),
               "--learning-rate", str(args.rl_learning_rate), "--bdr-retry-every", "2",
               "--mirrorpop-update-every", "2", "--no-progress", "--no-tensorboard"] + VARIANTS[name]
        if args.curve_every > 0:
            cmd += ["--save-steps", str(args.curve_every)]
        if args.backend == "cuda":
            cmd.append("--bf16")
        code, seconds["rl"] = run(cmd, os.path.join(out, "rl-%s.log" % name))
        if code != 0:
            return {"error": "train-rl exit %d (rl-%s.log)" % (code, name)}
    result = {"rl": rl_numbers(os.path.join(rl_dir, "metrics.jsonl"))}
    heldout_tasks = os.path.join(qs, "data", "heldout", "tasks")
    result["heldout"], seconds["eval"] = evaluate(args, rl_dir, heldout_tasks, eval_dir, "eval-%s.log" % name, out)
    if args.curve_every > 0:
        result["curve"], seconds["curve"] = curve(args, out, qs, name, rl_dir, result)
    if args.bundled:
        result["bundled"], seconds["bundled"] = evaluate(args, rl_dir, "", eval_dir + "-bundled",
                                                         "eval-%s-bundled.log" % name, out)
    result["seconds"] = seconds
    return result


def checkpoint_steps(rl_dir):
    """The steps of the checkpoint-N directories train-rl left in rl_dir, ascending."""
    steps = []
    for entry in os.listdir(rl_dir) if os.path.isdir(rl_dir) else []:
        if entry.startswith("checkpoint-") and entry[len("checkpoint-"):].isdigit():
            steps.append(int(entry[len("checkpoint-"):]))
    return sorted(steps)


def curve(args, out, qs, name, rl_dir, result):
    """Held-out first-turn numbers over RL: the SFT model (step 0), every saved checkpoint, the final model."""
    with open(os.path.join(qs, "summary.json")) as f:
        sft = [p for p in json.load(f).get("points", []) if p.get("stage") == "after SFT"]
    points = [dict(sft[0], step=0)] if sft else []
    seconds = 0.0
    final_step = result["rl"].get("steps")
    for step in checkpoint_steps(rl_dir):
        if step == final_step:
            continue  # the final model, evaluated already
        numbers, s = evaluate(args, os.path.join(rl_dir, "checkpoint-%d" % step),
                              os.path.join(qs, "data", "heldout", "tasks"),
                              os.path.join(out, "eval-%s-step%d" % (name, step)), "eval-%s-step%d.log" % (name, step),
                              out)
        seconds += s or 0.0
        points.append(dict(numbers, step=step))
    if final_step:
        points.append(dict(result["heldout"], step=final_step))
    return points, seconds


def curve_lines(report):
    """The learning curves of the variants that have one, as markdown lines (empty when none has)."""
    heldout = report["quickstart"].get("heldout_tasks", 0) * report["k"]
    lines = []
    for name, v in report["ablation"].items():
        if not v.get("curve"):
            continue
        lines += ["", "Held-out first turn over RL, `%s` (%d samples per point):" % (name, heldout), "",
                  "| RL step | Pass@1 | passing samples | Pass@k |", "|---|---|---|---|"]
        for p in v["curve"]:
            if "error" in p:
                lines.append("| %d | %s | | |" % (p["step"], p["error"]))
                continue
            lines.append("| %d | %s | %d | %s |" % (p["step"], pct(p["pass_at_1"]), round(p["pass_at_1"] * heldout),
                                                  pct(p["pass_at_k"])))
    return lines


def evaluate(args, model, tasks, eval_dir, log_name, out):
    if not os.path.exists(os.path.join(eval_dir, "summary.json")):
        cmd = [args.musacoder, "eval-model", "--model", model, "--device", args.backend, "--backend", args.backend,
               "--samples", str(args.samples), "--temperature", "0.7", "--max-new-tokens", str(args.max_new_tokens),
               "--build-path", "lean", "--verify-workers", str(args.verify_workers), "--seed", str(args.seed),
               "--run-slots", "4" if args.backend == "cuda" else "1",  # as the quickstart's evaluations
               "--out", eval_dir, "--progress-seconds", "0"] + (["--tasks", tasks] if tasks else [])
        code, seconds = run(cmd, os.path.join(out, log_name))
        if not os.path.exists(os.path.join(eval_dir, "summary.json")):
            return {"error": "eval-model exit %d (%s)" % (code, log_name)}, seconds
    else:
        seconds = None
    return eval_numbers(os.path.join(eval_dir, "summary.json")), seconds


def pct(x):
    return "—" if x is None else "%.1f%%" % (100 * x)


def write_report(out, report, echo=False):
    lines = ["# Learning demonstration (%s)" % report["base_model"], "",
             "Held-out split (%d tasks, never trained on: decontaminated, overlaps %s), first turn, k = %d:" % (
                 report["quickstart"].get("heldout_tasks", 0), report["quickstart"].get("heldout_overlaps"),
                 report["k"]), "",
             "| stage | Pass@1 | Pass@k | Avg@k | fast_1 |", "|---|---|---|---|---|"]
    for p in report["quickstart"].get("points", []):
        lines.append("| %s | %s | %s | %s | %s |" % (p["stage"], pct(p["pass_at_1"]), pct(p["pass_at_k"]),
                                                     pct(p["avg_at_k"]), pct(p["fast_1"])))
    split = report.get("rl_split")
    where = ("%d fresh tasks decontaminated against both splits (%d draws dropped as overlaps)" % (
        split["tasks"], split["draws_dropped_as_overlaps"]) if split else "the SFT tasks")
    lines += ["", "Ablation (same SFT model, seed, steps and budget; RL on %s):" % where, "",
              "| variant | held-out Pass@1 | Pass@k | first-turn pass (1st half → 2nd half of RL) | BDR recovered share"
              " | MirrorPop learned share | compute saved | s/step |", "|---|---|---|---|---|---|---|---|"]
    for name, v in report["ablation"].items():
        if "error" in v:
            lines.append("| %s | %s |  |  |  |  |  |  |" % (name, v["error"]))
            continue
        rl, h = v.get("rl", {}), v.get("heldout", {})
        lines.append("| %s | %s | %s | %s → %s | %s | %s | %s | %s |" % (
            name, pct(h.get("pass_at_1")), pct(h.get("pass_at_k")), pct(rl.get("first_turn_pass_first_half")),
            pct(rl.get("first_turn_pass_second_half")), pct(rl.get("bdr_recovered_share")),
            pct(rl.get("mirrorpop_learned_share")), pct(rl.get("mirrorpop_compute_saved")),
            "%.1f" % rl["seconds_per_step"] if rl.get("seconds_per_step") else "—"))
    lines += curve_lines(report)
    with open(os.path.join(out, "learning_demo.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "learning_demo.json"), "w") as f:
        json.dump(report, f, indent=1)
    if echo:
        print("\n".join(lines), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--musacoder", default="build/tools/musacoder/musacoder")
    ap.add_argument("--base-model", default="build/models/smollm2-135m")
    ap.add_argument("--backend", default="cuda", choices=["cpu", "cuda"])
    ap.add_argument("--out", default="runs/learning_demo")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--train-tasks", type=int, default=256)
    ap.add_argument("--heldout-tasks", type=int, default=32)
    ap.add_argument("--samples", type=int, default=8, help="k of Pass@k (the lesson's 8)")
    ap.add_argument("--sft-steps", type=int, default=200)
    ap.add_argument("--max-seq-len", type=int, default=4096)
    ap.add_argument("--rl-steps", type=int, default=20)
    ap.add_argument("--rl-prompts", type=int, default=8)
    ap.add_argument("--rl-samples", type=int, default=8)
    ap.add_argument("--rl-learning-rate", type=float, default=2e-6)
    ap.add_argument("--max-new-tokens", type=int, default=3072, help="the rule teacher's CUDA answers run to ~3,000")
    ap.add_argument("--verify-workers", type=int, default=8)
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated subset of " + ",".join(VARIANTS))
    ap.add_argument("--bundled", action="store_true", help="also evaluate each RL model on the bundled suite")
    ap.add_argument("--curve-every", type=int, default=0,
                    help="checkpoint each variant's RL every K steps and evaluate each checkpoint on the held-out split")
    ap.add_argument("--rl-split", type=int, default=0,
                    help="the variants' RL on this many fresh tasks (decontaminated against both splits); 0: the SFT tasks")
    ap.add_argument("--quickstart-rl-steps", type=int,
                    help="RL steps of the quickstart's own run (default: --rl-steps); the variants run --rl-steps")
    args = ap.parse_args()
    if args.curve_every < 0 or args.rl_split < 0:
        ap.error("--curve-every and --rl-split must be >= 0")
    unknown = [v for v in args.variants.split(",") if v and v not in VARIANTS]
    if unknown:
        ap.error("unknown variants: " + ", ".join(unknown))
    for path, what in ((args.musacoder, "--musacoder"), (args.base_model, "--base-model")):
        if not os.path.exists(path):
            ap.error("%s %s does not exist" % (what, path))
    os.makedirs(args.out, exist_ok=True)
    qs, qs_seconds = quickstart(args, args.out)
    with open(os.path.join(qs, "summary.json")) as f:
        report = {"base_model": args.base_model, "k": args.samples, "args": vars(args), "quickstart": json.load(f),
                  "quickstart_seconds": qs_seconds, "ablation": {}}
    rl_tasks = os.path.join(qs, "data", "train", "tasks")
    if args.rl_split > 0:
        rl_tasks, report["rl_split"] = rl_split(args, args.out, qs)
    for name in [v for v in args.variants.split(",") if v]:
        report["ablation"][name] = variant(args, args.out, qs, name, rl_tasks)
        write_report(args.out, report)  # after each variant: a cut-short run keeps what it has
    write_report(args.out, report, echo=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
