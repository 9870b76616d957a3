#!/usr/bin/env python3
"""Summarise a Kineto (PyTorch profiler) Chrome trace: where the GPU's time went.

    python3 perf/common/trace_summary.py TRACE.json [--top 25] [--per 32] [--json OUT]

Prints the traced stretch (wall), the GPU's busy time (the union of its kernels, copies and sets over every
stream) and busy share of the stretch, the number of kernels, and the kernels by total time. `--per N` also
divides by N (e.g. the decode steps or training steps traced) so the numbers read per step.
"""
import argparse
import collections
import json
import sys

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def load_events(path):
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e for e in events if e.get("ph") == "X" and "dur" in e and "ts" in e]


def union_us(intervals):
    """Total length of the union of [start, end) intervals."""
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s >= end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def summarize(events, top=25):
    if not events:
        raise ValueError("the trace holds no complete events")
    gpu = [e for e in events if e.get("cat", "").lower() in GPU_CATEGORIES]
    start = min(e["ts"] for e in events)
    end = max(e["ts"] + e["dur"] for e in events)
    kernels = [e for e in gpu if e["cat"].lower() == "kernel"]
    by_name = collections.defaultdict(lambda: [0, 0.0])
    for k in kernels:
        by_name[k["name"]][0] += 1
        by_name[k["name"]][1] += k["dur"]
    kernel_us = sum(k["dur"] for k in kernels)
    rows = sorted(by_name.items(), key=lambda kv: -kv[1][1])[:top]
    busy = union_us([(e["ts"], e["ts"] + e["dur"]) for e in gpu])
    return {
        "wall_us": end - start,
        "gpu_busy_us": busy,
        "gpu_busy_share": busy / (end - start) if end > start else 0.0,
        "kernels": len(kernels),
        "kernel_us": kernel_us,
        "copies": sum(1 for e in gpu if e["cat"].lower() != "kernel"),
        "copy_us": sum(e["dur"] for e in gpu if e["cat"].lower() != "kernel"),
        "top": [{"name": n, "count": c, "us": us, "share": us / kernel_us if kernel_us else 0.0}
                for n, (c, us) in rows],
    }


def print_summary(s, per):
    d = float(per)
    unit = " per step" if per != 1 else ""
    print(f"wall {s['wall_us'] / d / 1e3:.3f} ms{unit}; GPU busy {s['gpu_busy_us'] / d / 1e3:.3f} ms "
          f"({100 * s['gpu_busy_share']:.1f}% of the wall); {s['kernels'] / d:.1f} kernels{unit}, "
          f"{s['kernel_us'] / d / 1e3:.3f} ms in kernels; {s['copies'] / d:.1f} copies/sets, "
          f"{s['copy_us'] / d / 1e3:.3f} ms")
    print(f"{'share':>6} {'ms' + unit:>12} {'count':>8} {'mean us':>9}  kernel")
    for r in s["top"]:
        print(f"{100 * r['share']:5.1f}% {r['us'] / d / 1e3:12.3f} {r['count'] / d:8.1f} {r['us'] / r['count']:9.1f}  "
              f"{r['name'][:110]}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--per", type=int, default=1, help="divide by this many steps")
    p.add_argument("--json", help="also write the summary here")
    a = p.parse_args(argv)
    if a.per < 1:
        p.error("--per must be at least 1")
    try:
        s = summarize(load_events(a.trace), a.top)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"trace_summary: {a.trace}: {e}", file=sys.stderr)
        return 1
    print_summary(s, a.per)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(s, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
