"""Running the reference Model or a candidate ModelNew on the trial inputs.

Both sides build inputs the same way: torch.manual_seed(seed); get_inputs(); on the device
(drawn there on GPUs, see _make_inputs). Seeds come from the orchestrator (fresh per evaluation). The two sides run in
different processes; only the orchestrator sees both outputs.

After the benchmark the candidate answers consistency calls (fresh inputs, repeated calls,
inputs overwritten in place) that the orchestrator compares with the reference's answers
for the same check seeds, and on request both sides re-measure with a second timing
method. Run-time legality findings (guards.py, kernel_profile.py) go into the result."""
import os
import time
import traceback

from . import devices, phase
from .guards import BusyThreadProbe, CallWatch, ExtensionCalls, HarnessSnapshot, clone_tensors, tensors_equal
from .loading import CandidateError, load_instrumented_module, load_module_from_path, prebuilt_load_inline
from .tensors import flatten_outputs, write_outputs
from .timing import benchmark, median, wall_clock_batch


def _to_device(values, device):
    import torch
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def _make_inputs(task, seed, device):
    """torch.manual_seed(seed); get_inputs(); on the device. On a GPU the task's factory calls
    run under `with torch.device(device)`, so random inputs are drawn there: drawing large
    tensors on the CPU and copying them took most of a run slot. A get_inputs that cannot run
    that way (it calls .numpy(), say) draws on the CPU instead: the same on both sides, which
    run the same task code with the same seed."""
    import torch
    if devices.is_gpu(device):
        torch.manual_seed(seed)
        try:
            with torch.device(device):
                return _to_device(list(task.get_inputs()), device)
        except Exception:  # noqa: BLE001  (task code; the CPU draw below decides)
            pass
    torch.manual_seed(seed)
    return _to_device(list(task.get_inputs()), device)


def _setup(job):
    import torch
    if job.get("threads"):
        torch.set_num_threads(int(job["threads"]))
    device = job["device"]
    devices.setup(device)  # cuda: torch.cuda; musa: torch_musa (+ torchada for CUDA-written code)
    devices.disable_tf32()
    return device


def _sync(device):
    devices.synchronize(device)


def _poison_device_memory(device, nbytes):
    """Fills the caching allocator's free blocks with NaN bytes, so an output the candidate
    never writes reads as NaN rather than as a stale correct answer."""
    import torch
    if devices.is_gpu(device) and nbytes > 0:
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


_WARM_UP_SEED = 0x5EED  # inputs of the warm-up only, never of a trial
_BUSY_SETTLE_S = 0.02  # after forward, before background threads count as busy (guards.BusyThreadProbe)


def _warm_up_harness(task, job, device):
    """The harness's own first uses, paid before the gate rather than in the run slot: in a
    fresh process the first input draw, the poison block's allocation, the first clone,
    comparison and device-to-host copy each load kernels or grow the allocator (a quarter of
    a second of the slot on a GPU). Runs task code only (get_inputs), never a candidate's;
    its device work is a few small kernels. On the CPU backend it is skipped: there the first
    uses are cheap, and any work before the slot would compete with the job timing in it.
    Returns the warm-up inputs (None on the CPU)."""
    import torch
    if device == "cpu":
        return None
    inputs = _make_inputs(task, _WARM_UP_SEED, device)
    _poison_device_memory(device, job.get("poison_bytes", 0))
    tensors_equal(clone_tensors(inputs), inputs)
    for v in inputs:
        if isinstance(v, torch.Tensor):
            v.detach().to("cpu")
    _sync(device)
    return inputs


def _run_trials(model, task, job, device, watch=None):
    """Runs forward on every trial seed. Returns (outputs per trial, index of the first trial
    whose forward changed its inputs, or -1). With a watch (the candidate), every trial's
    inputs stay alive until the end, so no two trials share input addresses: a cache keyed
    on pointers never hits during the trials and is caught by the consistency calls."""
    import torch
    trials = []
    kept_inputs = []
    mutated = -1
    _set_host_poison(job.get("poison_host", False))
    for i, seed in enumerate(job["trial_seeds"]):
        inputs = _make_inputs(task, seed, device)
        if watch is not None:
            kept_inputs.append(inputs)
        before = clone_tensors(inputs) if mutated < 0 else None
        _poison_device_memory(device, job.get("poison_bytes", 0))
        with torch.no_grad():
            out = watch.call(model, inputs, "trial %d" % i) if watch is not None else model(*inputs)
        _sync(device)
        if before is not None and not tensors_equal(before, inputs):
            mutated = i
        trials.append(flatten_outputs(out))
    _set_host_poison(False)
    return trials, mutated


def _gate(job, announce, default):
    """Tells the orchestrator `announce` on the control pipe and waits for its next word on
    stdin. Without a control pipe (a manual run) the job's `default` answers."""
    import sys
    if not job.get("control_fd"):
        return default
    os.write(int(job["control_fd"]), (announce + "\n").encode())
    return sys.stdin.readline().strip() or "exit"


def _write_json(path, value):
    import json
    if not path:
        return
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(value, f)
    os.replace(path + ".tmp", path)


def round_iters(job):
    """Timed calls per benchmark round: benchmark_iters split over timing_rounds (at least one each)."""
    rounds = max(1, int(job.get("timing_rounds", 1)))
    return max(1, -(-int(job["benchmark_iters"]) // rounds))


def _timed(model, task, job, device, warmup=None):
    """Benchmarks forward on trial 0's inputs: one round, after `warmup` untimed calls (default the job's
    warmup_iters). Returns (timing, the output of one timed call drawn uniformly from the system's entropy), which
    the caller checks: a candidate cannot tell which of its timed calls is checked, as it could the last one."""
    import torch
    inputs = _make_inputs(task, job["trial_seeds"][0], device)
    warm = int(job["warmup_iters"]) if warmup is None else warmup
    kept = _ReservoirOfOne(skip=warm)

    def call():
        with torch.no_grad():
            kept.offer(model(*inputs))

    timing = benchmark(call, device, warm, round_iters(job), bool(job.get("flush_l2", True)),
                       bool(job.get("host_head_start", True)))
    return timing, kept.value


_urandom = os.urandom  # bound before any candidate code runs: patching os.urandom later does not reach it


class _ReservoirOfOne:
    """Keeps one of the values offered after the first `skip` (reservoir sampling: the n-th replaces the kept one
    with probability 1/n), so each is kept with the same probability however many come (a timing loop may run
    again). Holding a reference costs no copy."""

    def __init__(self, skip):
        self.skip, self.seen, self.value = skip, 0, None

    def offer(self, value):
        if self.skip > 0:
            self.skip -= 1
            return
        self.seen += 1
        if int.from_bytes(_urandom(8), "little") % self.seen == 0:  # bias below 2^-40 for any loop length
            self.value = value


_LATER_ROUND_WARMUP = 2


def merge_rounds(rounds):
    """One timing from the rounds' summaries: median_ms is the median of the rounds' medians (a round that a
    slowed machine stretched does not move it), p10/min the lowest and p90 the highest of the rounds', iters
    their sum, rounds_median_ms each round's median in order; the cuda fields are the first round's."""
    merged = dict(rounds[0])
    merged.update({
        "median_ms": median(r["median_ms"] for r in rounds),
        "p10_ms": min(r["p10_ms"] for r in rounds), "p90_ms": max(r["p90_ms"] for r in rounds),
        "min_ms": min(r["min_ms"] for r in rounds), "iters": sum(r["iters"] for r in rounds),
        "rounds_median_ms": [r["median_ms"] for r in rounds]})
    return merged


def _recheck_timing(model, task, job, device):
    """The second timing method (timing.wall_clock_batch) on distinct input sets drawn
    from job["recheck_seed"], the same sets on both sides."""
    import torch
    base = int(job["recheck_seed"])
    calls = max(int(job["benchmark_iters"]), 1)
    first = _make_inputs(task, base, device)
    set_bytes = sum(v.numel() * v.element_size() for v in first if isinstance(v, torch.Tensor))
    max_sets = max(2, int(job.get("recheck_max_bytes", 1 << 30)) // max(set_bytes, 1))
    sets = [first] + [_make_inputs(task, base + k, device) for k in range(1, min(calls + 1, max_sets))]

    def call(inputs):
        with torch.no_grad():
            model(*inputs)

    return wall_clock_batch(call, sets, device, calls)


def _after_timing(model, task, job, device, result, round_output=None):
    """Publishes the first round's timing; then times another round ("bench": the orchestrator alternates the
    sides round by round, so that a machine slowed for a while stretches one round of each, not one whole
    side) or re-measures with the second method ("remeasure"), as often as the orchestrator asks. Each round's
    timing is published alone; at exit result["timing"] merges them (merge_rounds). round_output(n, output)
    receives the kept timed output (_timed) of each later round n (1, 2, ...)."""
    rounds = [result["timing"]]
    _write_json(job.get("timing_path"), {"timing": rounds[-1]})
    while True:
        answer = _gate(job, "timed", "exit")
        if answer == "bench":  # warm already: two untimed calls bring the caches back after the other side
            warmup = min(_LATER_ROUND_WARMUP, int(job["warmup_iters"]))
            timing, last = _timed(model, task, job, device, warmup)
            rounds.append(timing)
            _write_json(job.get("timing_path"), {"timing": rounds[-1]})
            if round_output is not None:
                round_output(len(rounds) - 1, last)
        elif answer == "remeasure":
            result["timing_recheck"] = _recheck_timing(model, task, job, device)
            _write_json(job.get("recheck_path"), result["timing_recheck"])
        else:
            break
    if len(rounds) > 1:
        result["timing"] = merge_rounds(rounds)


def run_reference(job):
    import torch
    clock = phase.Stopwatch()
    device = _setup(job)
    task = load_module_from_path(job["task_path"], "mooreeval_task")
    clock.lap("setup")
    # The reference is trusted task code: it is built and, on a GPU, warmed up (one forward of
    # a throwaway instance on throwaway inputs: kernel loading, library handles) before the
    # gate, so that its trials in the slot do not pay a fresh process's first calls. The
    # model that runs the trials is a new instance from init_seed, never called before.
    warm_inputs = _warm_up_harness(task, job, device)
    if warm_inputs is not None:
        warm = task.Model(*_to_device(list(task.get_init_inputs()), device)).to(device).eval()
        with torch.no_grad():
            warm(*warm_inputs)
        del warm, warm_inputs
    torch.manual_seed(job["init_seed"])
    model = task.Model(*_to_device(list(task.get_init_inputs()), device)).to(device).eval()
    _sync(device)
    clock.lap("init")
    # Ready: the orchestrator starts the trials when the GPU/CPU slot is ours.
    if _gate(job, "loaded", "run") != "run":
        return {"status": "ok", "timing": None, "cancelled": True}
    clock.lap("waiting")
    trials, mutated = _run_trials(model, task, job, device)
    write_outputs(job["outputs_path"], trials)
    checks = []
    for seed in job.get("check_seeds", []):
        with torch.no_grad():
            checks.append(flatten_outputs(model(*_make_inputs(task, seed, device))))
        _sync(device)
    if job.get("checks_path"):
        write_outputs(job["checks_path"], checks)
    clock.lap("trials")
    result = {"status": "ok", "timing": None, "inputs_mutated": mutated >= 0, "seconds": clock.laps}
    if _gate(job, "outputs_ready", "bench" if job.get("benchmark") else "exit") != "bench":
        return result
    clock.lap("waiting")
    result["timing"], _ = _timed(model, task, job, device)
    clock.lap("timing")
    _after_timing(model, task, job, device, result)
    return result


def _consistency_calls(model, task, job, device, watch, timed_output, before_profile, clock):
    """Calls that must give the reference's answers too: a timed call (_timed), fresh inputs,
    the same input objects again, the same objects overwritten in place, new objects (and on
    CUDA a profiled call). Outputs are kept, not cloned, until written: an output buffer
    that a later call overwrites shows as a mismatch. Returns (outputs, [{name, ref, index}],
    kernel profile or None)."""
    import torch
    seeds = job.get("check_seeds", [])
    if len(seeds) < 3:
        return [], [], None
    outputs, labels = [], []

    def record(name, out, ref, index):
        outputs.append(flatten_outputs(out))
        labels.append({"name": name, "ref": ref, "index": index})

    def watched(inputs, name):
        with torch.no_grad():
            out = watch.call(model, inputs, name)
        _sync(device)
        return out

    if timed_output is not None:
        record("timed_call", timed_output, "trial", 0)
    inputs = _make_inputs(task, seeds[0], device)
    record("fresh_inputs", watched(inputs, "fresh inputs"), "check", 0)
    record("same_inputs_again", watched(inputs, "same inputs again"), "check", 0)
    for dst, src in zip(inputs, _make_inputs(task, seeds[1], device)):
        if isinstance(dst, torch.Tensor):
            dst.copy_(src)  # same objects and addresses, new values
    record("inputs_overwritten_in_place", watched(inputs, "inputs overwritten in place"), "check", 1)
    other = _make_inputs(task, seeds[2], device)
    record("new_input_objects", watched(other, "new input objects"), "check", 2)
    profile = None
    before_profile()  # the profiler itself may wrap torch functions
    clock.lap("checks")
    if devices.profiles_kernels(device):  # not on musa: see devices.py
        from .kernel_profile import profile_call
        work_dir = os.path.dirname(job["outputs_path"])
        profiled_inputs = _make_inputs(task, seeds[0], device)
        out, profile = profile_call(lambda: watched(profiled_inputs, "profiled call"), device, work_dir,
                                    list(job.get("kernel_names", [])), float(job.get("min_own_kernel_share", 0.0)))
        record("profiled_call", out, "check", 0)
        clock.lap("profile")
    return outputs, labels, profile


def _late_job(job):
    """What the orchestrator knows only after the build (the built libraries, the kernel
    names): a file it writes before it sends "run", since the candidate runner may start
    before the build."""
    import json
    path = job.get("late_job_path")
    if path:
        with open(path, encoding="utf-8") as f:
            job.update(json.load(f))


def run_candidate(job):
    import torch
    clock = phase.Stopwatch()
    device = _setup(job)
    task = load_module_from_path(job["task_path"], "mooreeval_task")
    # The harness's own fixed costs, before the gate (the runner may wait there for its run
    # slot): nothing of the candidate's runs before "run".
    extension_calls = ExtensionCalls()
    watch = CallWatch(extension_calls)
    watch.warm_up()
    if devices.profiles_kernels(device):
        import torch.profiler  # noqa: F401  (imported by the harness, before the snapshot)
        from .kernel_profile import warm_up
        warm_up()
    _warm_up_harness(task, job, device)
    snapshot = HarnessSnapshot()  # before any candidate code runs
    clock.lap("setup")
    if _gate(job, "loaded", "run") != "run":
        return {"status": "ok", "timing": None, "cancelled": True}
    clock.lap("waiting")
    _late_job(job)
    phase.mark("candidate_loading")  # from here on, a crash is the candidate's
    result = {"status": "ok", "timing": None, "seconds": clock.laps}
    try:
        with prebuilt_load_inline(job["extensions"], extension_calls.wrap):
            module, blocks = load_instrumented_module(job["candidate_path"], "mooreeval_candidate",
                                                      job.get("fallback_blocks", []))
            watch.blocks = blocks
            torch.manual_seed(job["init_seed"])
            model = module.ModelNew(*_to_device(list(task.get_init_inputs()), device))
            if isinstance(model, torch.nn.Module):
                model = model.to(device).eval()
        clock.lap("load")
        phase.mark("candidate_running")
        blocks.phase = "trial"
        trials, mutated = _run_trials(model, task, job, device, watch)
        result["inputs_mutated"] = mutated >= 0
        if mutated >= 0:
            watch.findings.setdefault("input_mutation", "trial %d: forward changed its inputs in place" % mutated)
        _check_snapshot(watch, snapshot)
        # The busy-thread probe's settle time passes while the outputs are written, and its
        # window while the orchestrator compares them (the gate below): no sleep of its own.
        settle_from = time.monotonic()
        phase.mark("candidate_writing")
        write_outputs(job["outputs_path"], trials)
        del trials
        probe = BusyThreadProbe(settle_s=max(0.0, _BUSY_SETTLE_S - (time.monotonic() - settle_from)))
        clock.lap("trials")
        answer = _gate(job, "outputs_ready", "bench" if job.get("benchmark") else "exit")
        busy = probe.busy()
        if busy:
            watch.findings.setdefault("busy_background_thread", "threads kept running after forward returned "
                                      "(tid, CPU share): %s" % busy[:4])
        if answer == "bench":
            clock.lap("waiting")
            phase.mark("candidate_timing")
            blocks.phase = "timed"
            result["timing"], timed_output = _timed(model, task, job, device)
            clock.lap("timing")
            phase.mark("candidate_checking")
            blocks.phase = "check"
            outputs, labels, profile = _consistency_calls(model, task, job, device, watch, timed_output,
                                                          lambda: _check_snapshot(watch, snapshot), clock)
            if job.get("checks_path"):
                write_outputs(job["checks_path"], outputs)
            clock.lap("checks")
            result["checks"] = labels
            if profile is not None:
                result["kernel_profile"] = {k: v for k, v in profile.items() if k != "findings"}
                for rule, message in profile["findings"].items():
                    watch.findings.setdefault(rule, message)
            _finish_findings(result, watch)
            blocks.phase = "recheck"
            later_rounds = _RoundOutputs(job, outputs, labels)
            _after_timing(model, task, job, device, result, later_rounds.add)
            later_rounds.publish(job, result)
    except CandidateError as e:
        return {"status": e.verdict, "message": str(e)}
    except TypeError as e:
        if "forward returned" in str(e):
            return {"status": "wrong_answer", "message": str(e)}
        return _candidate_raised(e)
    except BaseException as e:
        return _candidate_raised(e)
    _finish_findings(result, watch)
    return result


class _RoundOutputs:
    """One timed call of every timing round must give trial 0's answer, not only the first round's (which the
    consistency calls check): each later round's output joins the consistency outputs, which are written again
    once the rounds are over (the orchestrator reads them after the exit). The outputs already written are
    copied first, as they were then: a later round may overwrite a buffer that an earlier call returned."""

    def __init__(self, job, outputs, labels):
        self.outputs = [[t.detach().clone() for t in out] for out in outputs] \
            if int(job.get("timing_rounds", 1)) > 1 else outputs
        self.labels = list(labels)
        self.first_new = len(self.labels)

    def add(self, n, out):
        self.outputs.append([t.detach().clone() for t in flatten_outputs(out)])
        self.labels.append({"name": "timed_call_round_%d" % (n + 1), "ref": "trial", "index": 0})

    def publish(self, job, result):
        if len(self.labels) == self.first_new:
            return  # one round: the consistency outputs as written
        result["checks"] = self.labels
        if job.get("checks_path"):
            write_outputs(job["checks_path"], self.outputs)


def _check_snapshot(watch, snapshot):
    changed = snapshot.changed()
    if changed:
        watch.findings.setdefault("harness_patched", "the candidate replaced harness or torch functions: %s"
                                  % ", ".join(changed[:8]))


def _finish_findings(result, watch):
    blocks = getattr(watch, "blocks", None)
    if blocks is not None:
        for rule, message in blocks.findings().items():
            watch.findings.setdefault(rule, message)
    result["torch_ops"] = dict(watch.ops)
    result["findings"] = [{"rule": rule, "message": message, "line": 0} for rule, message in watch.findings.items()]


def _candidate_raised(e):
    return {"status": "runtime_error", "message": "the candidate raised %s: %s" % (type(e).__name__, e),
            "traceback": traceback.format_exc()[-4000:]}
