"""Benchmarking one forward call, the same way for reference and candidate.

CUDA: the L2 cache is flushed before every timed call; the timed region is closed by a
device-wide synchronize (so work the forward left on other streams is counted) before the
end event is recorded. CPU: wall clock around the call.

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


def summarize(times_ms):
    s = sorted(times_ms)
    return {"median_ms": _percentile(s, 0.5), "p10_ms": _percentile(s, 0.1), "p90_ms": _percentile(s, 0.9),
            "min_ms": s[0] if s else 0.0, "iters": len(s)}


def benchmark(fn, device, warmup, iters, flush_l2=True):
    import torch
    from . import devices
    if devices.is_gpu(device):  # cuda, or musa through torch.musa (devices.py)
        flush = None
        if flush_l2:
            l2 = devices.l2_cache_bytes(device)
            flush = torch.empty(max(2 * l2, 128 << 20), dtype=torch.uint8, device=device)
        for _ in range(warmup):
            fn()
        devices.synchronize(device)
        times = []
        for _ in range(iters):
            if flush is not None:
                flush.zero_()
            devices.synchronize(device)
            start = devices.timing_event(device)
            end = devices.timing_event(device)
            start.record()
            fn()
            devices.synchronize(device)  # device-wide: side streams included
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return summarize(times)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        t0 = _perf_counter()
        fn()
        times.append((_perf_counter() - t0) * 1e3)
    return summarize(times)


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
