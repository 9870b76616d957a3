"""Importing task and candidate modules, with torch.utils.cpp_extension.load_inline
replaced: while inspecting, it records its arguments; while running, it returns the
extension that the C++ build stage already compiled."""
import contextlib
import importlib.util
import itertools
import sys
import types

from .lean_module import load_lean_extension

_counter = itertools.count()


class CandidateError(Exception):
    """The candidate itself is at fault. `verdict` is the class to report."""

    def __init__(self, verdict, message):
        super().__init__(message)
        self.verdict = verdict


def load_module_from_path(path, prefix):
    """Executes a Python file as a fresh module (a unique name per load)."""
    name = "%s_%d" % (prefix, next(_counter))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_instrumented_module(path, prefix, compute_blocks):
    """Executes a candidate file as a fresh module with its conditional blocks instrumented
    (fallback.py). Returns (module, BlockHits); `compute_blocks` are the indices of forward's blocks
    that hold PyTorch compute (from the inspection)."""
    import ast
    from . import fallback
    with open(path, "rb") as f:
        tree = ast.parse(f.read(), filename=path)
    blocks = fallback.instrument(tree)
    hits = fallback.BlockHits(blocks, compute_blocks)
    name = "%s_%d" % (prefix, next(_counter))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__[fallback.HIT_FUNCTION] = hits
    sys.modules[name] = module
    exec(compile(tree, path, "exec"), module.__dict__)  # noqa: S102  (the candidate, in its sandbox)
    return module, hits


def _normalise_sources(sources):
    if sources is None:
        return []
    if isinstance(sources, str):
        return [sources]
    return [str(s) for s in sources]


def _normalise_functions(functions):
    if functions is None:
        return None
    if isinstance(functions, str):
        functions = [functions]
    if isinstance(functions, (list, tuple)):
        return {str(f): str(f) for f in functions}
    if isinstance(functions, dict):
        return {str(k): str(v) for k, v in functions.items()}
    raise CandidateError("format_error", "load_inline: 'functions' must be a list or dict, got %s"
                         % type(functions).__name__)


def _strings(value):
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def describe_load_inline(name, cpp_sources, cuda_sources=None, sycl_sources=None, functions=None,
                         extra_cflags=None, extra_cuda_cflags=None, extra_sycl_cflags=None,
                         extra_ldflags=None, extra_include_paths=None, build_directory=None,
                         verbose=False, with_cuda=None, with_sycl=None, is_python_module=True,
                         with_pytorch_error_handling=True, keep_intermediates=True, use_pch=False,
                         no_implicit_headers=False):
    """The signature of torch's load_inline, turned into a build spec (plain JSON)."""
    if sycl_sources:
        raise CandidateError("format_error", "load_inline: sycl_sources are not supported")
    if not is_python_module:
        raise CandidateError("format_error", "load_inline: is_python_module=False is not supported")
    if not isinstance(name, str) or not name.isidentifier():
        raise CandidateError("format_error", "load_inline: name must be a Python identifier, got %r" % (name,))
    return {
        "name": name,
        "cpp_sources": _normalise_sources(cpp_sources),
        "cuda_sources": _normalise_sources(cuda_sources),
        "functions": _normalise_functions(functions),
        "extra_cflags": _strings(extra_cflags),
        "extra_cuda_cflags": _strings(extra_cuda_cflags),
        "extra_ldflags": _strings(extra_ldflags),
        "extra_include_paths": _strings(extra_include_paths),
        "with_cuda": with_cuda,
        "with_pytorch_error_handling": bool(with_pytorch_error_handling),
        "no_implicit_headers": bool(no_implicit_headers),
    }


class _PendingExtension(types.ModuleType):
    """What load_inline returns while inspecting: using it before the build is an error."""

    def __getattr__(self, item):
        if item.startswith("__"):
            raise AttributeError(item)
        raise CandidateError("runtime_error", "the extension '%s' was used at import time, before it "
                             "could be built (call it from ModelNew.forward)" % self.__name__)


def _unsupported_load(*args, **kwargs):
    raise CandidateError("format_error", "torch.utils.cpp_extension.load (from files) is not supported; "
                         "submit the sources with load_inline")


@contextlib.contextmanager
def recording_load_inline(specs):
    """Within the block, load_inline appends its spec to `specs` and builds nothing."""
    import torch.utils.cpp_extension as cpp_extension

    def record(*args, **kwargs):
        spec = describe_load_inline(*args, **kwargs)
        specs.append(spec)
        return _PendingExtension(spec["name"])

    with _patched(cpp_extension, record):
        yield


@contextlib.contextmanager
def prebuilt_load_inline(built, on_load=None):
    """Within the block, the i-th load_inline call returns the i-th prebuilt module.
    `built` is a list of {"name": ..., "path": ..., ["lean_shim": ...]} from the C++ build stage;
    `on_load`, when given, sees (and may wrap) each module before the candidate gets it."""
    import torch.utils.cpp_extension as cpp_extension
    queue = list(built)
    loaded = {}

    def load(*args, **kwargs):
        spec = describe_load_inline(*args, **kwargs)
        if spec["name"] in loaded:
            return loaded[spec["name"]]
        if not queue:
            raise CandidateError("runtime_error", "load_inline('%s') was not seen when the candidate was "
                                 "inspected (calls must not depend on run-time state)" % spec["name"])
        entry = queue.pop(0)
        if entry["name"] != spec["name"]:
            raise CandidateError("runtime_error", "load_inline calls changed order between inspection "
                                 "and run ('%s' vs '%s')" % (entry["name"], spec["name"]))
        if entry.get("lean_shim"):
            module = load_lean_extension(entry, spec)
        else:
            module_spec = importlib.util.spec_from_file_location(entry["name"], entry["path"])
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
        if on_load is not None:
            module = on_load(module)
        loaded[spec["name"]] = module
        return module

    with _patched(cpp_extension, load):
        yield


@contextlib.contextmanager
def _patched(cpp_extension, load_inline):
    from . import devices
    saved = (cpp_extension.load_inline, cpp_extension.load)
    cpp_extension.load_inline = load_inline
    cpp_extension.load = _unsupported_load
    musa_extension = devices.musa_extension_module()  # native MUSA submissions (torch_musa's load_inline)
    if musa_extension is not None:
        saved_musa = (musa_extension.load_inline, musa_extension.load)
        musa_extension.load_inline = devices.musa_load_inline_adapter(load_inline)
        musa_extension.load = _unsupported_load
    try:
        yield
    finally:
        cpp_extension.load_inline, cpp_extension.load = saved
        if musa_extension is not None:
            musa_extension.load_inline, musa_extension.load = saved_musa
