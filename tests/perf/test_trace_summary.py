"""perf/common/trace_summary.py: the GPU busy time, kernel counts and per-kernel totals of a small Chrome trace,
against values computed by hand."""
import importlib.util
import json
import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
spec = importlib.util.spec_from_file_location("trace_summary", os.path.join(ROOT, "perf", "common", "trace_summary.py"))
ts = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ts)


def ev(cat, name, t, dur):
    return {"ph": "X", "cat": cat, "name": name, "ts": t, "dur": dur}


def test_union_of_overlapping_intervals():
    assert ts.union_us([(0, 10), (5, 15), (20, 25), (21, 22)]) == 20  # [0,15) and [20,25)
    assert ts.union_us([]) == 0


def test_summary_by_hand(tmp_path):
    events = [
        ev("cpu_op", "aten::mm", 0, 100),  # the stretch: 0..100 us
        ev("kernel", "gemm", 10, 20),
        ev("kernel", "gemm", 40, 20),
        ev("kernel", "rmsnorm", 50, 5),  # overlaps the second gemm on another stream
        ev("gpu_memcpy", "Memcpy HtoD", 70, 10),
        {"ph": "i", "cat": "kernel", "name": "instant", "ts": 1},  # not a complete event: left out
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    s = ts.summarize(ts.load_events(str(path)))
    assert s["wall_us"] == 100
    assert s["gpu_busy_us"] == 20 + 20 + 10  # the rmsnorm lies inside the second gemm
    assert s["gpu_busy_share"] == pytest.approx(0.5)
    assert s["kernels"] == 3 and s["kernel_us"] == 45
    assert s["copies"] == 1 and s["copy_us"] == 10
    assert [(r["name"], r["count"], r["us"]) for r in s["top"]] == [("gemm", 2, 40), ("rmsnorm", 1, 5)]
    assert s["top"][0]["share"] == pytest.approx(40 / 45)


def test_bad_trace_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert ts.main([str(bad)]) == 1
    assert "trace_summary" in capsys.readouterr().err
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"traceEvents": []}))
    assert ts.main([str(empty)]) == 1
    with pytest.raises(SystemExit):
        ts.main([str(empty), "--per", "0"])


def test_prints_per_step(tmp_path, capsys):
    path = tmp_path / "t.json"
    path.write_text(json.dumps([ev("kernel", "k", 0, 4000), ev("kernel", "k", 4000, 4000)]))
    assert ts.main([str(path), "--per", "2", "--json", str(tmp_path / "s.json")]) == 0
    out = capsys.readouterr().out
    assert "wall 4.000 ms per step" in out and "1.0 kernels per step" in out
    assert json.loads((tmp_path / "s.json").read_text())["kernels"] == 2
