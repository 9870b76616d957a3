"""Shared helpers of the runner's pytest suite: paths, and the C++ side's defaults read from its
source, so that the runner never keeps a second copy of them."""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))


def cpp_default_allowed_ops():
    """The string literals of LegalityOptions::default_allowed_ops() (src/mooreeval/legality/legality.cpp):
    the allowlist every real inspect job carries."""
    with open(os.path.join(ROOT, "src", "mooreeval", "legality", "legality.cpp")) as f:
        text = f.read()
    body = re.search(r"LegalityOptions::default_allowed_ops\(\)\s*\{(.*?)\n\}", text, re.S)
    assert body, "default_allowed_ops() not found in legality.cpp"
    ops = re.findall(r'"([A-Za-z0-9_]+)"', body.group(1))
    assert len(ops) > 20, ops
    return ops


def inspect_settings(**extra):
    """An inspect job's settings as the orchestrator sends them (allowed_torch_ops is required)."""
    settings = {"allowed_torch_ops": cpp_default_allowed_ops()}
    settings.update(extra)
    return settings
