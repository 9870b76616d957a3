#!/usr/bin/env python3
"""The lesson's ablation advice (switch BDR, PrimeEcho, MirrorPop on one at a time): runs `musacoder train-rl`
five times with the same seed and arguments — baseline, +BDR, +PrimeEcho, +MirrorPop, all — then writes one
comparison table (OUT/ablation.md) and one plot (OUT/ablation.png) from their metrics.jsonl.

  scripts/rl_ablate.py --musacoder build/tools/musacoder/musacoder --out runs/ablate -- \
      --base-checkpoint DIR --tasks tasks/ --device cuda --backend cuda --max-steps 100 --seed 42

Every argument after `--` goes to every run unchanged. Runs already complete (final model present) are reused,
so an interrupted ablation continues where it stopped. --table-only skips training.
"""
import argparse
import json
import os
import subprocess
import sys

VARIANTS = [
    ("baseline", []),
    ("+bdr", ["--enable-bdr"]),
    ("+prime_echo", ["--enable-prime-echo"]),
    ("+mirrorpop", ["--enable-mirrorpop"]),
    ("all", ["--enable-bdr", "--enable-prime-echo", "--enable-mirrorpop"]),
]
# (column, metric, how to reduce over steps)
COLUMNS = [
    ("first-turn pass (last 10)", "train/pass_rate/first_turn", "tail_mean"),
    ("reward (last 10)", "train/reward/mean", "tail_mean"),
    ("KL (last)", "train/kl", "last"),
    ("BDR recovered share", "train/bdr/recovered_share", "last"),
    ("MirrorPop compute saved", "train/mirrorpop/compute_saved", "last"),
    ("step s (mean)", "train/time/step_s", "mean"),
    ("verify wait share", None, "verify_share"),
]


def read_metrics(run_dir):
    series = {}
    path = os.path.join(run_dir, "metrics.jsonl")
    with open(path) as f:
        for number, line in enumerate(f, 1):
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{number}: {e}")
            for k, v in row.items():
                if k not in ("step", "split") and isinstance(v, (int, float)):
                    series.setdefault(f"{row['split']}/{k}", []).append((row["step"], v))
    return series


def reduce(series, metric, how):
    if how == "verify_share":
        wait = sum(v for _, v in series.get("train/time/verify_wait_s", []))
        total = sum(v for _, v in series.get("train/time/step_s", []))
        return wait / total if total else float("nan")
    values = [v for _, v in series.get(metric, [])]
    if not values:
        return float("nan")
    if how == "last":
        return values[-1]
    if how == "tail_mean":
        return sum(values[-10:]) / len(values[-10:])
    return sum(values) / len(values)


def run_variant(args, name, flags, passthrough):
    out = os.path.join(args.out, name)
    if os.path.exists(os.path.join(out, "model.safetensors")) or args.table_only:
        return out
    cmd = [args.musacoder, "train-rl", *passthrough, *flags, "--output-dir", out, "--no-progress"]
    if os.path.isdir(out):
        cmd += ["--resume-from", out]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return out


def write_table(args, runs):
    lines = ["| variant | " + " | ".join(c for c, _, _ in COLUMNS) + " |",
             "|---|" + "---|" * len(COLUMNS)]
    for name, series in runs:
        cells = [f"{reduce(series, m, how):.4g}" for _, m, how in COLUMNS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    with open(os.path.join(args.out, "ablation.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def write_plot(args, runs):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = ["train/pass_rate/first_turn", "train/reward/mean", "train/kl", "train/time/step_s"]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4))
    for ax, metric in zip(axes, panels):
        for name, series in runs:
            points = series.get(metric, [])
            ax.plot([s for s, _ in points], [v for _, v in points], label=name)
        ax.set_title(metric.split("/", 1)[1])
        ax.set_xlabel("step")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "ablation.png"), dpi=100)


def main():
    argv = sys.argv[1:]
    passthrough = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--musacoder", default="build/tools/musacoder/musacoder")
    p.add_argument("--out", required=True)
    p.add_argument("--table-only", action="store_true")
    args = p.parse_args(argv)
    for flag in ("--enable-bdr", "--enable-prime-echo", "--enable-mirrorpop", "--output-dir"):
        if flag in passthrough:
            sys.exit(f"rl_ablate.py: {flag} is set per variant; leave it out of the shared arguments")
    os.makedirs(args.out, exist_ok=True)
    runs = [(name, read_metrics(run_variant(args, name, flags, passthrough))) for name, flags in VARIANTS]
    write_table(args, runs)
    write_plot(args, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
