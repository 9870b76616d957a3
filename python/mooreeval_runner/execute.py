"""Running the reference Model or a candidate ModelNew on the trial inputs.

Both sides build inputs the same way: torch.manual_seed(seed); get_inputs(); move to the
device. Seeds come from the orchestrator (fresh per evaluation). The two sides run in
different processes; only the orchestrator sees both outputs."""
import collections
import traceback

from . import phase
from .loading import CandidateError, load_module_from_path, prebuilt_load_inline
from .tensors import flatten_outputs, write_outputs
from .timing import benchmark


def _to_device(values, device):
    import torch
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def _make_inputs(task, seed, device):
    import torch
    torch.manual_seed(seed)
    return _to_device(list(task.get_inputs()), device)


def _setup(job):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if job.get("threads"):
        torch.set_num_threads(int(job["threads"]))
    device = job["device"]
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise RuntimeError("CUDA backend requested but torch sees no GPU")
        torch.cuda.set_device(device)
    return device


def _sync(device):
    import torch
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _poison_device_memory(device, nbytes):
    """Fills the caching allocator's free blocks with NaN bytes, so an output the candidate
    never writes reads as NaN rather than as a stale correct answer."""
    import torch
    if device.startswith("cuda") and nbytes > 0:
        block = torch.empty(nbytes, dtype=torch.uint8, device=device)
        block.fill_(0xFF)  # 0xFFFFFFFF is a NaN in float32
        del block


def _set_host_poison(enabled):
    """glibc's M_PERTURB: while on, every malloc'd block is filled with a junk byte (0x5A ^
    0xFF), so an output the candidate never writes is garbage, not a lucky zero page. Only
    during the trials: it costs a memset per allocation, which must not reach the timings."""
    import ctypes
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(ctypes.c_int(-6), ctypes.c_int(0x5A if enabled else 0))  # M_PERTURB == -6
    except (OSError, AttributeError):
        pass


class _OpRecorder:
    """Counts the aten ops dispatched while active (from Python or from C++ extensions)."""

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        counts = collections.Counter()

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                counts[func.overloadpacket.__name__] += 1
                return func(*args, **(kwargs or {}))

        self.counts = counts
        self.mode = Mode()


def _run_trials(model, task, job, device, record_ops):
    import torch
    trials = []
    ops = None
    _set_host_poison(job.get("poison_host", False))
    for i, seed in enumerate(job["trial_seeds"]):
        inputs = _make_inputs(task, seed, device)
        _poison_device_memory(device, job.get("poison_bytes", 0))
        with torch.no_grad():
            if record_ops and i == 0:
                rec = _OpRecorder()
                with rec.mode:
                    out = model(*inputs)
                ops = dict(rec.counts)
            else:
                out = model(*inputs)
        _sync(device)
        trials.append(flatten_outputs(out))
    _set_host_poison(False)
    return trials, ops


def _gate(job, announce, default):
    """Tells the orchestrator `announce` on the control pipe and waits for its next word on
    stdin. Without a control pipe (a manual run) the job's `default` answers."""
    import os
    import sys
    if not job.get("control_fd"):
        return default
    os.write(int(job["control_fd"]), (announce + "\n").encode())
    return sys.stdin.readline().strip() or "exit"


def _timed(model, task, job, device):
    import torch
    if _gate(job, "outputs_ready", "bench" if job.get("benchmark") else "exit") != "bench":
        return None
    inputs = _make_inputs(task, job["trial_seeds"][0], device)

    def call():
        with torch.no_grad():
            model(*inputs)

    return benchmark(call, device, int(job["warmup_iters"]), int(job["benchmark_iters"]),
                     bool(job.get("flush_l2", True)))


def run_reference(job):
    import torch
    device = _setup(job)
    task = load_module_from_path(job["task_path"], "mooreeval_task")
    # Imported and ready: the orchestrator starts the trials when the GPU/CPU slot is ours.
    if _gate(job, "loaded", "run") != "run":
        return {"status": "ok", "timing": None, "cancelled": True}
    torch.manual_seed(job["init_seed"])
    model = task.Model(*_to_device(list(task.get_init_inputs()), device)).to(device).eval()
    trials, _ = _run_trials(model, task, job, device, record_ops=False)
    write_outputs(job["outputs_path"], trials)
    return {"status": "ok", "timing": _timed(model, task, job, device)}


def run_candidate(job):
    import torch
    device = _setup(job)
    task = load_module_from_path(job["task_path"], "mooreeval_task")
    if _gate(job, "loaded", "run") != "run":
        return {"status": "ok", "timing": None, "cancelled": True}
    phase.mark("candidate_loading")  # from here on, a crash is the candidate's
    try:
        with prebuilt_load_inline(job["extensions"]):
            module = load_module_from_path(job["candidate_path"], "mooreeval_candidate")
            torch.manual_seed(job["init_seed"])
            model = module.ModelNew(*_to_device(list(task.get_init_inputs()), device))
            if isinstance(model, torch.nn.Module):
                model = model.to(device).eval()
        phase.mark("candidate_running")
        trials, ops = _run_trials(model, task, job, device, record_ops=True)
        phase.mark("candidate_writing")
        write_outputs(job["outputs_path"], trials)
        phase.mark("candidate_timing")
        timing = _timed(model, task, job, device)
    except CandidateError as e:
        return {"status": e.verdict, "message": str(e)}
    except TypeError as e:
        if "forward returned" in str(e):
            return {"status": "wrong_answer", "message": str(e)}
        return _candidate_raised(e)
    except BaseException as e:
        return _candidate_raised(e)
    return {"status": "ok", "timing": timing, "torch_ops": ops or {}}


def _candidate_raised(e):
    return {"status": "runtime_error", "message": "the candidate raised %s: %s" % (type(e).__name__, e),
            "traceback": traceback.format_exc()[-4000:]}
