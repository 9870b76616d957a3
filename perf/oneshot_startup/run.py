"""One-shot `mooreeval eval` wall time: the default (fresh interpreters) against `--warm-runners` (zygote and
resident reference started as eval-batch does), alternating in one run, with the build cache warm (a first,
untimed run of each fills it). Prints each run, the medians and their ratio (issue #18: a cached one-shot CPU
evaluation <= 4 s on the 2-core machine).

  python3 perf/oneshot_startup/run.py [--mooreeval build/tools/mooreeval/mooreeval] [--runs 5]
         [--task elementwise/add] [--candidate tests/fixtures/candidates/correct_cpu.py]
"""
import argparse
import json
import statistics
import subprocess
import sys
import time


def one(args, extra):
    cmd = [args.mooreeval, "eval", "--task", args.task, "--candidate", args.candidate, "--json"] + extra
    start = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    try:
        verdict = json.loads(out.stdout)
    except json.JSONDecodeError:
        sys.exit(f"{' '.join(cmd)} printed no verdict (exit {out.returncode}): {out.stderr[-2000:]}")
    return wall, verdict.get("verdict"), verdict.get("seconds", {}).get("total", 0.0)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mooreeval", default="build/tools/mooreeval/mooreeval")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--task", default="elementwise/add")
    p.add_argument("--candidate", default="tests/fixtures/candidates/correct_cpu.py")
    args = p.parse_args()
    modes = {"one-shot default": [], "--warm-runners": ["--warm-runners"]}
    for extra in modes.values():
        one(args, extra)  # fills the build and probe caches
    walls = {name: [] for name in modes}
    for i in range(args.runs):
        for name, extra in modes.items():
            wall, verdict, evaluation = one(args, extra)
            walls[name].append(wall)
            print(f"run {i + 1} {name:17s} wall {wall:5.1f} s  verdict {verdict}  evaluation {evaluation:.2f} s")
    medians = {name: statistics.median(w) for name, w in walls.items()}
    for name, m in medians.items():
        print(f"median {name:17s} {m:5.1f} s")
    print(f"ratio --warm-runners / default: {medians['--warm-runners'] / medians['one-shot default']:.2f}x")


if __name__ == "__main__":
    main()
