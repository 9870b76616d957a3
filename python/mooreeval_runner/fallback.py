"""Conditional code in a candidate: dead fallbacks, and code paths that only timing takes.

KernelBench submissions often keep a PyTorch path for when the kernel cannot run: the `else` of a
device check (`if x.is_cuda: ext.f(x) else: torch.relu(x)`), or an `except` handler around the
kernel call. That code is dead on the target device, and rejecting it statically rejects honest
kernels. So by default PyTorch compute inside a conditional block of ModelNew.forward is not fatal
before the run; PyTorch compute outside any conditional block always runs, and stays fatal.
`--forbid-fallback-code` (job key "forbid_fallback_code") keeps the strict static rule.

What the run proves instead: every conditional block (an `if` body, its `else`, an `except`
handler) of every function the candidate defines is instrumented with a call that counts its
entries per phase of the run (`FallbackHits`). Then
- `fallback_executed`: a block of forward that holds PyTorch compute ran at all;
- `unchecked_code_path`: a block ran while the harness timed the candidate (or re-measured it) but
  never in a trial or a consistency call, where outputs and dispatched ops are checked — the shape
  of a candidate that switches to another computation for the timed calls only.

Inspection and the candidate run derive the blocks from the same source with `module_blocks`, so
their numbering agrees. The hit function's name is reserved: no candidate may mention it.
"""
import ast

HIT_FUNCTION = "__mooreeval_block__"
CHECKED_PHASES = ("trial", "check")  # calls whose outputs and dispatched ops the harness checks
TIMED_PHASES = ("timed", "recheck")


class Block:
    """A conditional block: its statement list (mutable, for instrumentation), the line of its first
    statement, its kind ("if", "else", "except") and whether it is in ModelNew.forward."""

    def __init__(self, index, kind, statements, in_forward):
        self.index = index
        self.kind = kind
        self.statements = statements
        self.line = statements[0].lineno if statements else 0
        self.in_forward = in_forward


def _is_forward(func, parents):
    owner = parents.get(id(func))
    return func.name == "forward" and isinstance(owner, ast.ClassDef) and owner.name == "ModelNew"


def module_blocks(tree):
    """(blocks in source order, [(node, innermost Block or None)] for the nodes of ModelNew.forward)."""
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    blocks, forward_nodes = [], []
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    functions.sort(key=lambda n: (n.lineno, n.col_offset))
    for func in functions:
        in_forward = _is_forward(func, parents)
        on_node = (lambda node, block: forward_nodes.append((node, block))) if in_forward else None
        _walk(func.body, None, blocks, in_forward, on_node)
    return blocks, forward_nodes


def _new_block(blocks, kind, statements, in_forward):
    blocks.append(Block(len(blocks), kind, statements, in_forward))
    return blocks[-1]


def _visit(node, block, on_node):
    if on_node is not None:
        for child in ast.walk(node):
            on_node(child, block)


def _walk(statements, block, blocks, in_forward, on_node):
    for stmt in statements:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # a nested definition's own blocks are walked as their own function
        if isinstance(stmt, ast.If):
            _visit(stmt.test, block, on_node)
            _walk(stmt.body, _new_block(blocks, "if", stmt.body, in_forward), blocks, in_forward, on_node)
            if stmt.orelse:
                _walk(stmt.orelse, _new_block(blocks, "else", stmt.orelse, in_forward), blocks, in_forward, on_node)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            if on_node is not None:
                on_node(stmt, block)
            _walk(stmt.body, block, blocks, in_forward, on_node)
            for handler in stmt.handlers:
                _walk(handler.body, _new_block(blocks, "except", handler.body, in_forward), blocks, in_forward,
                      on_node)
            _walk(stmt.orelse, block, blocks, in_forward, on_node)
            _walk(stmt.finalbody, block, blocks, in_forward, on_node)
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
            for field in ("target", "iter", "test", "items"):
                value = getattr(stmt, field, None)
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, ast.AST):
                        _visit(item, block, on_node)
            _walk(stmt.body, block, blocks, in_forward, on_node)
            _walk(getattr(stmt, "orelse", []), block, blocks, in_forward, on_node)
        else:
            _visit(stmt, block, on_node)


def instrument(tree):
    """Inserts `__mooreeval_block__(i)` as the first statement of every block i (in place).
    Returns the blocks."""
    blocks, _ = module_blocks(tree)
    for block in blocks:
        if not block.statements:
            continue
        call = ast.Expr(ast.Call(ast.Name(HIT_FUNCTION, ast.Load()), [ast.Constant(block.index)], []))
        block.statements.insert(0, ast.copy_location(call, block.statements[0]))
    ast.fix_missing_locations(tree)
    return blocks


class BlockHits:
    """The function an instrumented candidate calls on entering a block: counts entries per phase.
    `phase` is set by the harness around each group of calls."""

    def __init__(self, blocks, compute_blocks):
        self.lines = {b.index: b.line for b in blocks}
        self.compute_blocks = set(compute_blocks)  # forward blocks that hold PyTorch compute
        self.phase = "load"
        self.counts = {}  # (block, phase) -> entries

    def __call__(self, index):
        key = (index, self.phase)
        self.counts[key] = self.counts.get(key, 0) + 1

    def _ran(self, index, phases):
        return sum(n for (i, p), n in self.counts.items() if i == index and p in phases)

    def findings(self):
        """{rule: message} for the run so far."""
        out = {}
        every = {i for i, _ in self.counts}
        ran = sorted(i for i in every if i in self.compute_blocks)
        if ran:
            out["fallback_executed"] = (
                "forward ran its PyTorch fallback code (%s): PyTorch compute instead of the candidate's kernel"
                % ", ".join("line %d, %d calls" % (self.lines.get(i, 0), self._ran(i, ("load", "trial", "check",
                                                                                         "timed", "recheck")))
                            for i in ran))
        timed_only = sorted(i for i in every if self._ran(i, TIMED_PHASES) and not self._ran(i, CHECKED_PHASES))
        if timed_only:
            out["unchecked_code_path"] = (
                "code ran only while the candidate was timed, never in a checked call (%s): the timed calls "
                "computed differently" % ", ".join("line %d" % self.lines.get(i, 0) for i in timed_only))
        return out
