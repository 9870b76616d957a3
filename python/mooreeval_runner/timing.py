"""Benchmarking one forward call, the same way for reference and candidate.

CUDA: device time of each call on the current stream, measured the way Triton's do_bench
does: the L2 cache is flushed before every timed call, events bracket the call, and the host
does not wait between calls (one device-wide synchronize after the last). The flush takes
longer on the device than the host needs to launch the next call, so the host stays ahead and
the events measure the call's kernels, not Python's or the launch path's jitter: waiting for the
device after every call made the per-call time mostly host overhead, and a tiny kernel's
speedup swung 0.3x-2x between evaluations (perf/reward_stability, issue #29). A call that
synchronizes, or launches late, still shows its idle device time. Kernels on other streams are
not timed here; the run-time profile makes them illegal (kernel_profile.py, side_stream).

The flush alone keeps the host ahead only while the host's side of one call (Python, wrappers,
the launch) is shorter than the flush: for a small kernel behind a slow call path the device
went idle between the start event and the kernel, and that gap was timed (a relu candidate's
median was 8.4-8.9 us in some evaluations and 10-11 us in others, its reference never). With
the head start (the default), the warm-up measures the host's time per call and each timed call
is preceded, after the flush, by a device-side wait of twice that (torch.cuda._sleep), so the
kernels are already queued when their start event is reached. The loop checks that it held: the
host must have issued it in less time than the device took to run it; if not (the host was slowed
during the loop), it runs again with twice the wait, at most twice more. The timing reports the
numbers (host_ms, head_start_ms, host_behind_retries).
CPU: wall clock around the call.

wall_clock_batch is the second, independent method used when a speedup looks too good:
one wall-clock interval, with device-wide syncs at both ends, over calls on distinct input
sets (each used once where memory allows), so caching keyed on inputs cannot help.

The clocks are bound at import, before any candidate code runs: patching time.perf_counter
later does not reach them (and the run-time checks report the patch)."""
from time import monotonic as _monotonic
from time import perf_counter as _perf_counter


def _percentile(sorted_values, q):
    if not sorted_values:
        return 0.0
    k = (len(sorted_values) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def median(values):
    """The median (the mean of the middle two for an even count)."""
    return _percentile(sorted(values), 0.5)


def summarize(times_ms):
    s = sorted(times_ms)
    return {"median_ms": _percentile(s, 0.5), "p10_ms": _percentile(s, 0.1), "p90_ms": _percentile(s, 0.9),
            "min_ms": s[0] if s else 0.0, "iters": len(s)}


def benchmark(fn, device, warmup, iters, flush_l2=True, head_start=True):
    from . import devices
    if devices.is_gpu(device):
        return _device_benchmark(fn, device, warmup, iters, flush_l2, head_start)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        t0 = _perf_counter()
        fn()
        times.append((_perf_counter() - t0) * 1e3)
    return summarize(times)


def _device_benchmark(fn, device, warmup, iters, flush_l2, head_start):
    """cuda, or musa through torch.musa (devices.py): per-call device times (module docstring)."""
    import torch
    from . import devices
    flush = None
    if flush_l2:
        l2 = devices.l2_cache_bytes(device)
        flush = torch.empty(max(2 * l2, 128 << 20), dtype=torch.uint8, device=device)
    host_s = _host_seconds_per_call(fn, device, warmup)
    wait_s = min(max(2 * host_s, _MIN_HEAD_START_S), _MAX_HEAD_START_S) if head_start else 0.0
    retries = 0
    while True:
        cycles = devices.sleep_cycles(device, wait_s) if wait_s > 0 else 0
        times, host_ahead = _timed_loop(fn, device, iters, flush, cycles)
        # The events measure the calls alone only while the host stayed ahead of the device; a host slowed
        # down during the loop (another process on its core) falls behind: again with twice the wait.
        if host_ahead or not cycles or retries == _HOST_BEHIND_RETRIES or wait_s >= _MAX_HEAD_START_S:
            break
        retries += 1
        wait_s = min(2 * wait_s, _MAX_HEAD_START_S)
    timing = summarize(times)
    timing["host_ms"] = host_s * 1e3
    timing["head_start_ms"] = wait_s * 1e3 if cycles else 0.0
    timing["host_behind_retries"] = retries
    return timing


def _timed_loop(fn, device, iters, flush, cycles):
    """One timed loop: [flush, device-side wait,] start event, fn, end event per call. Returns the per-call
    milliseconds and whether the host issued the loop in less time than the device took to run it (so it
    was ahead, and no idle device time fell between a start event and its call's kernels)."""
    from . import devices
    starts = [devices.timing_event(device) for _ in range(iters)]
    ends = [devices.timing_event(device) for _ in range(iters)]
    loop_start = devices.timing_event(device)
    loop_start.record()
    t0 = _perf_counter()
    for start, end in zip(starts, ends):
        if flush is not None:
            flush.zero_()
        if cycles:
            devices.device_sleep(device, cycles)  # the host queues fn's kernels meanwhile
        start.record()
        fn()
        end.record()
    host_ms = (_perf_counter() - t0) * 1e3
    devices.synchronize(device)  # device-wide; other streams' kernels are illegal (kernel_profile)
    device_ms = loop_start.elapsed_time(ends[-1]) if iters else 0.0
    return [start.elapsed_time(end) for start, end in zip(starts, ends)], host_ms < device_ms


_HOST_BEHIND_RETRIES = 2
_MIN_HEAD_START_S = 20e-6
_MAX_HEAD_START_S = 20e-3


def _host_seconds_per_call(fn, device, warmup):
    """The warm-up calls; returns the host's seconds per call over the second half of them, which
    the host issues without waiting for the device (only the launch path and Python are timed).
    A call that synchronizes counts its device time too: the head start is then longer than it
    needs to be, which costs device time but never changes what the events measure."""
    from . import devices
    first, rest = warmup // 2, warmup - warmup // 2
    for _ in range(first):
        fn()
    devices.synchronize(device)
    if rest == 0:  # --warmup-iters 0: no untimed call, the minimum head start
        return 0.0
    t0 = _perf_counter()
    for _ in range(rest):
        fn()
    host_s = (_perf_counter() - t0) / rest
    devices.synchronize(device)
    return host_s


def wall_clock_batch(fn, input_sets, device, calls):
    """Mean milliseconds per call of fn(inputs) over `calls` calls cycling through
    input_sets[1:], timed as one interval closed by a device-wide synchronize; input_sets[0]
    is only for the untimed warm-up call. Requires len(input_sets) >= 2."""
    from . import devices
    timed_sets = input_sets[1:]
    fn(input_sets[0])
    devices.synchronize(device)
    t0 = _monotonic()
    for i in range(calls):
        fn(timed_sets[i % len(timed_sets)])
    devices.synchronize(device)
    total_ms = (_monotonic() - t0) * 1e3
    return {"method": "wall_clock_batch", "mean_ms": total_ms / max(calls, 1), "calls": calls,
            "input_sets": len(timed_sets)}
