"""timing.benchmark on an accelerator, with the device module faked: which calls are warm-up and which are
timed, the device-side head start before each timed call (issue #29: a slow call path must not leave the
device idle inside the timed interval), and --no-host-head-start / --warmup-iters 0."""
import pytest

from mooreeval_runner import devices, timing


class FakeEvent:
    def __init__(self, log):
        self.log = log

    def record(self):
        self.log.append("record")

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return 0.5  # milliseconds; for the calibration: 1M cycles in 0.5 ms = 2 GHz


class FakeModule:
    def __init__(self, log):
        self.log = log
        self.sleeps = []

    def _sleep(self, cycles):
        self.sleeps.append(cycles)
        self.log.append("sleep")


@pytest.fixture
def fake_device(monkeypatch):
    log = []
    mod = FakeModule(log)
    monkeypatch.setattr(devices, "is_gpu", lambda device: True)
    monkeypatch.setattr(devices, "module", lambda device: mod)
    monkeypatch.setattr(devices, "synchronize", lambda device: log.append("sync"))
    monkeypatch.setattr(devices, "timing_event", lambda device: FakeEvent(log))
    monkeypatch.setattr(devices, "_SLEEP_CYCLES_PER_S", {})
    monkeypatch.setattr(devices, "_SLEEP_FN", {})
    return log, mod


def run(log, **kwargs):
    calls = []

    def fn():
        calls.append(len(log))
        log.append("call")

    result = timing.benchmark(fn, "cuda:0", kwargs.pop("warmup", 4), kwargs.pop("iters", 3), False, **kwargs)
    return result, calls


def test_each_timed_call_waits_on_the_device_first(fake_device):
    log, mod = fake_device
    result, calls = run(log)
    assert len(calls) == 4 + 3
    # calibration: a short sleep, then 1M cycles between two events; then per timed call: sleep, start, call, end
    assert mod.sleeps[:2] == [1000, 1000000]
    warm_up, calibration, timed = log[:6], log[6:10], log[10:]
    assert warm_up == ["call", "call", "sync", "call", "call", "sync"]
    assert calibration == ["sleep", "record", "sleep", "record"]
    assert timed == ["record"] + ["sleep", "record", "call", "record"] * 3 + ["sync"]  # loop start, calls
    assert result["host_behind_retries"] == 0
    assert result["iters"] == 3 and result["median_ms"] == pytest.approx(0.5)
    assert result["host_ms"] >= 0
    # at least the 20 us minimum, at 2 GHz: 40,000 cycles per timed call
    assert result["head_start_ms"] >= 0.02
    assert all(c >= 40000 for c in mod.sleeps[2:])


def test_the_head_start_is_twice_the_hosts_time_per_call(fake_device, monkeypatch):
    log, mod = fake_device
    # two warm-up calls timed: 2 ms per call on the host; the loop issued in 0.1 ms (the device took 0.5)
    clock = iter([0.0, 0.004, 1.0, 1.0001])
    monkeypatch.setattr(timing, "_perf_counter", lambda: next(clock))
    result, _ = run(log)
    assert result["host_ms"] == pytest.approx(2.0)
    assert result["head_start_ms"] == pytest.approx(4.0)
    assert mod.sleeps[2:] == [8000000] * 3  # 4 ms at 2 GHz
    assert result["host_behind_retries"] == 0


def test_a_loop_the_host_fell_behind_in_runs_again_with_twice_the_wait(fake_device, monkeypatch):
    log, mod = fake_device
    # warm-up: 2 ms per call; every loop takes the host 10 ms while the device ran it in 0.5 ms (FakeEvent)
    clock = iter([0.0, 0.004] + [t for k in range(3) for t in (10.0 * k, 10.0 * k + 0.01)])
    monkeypatch.setattr(timing, "_perf_counter", lambda: next(clock))
    result, calls = run(log)
    assert result["host_behind_retries"] == 2  # then it stops: the last loop's times are kept
    assert result["head_start_ms"] == pytest.approx(16.0)
    assert mod.sleeps[2:] == [8000000] * 3 + [16000000] * 3 + [32000000] * 3
    assert len(calls) == 4 + 3 * 3


def test_without_a_head_start_a_host_behind_is_not_retried(fake_device, monkeypatch):
    log, _ = fake_device
    clock = iter([0.0, 0.004, 0.0, 0.01])
    monkeypatch.setattr(timing, "_perf_counter", lambda: next(clock))
    result, calls = run(log, head_start=False)
    assert result["host_behind_retries"] == 0 and len(calls) == 7


def test_no_head_start_times_the_calls_as_before(fake_device):
    log, mod = fake_device
    result, calls = run(log, head_start=False)
    assert len(calls) == 7
    assert mod.sleeps == []
    assert result["head_start_ms"] == 0.0


def test_no_warm_up_calls_when_warmup_is_zero(fake_device):
    log, mod = fake_device
    result, calls = run(log, warmup=0)
    assert len(calls) == 3
    assert result["host_ms"] == 0.0
    assert result["head_start_ms"] == pytest.approx(0.02)


def test_a_device_without_sleep_gets_no_head_start(fake_device, monkeypatch):
    log, _ = fake_device
    monkeypatch.setattr(devices, "module", lambda device: object())
    result, calls = run(log)
    assert len(calls) == 7
    assert result["head_start_ms"] == 0.0


def test_round_iters_split_the_benchmark_iters():
    from mooreeval_runner import execute
    assert execute.round_iters({"benchmark_iters": 50}) == 50  # one round by default
    assert execute.round_iters({"benchmark_iters": 50, "timing_rounds": 3}) == 17  # ceil(50 / 3)
    assert execute.round_iters({"benchmark_iters": 2, "timing_rounds": 5}) == 1  # at least one call


def test_merge_rounds_takes_the_median_of_the_rounds_medians():
    from mooreeval_runner import execute
    rounds = [{"median_ms": 0.19, "p10_ms": 0.18, "p90_ms": 0.25, "min_ms": 0.17, "iters": 17},
              {"median_ms": 0.14, "p10_ms": 0.13, "p90_ms": 0.16, "min_ms": 0.12, "iters": 17},
              {"median_ms": 0.15, "p10_ms": 0.14, "p90_ms": 0.30, "min_ms": 0.13, "iters": 17}]
    merged = execute.merge_rounds(rounds)
    assert merged["median_ms"] == 0.15  # sorted 0.14, 0.15, 0.19: the slow first round does not move it
    assert (merged["p10_ms"], merged["p90_ms"], merged["min_ms"], merged["iters"]) == (0.13, 0.30, 0.12, 51)
    assert merged["rounds_median_ms"] == [0.19, 0.14, 0.15]
    assert execute.merge_rounds(rounds[:2])["median_ms"] == pytest.approx(0.165)  # even: mean of the two


def test_the_checked_timed_call_skips_the_warm_up_calls(monkeypatch):
    from mooreeval_runner import execute
    monkeypatch.setattr(execute, "_urandom", lambda n: bytes(n))  # 0: every timed call replaces the kept one
    kept = execute._ReservoirOfOne(skip=2)
    for value in ["warm-1", "warm-2", "t1", "t2", "t3"]:
        kept.offer(value)
    assert kept.value == "t3"
    monkeypatch.setattr(execute, "_urandom", lambda n: (1).to_bytes(n, "little"))  # 1 % n == 0 only for n = 1
    kept = execute._ReservoirOfOne(skip=2)
    for value in ["warm-1", "warm-2", "t1", "t2", "t3"]:
        kept.offer(value)
    assert kept.value == "t1"


def test_each_timed_call_is_checked_equally_often():
    from mooreeval_runner import execute
    counts = {}
    for _ in range(6000):
        kept = execute._ReservoirOfOne(skip=1)
        for value in range(7):  # 0 is the warm-up call
            kept.offer(value)
        counts[kept.value] = counts.get(kept.value, 0) + 1
    assert sorted(counts) == [1, 2, 3, 4, 5, 6]
    assert all(800 < n < 1200 for n in counts.values()), counts  # 1000 each; outside: p < 1e-9
