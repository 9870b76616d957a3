#!/usr/bin/env python3
"""GPU check of the MUSA-ported KernelBench (issue 25): each sampled L1/L2 task, ported by
`musacoder port-suite` and mapped back to CUDA by `musacoder port --to cuda --shim`, loads and runs its
reference Model on the GPU and gives the same output as the original task with the same seed.

    musa_kernelbench_shim.py --original KB/KernelBench --shimmed DIR [--per-level 20] [--min-ok 30]

Exit 0 when at least --min-ok tasks passed and none failed; prints one line per task."""
import argparse
import importlib.util
import os
import sys
import traceback

import torch


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(module, seed):
    torch.manual_seed(seed)
    model = module.Model(*module.get_init_inputs()).cuda().eval()
    torch.manual_seed(seed + 1)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    with torch.no_grad():
        out = model(*inputs)
    torch.cuda.synchronize()
    return out


def same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--original", required=True)
    ap.add_argument("--shimmed", required=True)
    ap.add_argument("--per-level", type=int, default=20)
    ap.add_argument("--min-ok", type=int, default=30)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("skipped: torch sees no GPU")
        return 0
    ok = failed = 0
    for level in ("level1", "level2"):
        names = sorted((f for f in os.listdir(os.path.join(args.shimmed, level)) if f.endswith(".py")),
                       key=lambda f: int(f.split("_", 1)[0]))[: args.per_level]
        for name in names:
            try:
                shimmed = run(load(os.path.join(args.shimmed, level, name), "shimmed_" + name[:-3]), 1234)
                original = run(load(os.path.join(args.original, level, name), "original_" + name[:-3]), 1234)
                if not same(shimmed, original):
                    raise AssertionError("outputs differ from the original task's")
                ok += 1
                print("MUSA_KB_RESULT %s/%s ok" % (level, name))
            except Exception:  # noqa: BLE001  (report every task)
                failed += 1
                print("MUSA_KB_RESULT %s/%s FAILED\n%s" % (level, name, traceback.format_exc(limit=3)))
            torch.cuda.empty_cache()
    print("MUSA_KB_SUMMARY ok=%d failed=%d (need >= %d ok, 0 failed)" % (ok, failed, args.min_ok))
    return 0 if ok >= args.min_ok and failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
