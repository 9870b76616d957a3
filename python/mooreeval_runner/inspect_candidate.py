"""Inspection of a candidate before anything is built.

1. Parse (a SyntaxError is a format error; nothing of the candidate runs yet).
2. Static findings from the AST for the legality stage (static_rules.py; the C++ side decides
   the verdict). A candidate with findings stops here: it is never executed.
3. Execute the module (and construct ModelNew) with load_inline recording its arguments,
   so that the C++ build stage knows what to compile.
"""
import ast
import traceback

from . import phase
from .loading import CandidateError, load_module_from_path, recording_load_inline
from .static_rules import dotted as _dotted
from .static_rules import finding as _finding
from .static_rules import forward_findings, module_findings

# Reaching any of these names from ModelNew.forward means the candidate falls back to
# PyTorch compute instead of its own kernel (torch.* attributes outside the allowlist).
TORCH_NAMESPACES = ("torch", "F", "nn", "functional")
TORCH_ALLOWED_IN_FORWARD = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "tensor", "as_tensor", "is_tensor", "Size", "device", "no_grad", "inference_mode",
    "float32", "float16", "bfloat16", "float64", "int32", "int64", "bool", "uint8", "contiguous_format",
    "cuda", "cpu",
}


def static_findings(tree):
    findings, imported = module_findings(tree)
    model_new = None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            model_new = node
    calls_load_inline = any(
        isinstance(n, ast.Call) and _dotted(n.func).split(".")[-1] == "load_inline" for n in ast.walk(tree))
    if not calls_load_inline:
        findings.append(_finding("no_kernel", "the candidate never calls load_inline: it builds no kernel", tree))
    if model_new is None:
        return model_new, findings
    for base in model_new.bases:
        if _dotted(base).split(".")[-1] == "Model":
            findings.append(_finding("subclasses_reference", "ModelNew subclasses the reference Model", base))
    forward = next((n for n in model_new.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
    if forward is None:
        findings.append(_finding("no_forward", "ModelNew defines no forward()", model_new))
        return model_new, findings
    findings.extend(forward_findings(forward, imported))
    for node in ast.walk(forward):
        if isinstance(node, ast.Try):
            findings.append(_finding("try_fallback", "try/except in forward (fallback path)", node))
        if isinstance(node, ast.Name) and node.id == "Model":
            findings.append(_finding("calls_reference", "forward refers to the reference Model", node))
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            parts = name.split(".")
            if len(parts) >= 2 and parts[0] in TORCH_NAMESPACES and parts[-1] not in TORCH_ALLOWED_IN_FORWARD:
                findings.append(_finding("torch_compute_in_forward",
                                         "forward calls %s(): PyTorch compute instead of the candidate's kernel"
                                         % name, node))
    return model_new, findings


def run(job):
    clock = phase.Stopwatch()
    result = _inspect(job, clock)
    result["seconds"] = clock.laps
    return result


def _inspect(job, clock):
    path = job["candidate_path"]
    with open(path, "rb") as f:
        source = f.read()
    try:
        tree = ast.parse(source, filename="candidate.py")
    except SyntaxError as e:
        return {"status": "format_error", "message": "Python syntax error: %s (line %s)" % (e.msg, e.lineno)}
    except ValueError as e:  # e.g. null bytes
        return {"status": "format_error", "message": "not Python source: %s" % e}
    clock.lap("parse")
    model_new, findings = static_findings(tree)
    clock.lap("static")
    if model_new is None:
        return {"status": "format_error", "message": "the candidate defines no class ModelNew"}

    if findings:
        # Already illegal: the module is not executed (it may open files or sockets at import).
        return {"status": "ok", "extensions": [], "findings": findings, "executed": False}

    import torch
    task = load_module_from_path(job["task_path"], "mooreeval_task")
    clock.lap("task")
    specs = []
    try:
        with recording_load_inline(specs):
            module = load_module_from_path(path, "mooreeval_candidate")
            if not hasattr(module, "ModelNew"):
                return {"status": "format_error", "message": "ModelNew is not defined at module level"}
            if not specs:
                # Some candidates build their extension in __init__.
                torch.manual_seed(0)
                module.ModelNew(*task.get_init_inputs())
    except CandidateError as e:
        return {"status": e.verdict, "message": str(e)}
    except BaseException as e:  # candidate code raised (or called sys.exit) at import time
        return {"status": "runtime_error", "message": "importing the candidate raised %r" % (e,),
                "traceback": traceback.format_exc()[-4000:]}
    clock.lap("execute")
    return {"status": "ok", "extensions": specs, "findings": findings, "executed": True}
