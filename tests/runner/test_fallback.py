"""The runner's conditional-code rules (fallback.py) and the inspection's static forward rules,
without a C++ build: parse, instrument and execute small candidate sources."""
import ast
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

from conftest import inspect_settings  # noqa: E402
from mooreeval_runner import fallback  # noqa: E402
from mooreeval_runner.inspect_candidate import static_findings  # noqa: E402

SOURCE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = load_inline(name="e", cpp_sources="", functions=["f"])


def helper(x, n):
    if n > 8:
        return x
    return x


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if x.is_cuda:
            return torch.relu(x)
        try:
            y = helper(x, self.calls)
        except RuntimeError:
            y = torch.nn.functional.relu(x)
        return y
'''


def rules(findings):
    return sorted({f["rule"] for f in findings})


def test_compute_in_conditional_blocks_is_not_fatal_by_default():
    model_new, findings, compute_blocks = static_findings(ast.parse(SOURCE), inspect_settings())
    assert model_new is not None
    assert rules(findings) == []
    blocks, _ = fallback.module_blocks(ast.parse(SOURCE))
    kinds = {b.index: (b.kind, b.in_forward) for b in blocks}
    assert [kinds[i] for i in compute_blocks] == [("if", True), ("except", True)]


def test_forbid_fallback_code_keeps_the_static_rules():
    _, findings, _ = static_findings(ast.parse(SOURCE), inspect_settings(forbid_fallback_code=True))
    assert rules(findings) == ["torch_compute_in_forward", "try_fallback"]


def test_unconditional_torch_compute_stays_fatal_and_allowlists_agree():
    src = SOURCE.replace("        self.calls += 1\n", "        self.calls += 1\n        x = torch.sigmoid(x)\n")
    _, findings, _ = static_findings(ast.parse(src), inspect_settings())
    assert rules(findings) == ["torch_compute_in_forward"]
    ok = SOURCE.replace("        self.calls += 1\n",
                        "        self.calls += 1\n        x = torch.flatten(x).view(-1)\n"
                        "        torch.cuda.synchronize()\n")
    assert rules(static_findings(ast.parse(ok), inspect_settings())[1]) == []
    # The job's allowlist is the run-time one: without flatten there, torch.flatten is compute.
    assert rules(static_findings(ast.parse(ok), {"allowed_torch_ops": ["view"]})[1]) == ["torch_compute_in_forward"]


def _load_instrumented(source, compute_blocks):
    tree = ast.parse(source)
    blocks = fallback.instrument(tree)
    hits = fallback.BlockHits(blocks, compute_blocks)
    namespace = {fallback.HIT_FUNCTION: hits}
    exec(compile(tree, "candidate.py", "exec"), namespace)  # noqa: S102  (test source)
    return namespace, hits


def test_a_fallback_that_runs_is_reported_with_its_line():
    src = '''
def forward(x, fail):
    try:
        if fail:
            raise RuntimeError("kernel failed")
        return x
    except RuntimeError:
        return -x
'''
    ns, hits = _load_instrumented(src, compute_blocks=[])
    blocks, _ = fallback.module_blocks(ast.parse(src))
    handler = [b.index for b in blocks if b.kind == "except"]
    hits.compute_blocks = set(handler)
    hits.phase = "trial"
    assert ns["forward"](3, False) == 3
    assert hits.findings() == {}
    assert ns["forward"](3, True) == -3
    found = hits.findings()
    assert list(found) == ["fallback_executed"]
    assert "line 8, 1 calls" in found["fallback_executed"]


def test_a_branch_taken_only_while_timed_is_reported():
    src = '''
class Counter:
    calls = 0

def forward(x):
    Counter.calls += 1
    if 8 < Counter.calls < 15:
        return 0
    return x
'''
    ns, hits = _load_instrumented(src, compute_blocks=[])
    for phase, calls in (("trial", 8), ("timed", 7), ("check", 5)):
        hits.phase = phase
        for _ in range(calls):
            ns["forward"](1)
    found = hits.findings()
    assert list(found) == ["unchecked_code_path"]
    assert "line 8" in found["unchecked_code_path"]  # the branch's first statement


def test_branches_taken_in_checked_calls_too_are_fine():
    src = '''
def forward(x, cache={}):
    if "k" not in cache:
        cache["k"] = x
    return cache["k"]
'''
    ns, hits = _load_instrumented(src, compute_blocks=[])
    hits.phase = "trial"
    ns["forward"](1)
    hits.phase = "timed"
    ns["forward"](1)
    assert hits.findings() == {}


def test_the_hit_function_name_is_reserved():
    src = SOURCE.replace("        self.calls += 1\n", "        __mooreeval_block__ = print\n")
    assert "reflection" in rules(static_findings(ast.parse(src), inspect_settings())[1])
