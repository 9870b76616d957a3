"""Inspection of a candidate before anything is built.

1. Parse (a SyntaxError is a format error; nothing of the candidate runs yet).
2. Static findings from the AST for the legality stage (static_rules.py; the C++ side decides
   the verdict). A candidate with findings stops here: it is never executed.
3. Execute the module (and construct ModelNew) with load_inline recording its arguments, so that
   the C++ build stage knows what to compile. The module sees the target backend's device
   (target_device.py: on cuda, device queries answer as a GPU would and device moves stay on the
   host), so a build under `if torch.cuda.is_available():` or a `.cuda()` in __init__ inspects as
   it will run. A candidate that builds lazily (in forward, an autograd.Function, a helper) is
   found by one forward call on meta tensors that stops at the first use of a pending extension.

Job settings: "device_type" (cpu | cuda: the target backend; optional), "allowed_torch_ops" (required;
the aten ops a forward may dispatch: the run-time allowlist, so that both checks agree) and
"forbid_fallback_code" (fallback.py).
"""
import ast
import traceback

from . import fallback, phase
from .loading import CandidateError, load_module_from_path, recording_load_inline
from .static_rules import dotted as _dotted
from .static_rules import finding as _finding
from .static_rules import forward_findings, module_findings
from .target_device import meta_inputs, target_device

TORCH_NAMESPACES = ("torch", "F", "nn", "functional")
# torch API that is no aten op and computes nothing: tensor construction from data, types, devices,
# grad modes, and the device-query / synchronisation namespaces.
NON_COMPUTE_API = {
    "tensor", "as_tensor", "is_tensor", "is_floating_point", "is_complex", "numel", "Size", "device", "dtype",
    "no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "is_grad_enabled", "get_default_dtype",
    "finfo", "iinfo", "float32", "float16", "bfloat16", "float64", "int32", "int64", "int8", "uint8", "bool",
    "contiguous_format", "channels_last", "autocast", "cuda", "cpu",
}
NON_COMPUTE_NAMESPACES = ("cuda", "backends", "amp", "version")


def is_torch_compute(call, allowed_ops):
    """True for a call of torch.* / F.* / nn.* that is neither an allowed aten op nor non-compute API."""
    parts = _dotted(call.func).split(".")
    if len(parts) < 2 or parts[0] not in TORCH_NAMESPACES:
        return False
    if parts[0] == "torch" and parts[1] in NON_COMPUTE_NAMESPACES:
        return False
    return parts[-1] not in allowed_ops and parts[-1] not in NON_COMPUTE_API


def _forward_def(model_new):
    return next((n for n in model_new.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)


def _forward_rules(tree, forward, imported, settings):
    """Findings of forward and the indices of its blocks that hold PyTorch compute (fallback.py)."""
    # The allowlist in force comes with the job (the orchestrator's LegalityOptions); the runner keeps
    # no copy of the default, so there is one source (src/mooreeval/legality/legality.cpp).
    allowed = set(settings["allowed_torch_ops"])
    forbid = bool(settings.get("forbid_fallback_code", False))
    findings = forward_findings(forward, imported)
    _, placed = fallback.module_blocks(tree)
    compute_blocks = set()
    for node, block in placed:
        if isinstance(node, ast.Name) and node.id == "Model":
            findings.append(_finding("calls_reference", "forward refers to the reference Model", node))
        if forbid and (isinstance(node, ast.Try) or type(node).__name__ == "TryStar"):
            findings.append(_finding("try_fallback", "try/except in forward (fallback path)", node))
        if isinstance(node, ast.Call) and is_torch_compute(node, allowed):
            if block is not None and not forbid:
                compute_blocks.add(block.index)  # dead or not: the run decides
                continue
            findings.append(_finding("torch_compute_in_forward",
                                     "forward calls %s(): PyTorch compute instead of the candidate's kernel%s"
                                     % (_dotted(node.func), " (in fallback code)" if block is not None else ""),
                                     node))
    return findings, sorted(compute_blocks)


def static_findings(tree, settings=None):
    """(ModelNew ClassDef or None, findings, forward blocks holding PyTorch compute)."""
    settings = settings or {}
    findings, imported = module_findings(tree)
    model_new = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"), None)
    calls_load_inline = any(
        isinstance(n, ast.Call) and _dotted(n.func).split(".")[-1] == "load_inline" for n in ast.walk(tree))
    if not calls_load_inline:
        findings.append(_finding("no_kernel", "the candidate never calls load_inline: it builds no kernel", tree))
    if model_new is None:
        return model_new, findings, []
    for base in model_new.bases:
        if _dotted(base).split(".")[-1] == "Model":
            findings.append(_finding("subclasses_reference", "ModelNew subclasses the reference Model", base))
    forward = _forward_def(model_new)
    if forward is None:
        findings.append(_finding("no_forward", "ModelNew defines no forward()", model_new))
        return model_new, findings, []
    forward_rules, compute_blocks = _forward_rules(tree, forward, imported, settings)
    return model_new, findings + forward_rules, compute_blocks


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
    model_new, findings, compute_blocks = static_findings(tree, job)
    clock.lap("static")
    if model_new is None:
        return {"status": "format_error", "message": "the candidate defines no class ModelNew"}
    if findings:
        # Already illegal: the module is not executed (it may open files or sockets at import).
        return {"status": "ok", "extensions": [], "findings": findings, "executed": False}
    task = load_module_from_path(job["task_path"], "mooreeval_task")
    clock.lap("task")
    specs, notes = [], []
    try:
        with target_device(job.get("device_type", "cpu")), recording_load_inline(specs):
            _execute(path, task, specs, notes)
    except CandidateError as e:
        return {"status": e.verdict, "message": str(e)}
    except BaseException as e:  # candidate code raised (or called sys.exit) at import time
        return {"status": "runtime_error", "message": "importing the candidate raised %r" % (e,),
                "traceback": traceback.format_exc()[-4000:]}
    clock.lap("execute")
    result = {"status": "ok", "extensions": specs, "findings": findings, "executed": True, "notes": notes}
    if compute_blocks:
        result["fallback_blocks"] = compute_blocks
        notes.append("forward has PyTorch compute in conditional blocks (%d): allowed only if the run never "
                     "enters them" % len(compute_blocks))
    return result


def _execute(path, task, specs, notes):
    """Imports the candidate; constructs ModelNew when the import built nothing; calls forward on meta
    inputs when construction built nothing either (a lazy build)."""
    import torch
    module = load_module_from_path(path, "mooreeval_candidate")
    if not hasattr(module, "ModelNew"):
        raise CandidateError("format_error", "ModelNew is not defined at module level")
    if specs:
        return
    torch.manual_seed(0)
    model = module.ModelNew(*task.get_init_inputs())
    if specs:
        return
    try:
        inputs = meta_inputs(task)
        with torch.no_grad():
            model(*inputs)
    except CandidateError:
        pass  # the forward reached a pending extension: what it built is recorded
    except Exception as e:  # noqa: BLE001  (meta tensors cannot run everything; only the recording matters)
        notes.append("the forward probe for a lazy build stopped: %s: %s" % (type(e).__name__, str(e)[:200]))
    if specs:
        notes.append("load_inline is first called by forward (a lazy build): built before the run")
