"""Run-time legality checks in the candidate process (the C++ legality stage decides).

- HarnessSnapshot: the functions and classes of torch, time, threading, builtins and the
  runner's own modules, taken before the candidate is imported; anything the candidate
  replaced (timer patching, a faked torch.allclose, a patched output writer) shows up.
- ExtensionCalls: counts calls into the candidate's prebuilt extension, so a forward that
  never calls its kernel (a decoy) is caught.
- CallWatch: one forward call under watch: dispatched aten ops, extension calls, exact
  torch.Tensor outputs (no lazy subclasses), Python threads left running.
- BusyThreadProbe (busy_native_threads): threads that keep burning CPU after forward returned.
"""
import collections
import os
import sys
import threading
import time

_WATCHED_MODULES = ("torch", "torch.nn.functional", "torch.cuda", "torch.autograd", "time", "threading",
                    "builtins", "numpy")


def _watched_objects():
    import torch
    objs = {}
    for name in _WATCHED_MODULES:
        if name in sys.modules:
            objs[name] = sys.modules[name]
    for name, mod in list(sys.modules.items()):
        if name.startswith("mooreeval_runner") and mod is not None:
            objs[name] = mod
    objs["torch.Tensor"] = torch.Tensor
    objs["torch.nn.Module"] = torch.nn.Module
    if hasattr(torch.cuda, "Event"):
        objs["torch.cuda.Event"] = torch.cuda.Event
    return objs


def _callables(obj):
    try:
        items = list(vars(obj).items())
    except TypeError:
        return {}
    return {k: v for k, v in items if callable(v) or isinstance(v, (staticmethod, classmethod, property))}


class HarnessSnapshot:
    """Identity of every callable attribute of the watched modules and classes."""

    def __init__(self):
        self._ids = {}
        self._keep = []  # holds the originals, so their ids cannot be reused
        for owner, obj in _watched_objects().items():
            for name, value in _callables(obj).items():
                self._ids[(owner, name)] = id(value)
                self._keep.append(value)

    def changed(self):
        """["owner.name", ...] replaced or deleted since the snapshot."""
        now = {}
        for owner, obj in _watched_objects().items():
            for name, value in _callables(obj).items():
                now[(owner, name)] = id(value)
        return sorted("%s.%s" % key for key, ident in self._ids.items() if now.get(key) != ident)


class ExtensionCalls:
    """Wraps the public functions of a loaded extension module with a call counter."""

    def __init__(self):
        self.count = 0

    def wrap(self, module):
        for name in dir(module):
            if name.startswith("_"):
                continue
            fn = getattr(module, name)
            if not callable(fn) or isinstance(fn, type):
                continue
            setattr(module, name, self._counting(fn))
        return module

    def _counting(self, fn):
        def call(*args, **kwargs):
            self.count += 1
            return fn(*args, **kwargs)

        call.__name__ = getattr(fn, "__name__", "extension_function")
        call.__doc__ = getattr(fn, "__doc__", None)
        return call


class CallWatch:
    """Runs forward calls and collects run-time findings ({rule: message}, first one kept)."""

    def __init__(self, extension_calls):
        from torch.utils._python_dispatch import TorchDispatchMode

        counts = collections.Counter()

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                counts[func.overloadpacket.__name__] += 1
                return func(*args, **(kwargs or {}))

        self.ops = counts
        self._mode_type = Mode
        self._extension_calls = extension_calls
        self.findings = {}
        self.calls = 0
        self.blocks = None  # fallback.BlockHits of the instrumented candidate, once loaded

    def warm_up(self):
        """Enters the dispatch mode once: the first entry imports torch._dynamo, which wraps
        torch functions (torch.manual_seed, ...); that must happen before the snapshot."""
        import torch
        with self._mode_type():
            torch.empty(1).fill_(0)
        self.ops.clear()

    def _note(self, rule, message):
        self.findings.setdefault(rule, message)

    def call(self, model, inputs, label):
        import torch
        from .tensors import flatten_outputs
        threads_before = set(threading.enumerate())
        calls_before = self._extension_calls.count
        with self._mode_type():
            out = model(*inputs)
        self.calls += 1
        if self._extension_calls.count == calls_before:
            self._note("extension_not_called", "%s: forward returned without calling the candidate's extension "
                       "(its kernel is a decoy)" % label)
        for t in flatten_outputs(out):
            if type(t) is not torch.Tensor:
                self._note("tensor_subclass_output", "%s: forward returned a %s, not a plain torch.Tensor "
                           "(a lazy or intercepting result)" % (label, type(t).__name__))
                break
        left = [t.name for t in threading.enumerate() if t not in threads_before and t.is_alive()]
        if left:
            self._note("thread_left_running", "%s: forward left Python threads running: %s" % (label, left[:4]))
        return out


def _thread_demand_seconds():
    """Seconds each thread of this process has wanted a CPU so far: schedstat's time on a CPU
    plus its time runnable in a run queue (nanoseconds), else utime + stime in clock ticks.
    Counting the queue time keeps a spinning thread visible on a loaded machine, where it
    gets only a slice of a core but is runnable the whole time."""
    hz = os.sysconf("SC_CLK_TCK")
    wanted = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/schedstat" % tid, "rb") as f:
                on_cpu, queued = f.read().split()[:2]
            wanted[int(tid)] = (int(on_cpu) + int(queued)) / 1e9
            continue
        except (OSError, ValueError):
            pass
        try:
            with open("/proc/self/task/%s/stat" % tid, "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            wanted[int(tid)] = (int(fields[11]) + int(fields[12])) / hz
        except (OSError, IndexError, ValueError):
            continue
    return wanted


class BusyThreadProbe:
    """Threads other than the calling one that wanted more than `share` of a CPU (ran or
    waited to run) from the probe's start until busy() is asked, at least `window_s`
    seconds: work still running in the background after forward returned. The window may
    overlap the harness's own waiting (for the orchestrator at a gate), so it costs the run
    slot nothing then. (schedstat counts nanoseconds, so a short window is enough; the
    settle time lets the candidate's OpenMP workers park, which they do within
    microseconds)"""

    def __init__(self, settle_s=0.02):
        self._me = threading.get_native_id()
        self._enabled = os.path.isdir("/proc/self/task")
        if self._enabled:
            time.sleep(settle_s)
            self._t0 = _thread_demand_seconds()
        self._start = time.monotonic()

    def busy(self, window_s=0.08, share=0.5):
        """[(tid, share)] of the busy threads."""
        if not self._enabled:
            return []
        left = window_s - (time.monotonic() - self._start)
        if left > 0:
            time.sleep(left)
        t1 = _thread_demand_seconds()
        elapsed = max(time.monotonic() - self._start, 1e-3)
        busy = []
        for tid, seconds in t1.items():
            if tid == self._me or tid not in self._t0:
                continue
            wanted = (seconds - self._t0[tid]) / elapsed
            if wanted > share:
                busy.append((tid, round(wanted, 2)))
        return busy


def busy_native_threads(window_s=0.08, settle_s=0.02, share=0.5):
    """BusyThreadProbe over `window_s` seconds from now (after `settle_s`)."""
    return BusyThreadProbe(settle_s).busy(window_s, share)


def tensors_equal(before, after):
    """True when every tensor of `after` still holds the bytes of its clone in `before`."""
    import torch
    for b, a in zip(before, after):
        if isinstance(a, torch.Tensor):
            if a.shape != b.shape or a.dtype != b.dtype:
                return False
            if not torch.equal(_bytes(a), _bytes(b)):
                return False
    return True


def _bytes(t):
    import torch
    return t.detach().contiguous().reshape(-1).view(torch.uint8)


def clone_tensors(values):
    import torch
    return [v.detach().clone().contiguous() if isinstance(v, torch.Tensor) else v for v in values]
