"""CUDA only: which kernels one forward call launched, and on which streams.

torch.profiler (CUPTI) records the call; the exported trace lists every kernel with its
demangled name and stream. A calibration kernel launched first on the current stream tells
which stream id is "the current stream" in the trace. The legality findings:
- side_stream: a kernel ran on another stream (work the caller's stream does not order);
- kernel_not_launched: none of the kernels is one the candidate's sources define (a decoy).
If the profiler does not work on this machine, the result says so and nothing is found."""
import json
import os
import re


def _kernel_events(trace_path):
    with open(trace_path, encoding="utf-8") as f:
        trace = json.load(f)
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    kernels = [e for e in events if isinstance(e, dict) and e.get("cat") == "kernel"]
    kernels.sort(key=lambda e: e.get("ts", 0))
    return [(e.get("name", ""), (e.get("args") or {}).get("stream"), float(e.get("dur", 0) or 0)) for e in kernels]


# Kernels that move or fill memory (allocation zeroing, .contiguous() copies, dtype casts): they compute
# nothing of the task, so they count on neither side of the own-kernel share.
_DATA_MOVEMENT = re.compile(r"fill|memset|memcpy|copy_kernel|CatArrayBatchedCopy|elementwise_kernel.*copy",
                            re.IGNORECASE)


def own_kernel_share(launched, kernel_names):
    """(share of device time in the candidate's own kernels among the compute kernels, own µs, other µs,
    the largest foreign kernels). Data-movement kernels count on neither side."""
    own = other = 0.0
    foreign = {}
    for name, _, dur in launched:
        if _defined_by_candidate(name, kernel_names):
            own += dur
        elif not _DATA_MOVEMENT.search(name):
            other += dur
            foreign[name[:80]] = foreign.get(name[:80], 0.0) + dur
    total = own + other
    top = sorted(foreign.items(), key=lambda kv: -kv[1])[:3]
    return (own / total if total > 0 else 1.0), own, other, top


def _defined_by_candidate(kernel_name, names):
    return any(re.search(r"(^|[^\w])%s([^\w]|$)" % re.escape(n), kernel_name) for n in names)


def profile_call(call, device, work_dir, kernel_names, min_own_share=0.0):
    """Runs `call()` under the profiler. Returns (output, report): report has "kernels"
    [(name, stream)], "own_kernel_share", "findings" {rule: message} and, when profiling failed,
    "error". `min_own_share`: below this share of compute-kernel time in the candidate's own kernels
    the call is `foreign_kernel_time` (a token kernel of its own beside a library kernel)."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    report = {"kernels": [], "findings": {}}
    trace_path = os.path.join(work_dir, "kernel_trace.json")
    try:
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            marker = torch.empty(256, device=device)
            marker.fill_(1.0)  # calibration kernel on the current stream
            out = call()
            torch.cuda.synchronize()
        prof.export_chrome_trace(trace_path)
        kernels = _kernel_events(trace_path)
    except Exception as e:  # the profiler is unusable here: no finding, just a note
        report["error"] = "profiler failed: %r" % (e,)
        return call(), report
    finally:
        if os.path.exists(trace_path):
            os.remove(trace_path)
    if not kernels:
        report["error"] = "the profiler recorded no kernels, not even the calibration kernel"
        return out, report
    current_stream = kernels[0][1]
    launched = kernels[1:]
    report["kernels"] = [[name[:200], stream, dur] for name, stream, dur in launched[:64]]
    side = sorted({"%s (stream %s)" % (name[:80], stream) for name, stream, _ in launched if stream != current_stream})
    if side:
        report["findings"]["side_stream"] = ("forward ran kernels on streams other than the current one "
                                             "(stream %s): %s" % (current_stream, "; ".join(side[:4])))
    share, own_us, other_us, top = own_kernel_share(launched, kernel_names)
    report["own_kernel_share"] = round(share, 4)
    if kernel_names and own_us > 0 and share < min_own_share:
        report["findings"]["foreign_kernel_time"] = (
            "the candidate's own kernels took %.0f%% of the compute-kernel time (%.1f of %.1f us; the "
            "minimum is %.0f%%); the rest ran in: %s" % (
                100 * share, own_us, own_us + other_us, 100 * min_own_share,
                "; ".join("%s (%.1f us)" % (n, d) for n, d in top)))
    if kernel_names and not any(_defined_by_candidate(name, kernel_names) for name, _, _ in launched):
        ran = sorted({name[:80] for name, _, _ in launched})
        report["findings"]["kernel_not_launched"] = (
            "none of the candidate's kernels (%s) ran during forward; kernels that ran: %s"
            % (", ".join(kernel_names[:8]), "; ".join(ran[:6]) or "none"))
    return out, report


def warm_up():
    """One empty profiling session: the first one in a process loads and initialises CUPTI
    (a fixed cost), which then happens before the run slot rather than inside it. Launches
    nothing on the GPU. A profiler that fails here fails again in profile_call, which says so."""
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            pass
    except Exception:  # noqa: BLE001
        pass
