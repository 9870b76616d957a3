"""Modules of extensions built by the lean path (src/mooreeval/compile/lean_build.h). The shim library,
itself a Python extension compiled against torch, turns the library's C entry points into
functions that convert arguments and errors as load_inline's pybind11 module does."""
import importlib.util

_shims = {}


def _shim(path):
    if path not in _shims:
        spec = importlib.util.spec_from_file_location("mooreeval_lean_shim", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _shims[path] = module
    return _shims[path]


def load_lean_extension(entry, spec):
    """`entry`: {"name", "path", "lean_shim"} from the build stage; `spec`: the load_inline
    call (describe_load_inline) that asked for it."""
    functions = list((spec["functions"] or {}).items())
    return _shim(entry["lean_shim"]).load(entry["path"], entry["name"], functions,
                                          spec["with_pytorch_error_handling"])
