"""Runs every synthesized task module under DIR (expected.json: id -> output shape and dtype)
once in PyTorch and checks the grammar's shape inference. Exit 1 with a list on mismatch."""
import importlib.util
import json
import os
import sys

import torch


def main(root):
    expected = json.load(open(os.path.join(root, "expected.json")))
    bad = []
    for task_id, want in sorted(expected.items()):
        spec = importlib.util.spec_from_file_location("task", os.path.join(root, task_id + ".py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        torch.manual_seed(0)
        model = mod.Model(*mod.get_init_inputs()).eval()
        with torch.no_grad():
            out = model(*mod.get_inputs())
        got = {"shape": list(out.shape), "dtype": str(out.dtype).replace("torch.", "")}
        if got != want:
            bad.append("%s: got %s, grammar says %s" % (task_id, got, want))
        elif not torch.isfinite(out.float()).all():
            bad.append("%s: non-finite output" % task_id)
    for b in bad:
        print(b)
    print("checked %d tasks, %d mismatches" % (len(expected), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
