#!/usr/bin/env python3
"""perf/compile_throughput: the same candidates evaluated (a) KernelBench-style — torch's
load_inline in the evaluating process, compiles spread over a process pool, then the numeric
check and the benchmark in-process — and (b) by MooreEval (`mooreeval eval-batch`), first
with an empty build cache, then again with the cache warm. Prints p50/p90 per stage and
evaluations per second, side by side, with the ratios.

Candidates: every bundled reference solution of the backend plus renamed variants (a
different extension name and a comment: new sources for the cache, same kernel) up to
--count.

Usage (GPU machine):  python3 perf/compile_throughput/run.py --backend cuda --workers 16
        (CPU, quick):  python3 perf/compile_throughput/run.py --backend cpu --count 4 --workers 2
"""
import argparse
import collections
import concurrent.futures as cf
import importlib.util
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def candidates(backend, count):
    """[(task_id, source)]: the bundled solutions, then variants of them up to `count`."""
    base = []
    sol_root = os.path.join(ROOT, "solutions", backend)
    for dirpath, _, files in sorted(os.walk(sol_root)):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                task = os.path.relpath(path, sol_root)[:-3]
                base.append((task, open(path).read()))
    out = list(base)
    i = 0
    while len(out) < count:
        task, src = base[i % len(base)]
        n = len(out) // len(base) + 1
        variant = re.sub(r'name="([A-Za-z0-9_]+)"', lambda m: 'name="%s_v%d"' % (m.group(1), n), src, count=1)
        variant = variant.replace('r"""', 'r"""\n// variant %d' % n, 1)
        out.append((task, variant))
        i += 1
    return out[:count] if count else out


def pct(values, q):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


# ---- (a) KernelBench-style ------------------------------------------------------------

def _kb_compile(args):
    """One candidate's module executed in a fresh worker process: load_inline compiles."""
    index, source, build_root = args
    os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(build_root, "c%d" % index)
    path = os.path.join(build_root, "cand%d.py" % index)
    with open(path, "w") as f:
        f.write(source)
    t = time.perf_counter()
    try:
        spec = importlib.util.spec_from_file_location("cand%d" % index, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        ok = True
    except Exception as e:  # noqa: BLE001 - a failed compile is a result
        ok = repr(e)[:200]
    return index, time.perf_counter() - t, ok


def _kb_evaluate(task_id, index, build_root, device, trials, warmup, iters):
    """In-process numeric check and benchmark, as KernelBench's eval does."""
    import torch
    os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(build_root, "c%d" % index)
    task_spec = importlib.util.spec_from_file_location("task%d" % index, os.path.join(ROOT, "tasks", task_id + ".py"))
    task = importlib.util.module_from_spec(task_spec)
    task_spec.loader.exec_module(task)
    spec = importlib.util.spec_from_file_location("cand%d" % index, os.path.join(build_root, "cand%d.py" % index))
    cand = importlib.util.module_from_spec(spec)
    t0 = time.perf_counter()
    spec.loader.exec_module(cand)  # load_inline finds the build from the compile phase
    load_s = time.perf_counter() - t0
    init = task.get_init_inputs()
    torch.manual_seed(0)
    ref = task.Model(*init).to(device)
    torch.manual_seed(0)
    new = cand.ModelNew(*init).to(device)
    t0 = time.perf_counter()
    passed = 0
    with torch.no_grad():
        for s in range(trials):
            torch.manual_seed(s)
            inputs = [x.to(device) if torch.is_tensor(x) else x for x in task.get_inputs()]
            a, b = ref(*inputs), new(*inputs)
            passed += bool(torch.allclose(a, b, rtol=1e-3, atol=1e-3))
        check_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for model in (ref, new):
            for _ in range(warmup):
                model(*inputs)
            if device == "cuda":
                torch.cuda.synchronize()
            for _ in range(iters):
                model(*inputs)
            if device == "cuda":
                torch.cuda.synchronize()
        bench_s = time.perf_counter() - t0
    return load_s, check_s, bench_s, passed == trials


def run_kernelbench(cands, backend, workers, trials, warmup, iters):
    build_root = tempfile.mkdtemp(prefix="kb-bench-")
    device = "cuda" if backend == "cuda" else "cpu"
    t_start = time.perf_counter()
    compile_s = {}
    with cf.ProcessPoolExecutor(max_workers=workers) as pool:
        for index, seconds, ok in pool.map(_kb_compile, [(i, src, build_root) for i, (_, src) in enumerate(cands)]):
            compile_s[index] = (seconds, ok)
    rows = []
    for i, (task_id, _) in enumerate(cands):
        seconds, ok = compile_s[i]
        if ok is not True:
            rows.append({"build": seconds, "check": 0.0, "bench": 0.0, "ok": False})
            continue
        load_s, check_s, bench_s, passed = _kb_evaluate(task_id, i, build_root, device, trials, warmup, iters)
        rows.append({"build": seconds + load_s, "check": check_s, "bench": bench_s, "ok": passed})
    wall = time.perf_counter() - t_start
    shutil.rmtree(build_root, ignore_errors=True)
    for r in rows:
        r["total"] = r["build"] + r["check"] + r["bench"]
    return rows, wall


# ---- (b) MooreEval ---------------------------------------------------------------------

def run_mooreeval(cands, backend, workers, binary, cache_dir, extra):
    samples = tempfile.mkdtemp(prefix="me-bench-samples-")
    for i, (task_id, src) in enumerate(cands):
        d = os.path.join(samples, task_id)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "c%02d.py" % i), "w") as f:
            f.write(src)
    out = os.path.join(samples, "verdicts.jsonl")
    cmd = [binary, "eval-batch", "--tasks", os.path.join(ROOT, "tasks"), "--samples", samples,
           "--workers", str(workers), "--backend", backend, "--cache-dir", cache_dir, "--out", out] + extra
    t = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter() - t
    if not os.path.exists(out):
        sys.exit("mooreeval eval-batch failed (%d): %s" % (proc.returncode, proc.stderr[-2000:]))
    rows = []
    steady = None
    for line in open(out):
        v = json.loads(line)
        if "verdict" not in v:  # the closing summary line
            steady = v.get("summary", {}).get("seconds", {}).get("evaluations")
            continue
        s = v["seconds"]
        # e2e: the stages themselves (inspect + build + numeric check + benchmark), without the
        # time spent queueing for a build or run slot, which "total" includes.
        e2e = sum(s.get(k, 0.0) for k in ("extract", "inspect", "build", "run", "benchmark"))
        rows.append({"inspect": s.get("inspect", 0.0), "build": s.get("build", 0.0), "check": s.get("run", 0.0), "bench": s.get("benchmark", 0.0),
                     "total": s.get("total", 0.0), "e2e": e2e, "runner": v.get("config", {}).get("candidate_runner"),
                     "ok": v["verdict"] == "ok", "path": v.get("build_path"),
                     "cache_hit": v.get("cache_hit"), "verdict": v["verdict"], "task": v["task"],
                     "run_wait": s.get("run_wait", 0.0), "build_wait": s.get("build_wait", 0.0),
                     "slot": s.get("slot", {}), "build_steps": s.get("build_steps", {}),
                     "runners": s.get("runners", {})})
    shutil.rmtree(samples, ignore_errors=True)
    if steady:
        rows[0]["_steady_wall"] = steady
    if rows:  # CPU seconds of the evaluator and every process it waited for (compilers, runners)
        rows[0]["_cpu"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return rows, wall


def runner_steps(rows):
    """'build nvcc 2.1 ... | inspect start 0.10 ... | reference setup 0.52 ... | candidate ... | slot ...':
    the p50 of each build step, of each runner step (start: spawning it until its job code ran;
    end: its last line until its end was seen) and of the orchestrator's steps in the run slot."""
    parts = []
    for side in ("build", "inspect", "reference", "candidate", "slot"):
        steps = collections.defaultdict(list)
        for r in rows:
            laps = r["slot"] if side == "slot" else r["build_steps"] if side == "build" else r["runners"].get(side, {})
            for step, secs in laps.items():
                steps[step].append(secs)
        parts.append(side + " " + " ".join("%s %.3f" % (k, pct(v, 0.5)) for k, v in steps.items()))
    return " | ".join(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="cuda", choices=["cpu", "cuda"])
    ap.add_argument("--count", type=int, default=32, help="candidates (>= the bundled solutions: variants added)")
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--mooreeval", default=os.path.join(ROOT, "build", "tools", "mooreeval", "mooreeval"))
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--skip-kernelbench", action="store_true")
    ap.add_argument("--json", help="also write the raw rows here")
    ap.add_argument("--run-slots", default="1",
                    help="comma-separated --run-slots values: the uncached and cached passes use the first, "
                         "each further value adds one more cached pass (throughput with concurrent runs per GPU)")
    ap.add_argument("--cache-dir", help="build cache for the MooreEval passes (default: a fresh one); it may hold "
                                        "the lean shim already, not the candidates' builds")
    ap.add_argument("--mooreeval-args", default="", help="extra flags for every mooreeval pass (space-separated)")
    args = ap.parse_args()
    cands = candidates(args.backend, args.count)
    print("perf/compile_throughput: %d candidates, backend %s, %d workers" % (len(cands), args.backend, args.workers))
    results = {}
    if not args.skip_kernelbench:
        results["kernelbench load_inline"] = run_kernelbench(cands, args.backend, args.workers, args.trials, 10, 50)
    slots = [int(x) for x in args.run_slots.split(",") if x]
    extra = args.mooreeval_args.split()
    cache = args.cache_dir or tempfile.mkdtemp(prefix="me-bench-cache-")
    # The lean shim (one full torch/extension.h compile per toolchain and cache, ~1 min) is
    # built when the evaluator starts, before any candidate: it is in the uncached pass's
    # wall time (evals/s) but in no candidate's stages.
    first = extra + ["--run-slots", str(slots[0])]
    results["mooreeval uncached"] = run_mooreeval(cands, args.backend, args.workers, args.mooreeval, cache, first)
    results["mooreeval cached"] = run_mooreeval(cands, args.backend, args.workers, args.mooreeval, cache, first)
    for n in slots[1:]:
        results["mooreeval cached, %d slots" % n] = run_mooreeval(
            cands, args.backend, args.workers, args.mooreeval, cache, extra + ["--run-slots", str(n)])
    if not args.cache_dir:
        shutil.rmtree(cache, ignore_errors=True)

    print("\n%-26s %7s %15s %15s %15s %15s %15s %15s %9s %9s" % ("path", "ok", "inspect p50/p90",
                                                            "build p50/p90", "check p50/p90",
                                                            "bench p50/p90", "e2e p50/p90", "total p50/p90",
                                                            "evals/s", "steady/s"))
    for name, (rows, wall) in results.items():
        cells = []
        for stage in ("inspect", "build", "check", "bench", "e2e", "total"):
            vals = [r.get(stage, 0.0 if stage == "inspect" else r["total"]) for r in rows]
            cells.append("%6.2f/%-6.2f" % (pct(vals, 0.5), pct(vals, 0.9)))
        steady = rows[0].get("_steady_wall") if rows else None
        print("%-26s %3d/%-3d %15s %15s %15s %15s %15s %15s %9.3f %9s" % (
            name, sum(r["ok"] for r in rows), len(rows), *cells, len(rows) / wall,
            "%.3f" % (len(rows) / steady) if steady else "-"))
    print("(e2e: the candidate's own stages; total: from its start, including waits for a build or run slot;\n"
          " evals/s: over the whole process; steady/s: after start-up — toolchain probe, lean shim, warm runners)")
    print("\nrunner steps, p50 seconds (setup and waiting happen before the run slot is taken; the rest in it):")
    for name, (rows, _) in results.items():
        if name.startswith("mooreeval"):
            print("  %-26s build_wait %.2f run_wait %.2f | %s" % (
                name, pct([r["build_wait"] for r in rows], 0.5), pct([r["run_wait"] for r in rows], 0.5),
                runner_steps(rows)))
    print("\nCPU (the evaluator and the processes it waited for: compilers, runners):")
    for name, (rows, wall) in results.items():
        if rows and "_cpu" in rows[0]:
            print("  %-26s %7.1f core-seconds in %6.1f s wall: %5.1f cores busy on average, %.2f core-s per candidate" % (
                name, rows[0]["_cpu"], wall, rows[0]["_cpu"] / wall, rows[0]["_cpu"] / len(rows)))
    me = results["mooreeval uncached"][0]
    paths = dict(collections.Counter(r["path"] for r in me))
    runners = dict(collections.Counter(r["runner"] for r in me))
    print("\nmooreeval uncached build paths: %s; candidate runners: %s" % (paths, runners))
    verdict_diff = [(a["task"], a["verdict"], b["verdict"]) for a, b in
                    zip(sorted(me, key=lambda r: r["task"]), sorted(results["mooreeval cached"][0], key=lambda r: r["task"]))
                    if a["verdict"] != b["verdict"]]
    if verdict_diff:
        print("verdicts differ between the uncached and cached passes: %s" % verdict_diff)
    if "kernelbench load_inline" in results:
        kb_rows, kb_wall = results["kernelbench load_inline"]
        for name in ("mooreeval uncached", "mooreeval cached"):
            rows, wall = results[name]
            print("%s vs kernelbench: build p50 %.1fx faster, end-to-end p50 %.1fx (e2e) / %.1fx (total), "
                  "throughput %.1fx" % (
                      # A cached build takes ~0 s: count it as 10 ms so the ratio stays meaningful.
                      name, pct([r["build"] for r in kb_rows], 0.5) / max(pct([r["build"] for r in rows], 0.5), 0.01),
                      pct([r["total"] for r in kb_rows], 0.5) / max(pct([r["e2e"] for r in rows], 0.5), 1e-9),
                      pct([r["total"] for r in kb_rows], 0.5) / max(pct([r["total"] for r in rows], 0.5), 1e-9),
                      (len(rows) / wall) / (len(kb_rows) / kb_wall)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({k: {"rows": v[0], "wall": v[1]} for k, v in results.items()}, f, indent=1)


if __name__ == "__main__":
    main()
