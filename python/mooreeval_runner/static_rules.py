"""AST rules for the legality stage: what a candidate's Python may not do.

A legal candidate imports torch, builds its kernel with load_inline and calls it from
ModelNew.forward. Everything else that reaches outside that path (files, sockets, processes,
threads, streams, reflection on modules, patching torch or the harness) is a finding; the C++
legality stage turns any finding into `illegal`. A candidate with findings is never executed.

Each finding is {"rule", "message", "line"}."""
import ast

# Top-level modules a candidate may not import: file, network, process, thread and
# reflection access, and the harness itself.
FORBIDDEN_MODULES = {
    "os": "operating-system access (files, processes)",
    "posix": "operating-system access", "nt": "operating-system access",
    "io": "file access", "pathlib": "file access", "shutil": "file access", "glob": "file access",
    "tempfile": "file access", "fileinput": "file access", "mmap": "file/memory mapping",
    "fcntl": "file-descriptor control", "pickle": "deserialisation", "marshal": "deserialisation",
    "socket": "network access", "ssl": "network access", "http": "network access",
    "urllib": "network access", "requests": "network access", "ftplib": "network access",
    "smtplib": "network access", "asyncio": "network/event loop", "selectors": "network access",
    "select": "network access",
    "subprocess": "process creation", "multiprocessing": "process creation", "pty": "process creation",
    "signal": "signal handlers", "resource": "resource limits",
    "threading": "threads", "_thread": "threads", "concurrent": "threads/processes",
    "ctypes": "native memory and function access", "cffi": "native code access",
    "importlib": "import machinery", "builtins": "the builtins module", "gc": "heap inspection",
    "inspect": "frame/source inspection", "code": "interpreter access", "sysconfig": "host paths",
    "mooreeval_runner": "the evaluation harness",
}

# Builtins that reach files, code or module namespaces.
FORBIDDEN_CALLS = {
    "open": ("file_access", "open() reads or writes files"),
    "exec": ("dynamic_code", "exec() runs code the inspection cannot see"),
    "eval": ("dynamic_code", "eval() runs code the inspection cannot see"),
    "compile": ("dynamic_code", "compile() builds code the inspection cannot see"),
    "__import__": ("forbidden_import", "__import__() bypasses the import checks"),
    "globals": ("reflection", "globals() exposes module namespaces"),
    "vars": ("reflection", "vars() exposes module namespaces"),
    "breakpoint": ("dynamic_code", "breakpoint() starts a debugger"),
    "input": ("file_access", "input() reads stdin"),
}

# Attributes whose use means reflection on interpreter internals.
FORBIDDEN_ATTRS = {
    "__dict__", "__builtins__", "__globals__", "__code__", "__closure__", "__subclasses__",
    "__getattribute__", "__setattr__", "f_back", "f_globals", "f_locals", "gi_frame", "tb_frame",
}

# sys attributes that reach other modules or the interpreter's frames.
FORBIDDEN_SYS_ATTRS = {"modules", "settrace", "setprofile", "_getframe", "meta_path", "path_hooks"}

# torch.cuda names that put work on streams the harness does not see, or replay captured
# work instead of computing it.
STREAM_NAMES = {"Stream", "stream", "ExternalStream", "StreamContext", "set_stream", "CUDAGraph", "graph",
                "make_graphed_callables", "graphs"}


def dotted(node):
    """"a.b.c" for a Name/Attribute chain, "" otherwise."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _root(node):
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def finding(rule, message, node):
    return {"rule": rule, "message": message, "line": getattr(node, "lineno", 0)}


class _ModuleScan(ast.NodeVisitor):
    def __init__(self):
        self.findings = []
        self.imported = {}  # local name -> full dotted name it was imported as

    def _add(self, rule, message, node):
        self.findings.append(finding(rule, message, node))

    def _check_module(self, name, node):
        top = name.split(".")[0]
        if top in FORBIDDEN_MODULES:
            self._add("forbidden_import", "imports %s: %s" % (name, FORBIDDEN_MODULES[top]), node)
        if name.startswith("torch.multiprocessing") or name.startswith("torch.distributed"):
            self._add("forbidden_import", "imports %s: process creation" % name, node)

    def visit_Import(self, node):
        for alias in node.names:
            self._check_module(alias.name, node)
            local = alias.asname or alias.name.split(".")[0]
            self.imported[local] = alias.name if alias.asname else alias.name.split(".")[0]
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        module = node.module or ""
        if node.level:
            self._add("forbidden_import", "relative import (the candidate is a single file)", node)
        self._check_module(module, node)
        for alias in node.names:
            self._check_module(module + "." + alias.name, node)
            self.imported[alias.asname or alias.name] = module + "." + alias.name
        self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            rule, why = FORBIDDEN_CALLS[node.func.id]
            self._add(rule, why, node)
        if isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr", "getattr") and node.args:
            target = _root(node.args[0])
            if target in self.imported or target in ("torch", "__builtins__"):
                rule = "reflection" if node.func.id == "getattr" else "monkey_patch"
                self._add(rule, "%s() on the imported name '%s'" % (node.func.id, target), node)
        self.generic_visit(node)

    def visit_Attribute(self, node):
        name = dotted(node)
        if node.attr in FORBIDDEN_ATTRS or (
                node.attr in FORBIDDEN_SYS_ATTRS and self.imported.get(name.split(".")[0]) == "sys"):
            self._add("reflection", "uses .%s (interpreter internals)" % node.attr, node)
        parts = name.split(".")
        if len(parts) >= 3 and self.imported.get(parts[0], parts[0]) == "torch" and parts[1] == "cuda" \
                and parts[2] in STREAM_NAMES:
            self._add("side_stream", "uses torch.cuda.%s: work outside the harness's stream" % parts[2], node)
        self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in ("__builtins__", "__loader__", "__spec__"):
            self._add("reflection", "uses %s (interpreter internals)" % node.id, node)
        if node.id.startswith("__mooreeval"):
            self._add("reflection", "uses %s, a name reserved for the harness" % node.id, node)
        self.generic_visit(node)

    def _check_target(self, target, node):
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._check_target(t, node)
            return
        if isinstance(target, ast.Starred):
            self._check_target(target.value, node)
            return
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            root = _root(target)
            if root in self.imported or root == "torch":
                self._add("monkey_patch", "assigns to %s, which belongs to the imported '%s'"
                          % (dotted(target) or root + "[...]", self.imported.get(root, root)), node)

    def visit_Assign(self, node):
        for t in node.targets:
            self._check_target(t, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._check_target(node.target, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self._check_target(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node):
        for t in node.targets:
            self._check_target(t, node)
        self.generic_visit(node)

    def visit_ClassDef(self, node):
        for base in node.bases:
            name = dotted(base)
            if name.split(".")[-1] in ("Tensor", "TensorBase") or name.endswith("TorchDispatchMode") \
                    or name.endswith("TorchFunctionMode"):
                self._add("tensor_subclass", "class %s derives from %s: outputs that compute lazily or "
                          "intercept torch" % (node.name, name), node)
        self.generic_visit(node)

    def visit_FunctionDef(self, node):
        if node.name in ("__torch_function__", "__torch_dispatch__"):
            self._add("tensor_subclass", "defines %s: intercepts torch calls" % node.name, node)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef


def module_findings(tree):
    """Findings from every statement of the module (not only forward)."""
    scan = _ModuleScan()
    scan.visit(tree)
    return scan.findings, scan.imported


def forward_findings(forward, imported):
    """Findings specific to ModelNew.forward: host-side compute and identity-keyed state."""
    out = []
    numpy_names = {local for local, full in imported.items() if full.split(".")[0] in ("numpy", "scipy", "math")}
    for node in ast.walk(forward):
        if isinstance(node, ast.Name) and node.id in numpy_names:
            out.append(finding("host_compute", "forward uses %s: host-side compute instead of the kernel"
                               % imported[node.id], node))
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id == "id":
                out.append(finding("identity_keyed", "forward calls id(): state keyed on object identity", node))
            if isinstance(node.func, ast.Attribute) and node.func.attr in (
                    "data_ptr", "untyped_storage", "storage", "_cdata", "numpy", "tolist"):
                rule = "identity_keyed" if node.func.attr in ("data_ptr", "untyped_storage", "storage", "_cdata") \
                    else "host_compute"
                out.append(finding(rule, "forward calls .%s()" % node.func.attr, node))
    return out
