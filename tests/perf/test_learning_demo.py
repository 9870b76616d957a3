"""perf/learning_demo/run.py: what it reads from a train-rl metrics.jsonl and an eval-model summary.json,
against values computed by hand."""
import importlib.util
import json
import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
spec = importlib.util.spec_from_file_location("learning_demo", os.path.join(ROOT, "perf", "learning_demo", "run.py"))
demo = importlib.util.module_from_spec(spec)
spec.loader.exec_module(demo)


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def test_rl_numbers_by_hand(tmp_path):
    rows = [
        {"split": "train", "step": 1, "reward/mean": 0.2, "pass_rate/first_turn": 0.0, "groups/in_update": 4,
         "groups/bdr_recovered": 0, "mirrorpop/learned_share": 0.0, "mirrorpop/compute_saved": 0.0,
         "time/step_s": 10.0},
        {"split": "train", "step": 2, "reward/mean": 0.4, "pass_rate/first_turn": 0.25, "groups/in_update": 6,
         "groups/bdr_recovered": 1, "mirrorpop/learned_share": 0.1, "mirrorpop/compute_saved": 0.05,
         "time/step_s": 20.0},
        {"split": "eval", "step": 2, "reward/mean": 9.0},  # not a training row: left out
        {"split": "train", "step": 3, "reward/mean": 0.6, "pass_rate/first_turn": 0.5, "groups/in_update": 10,
         "groups/bdr_recovered": 2, "mirrorpop/learned_share": 0.2, "mirrorpop/compute_saved": 0.25,
         "time/step_s": 30.0},
        {"split": "train", "step": 4, "reward/mean": 0.8, "pass_rate/first_turn": 0.75, "groups/in_update": 0,
         "groups/bdr_recovered": 0, "mirrorpop/learned_share": 0.3, "mirrorpop/compute_saved": 0.3,
         "time/step_s": 40.0},
    ]
    write_jsonl(tmp_path / "metrics.jsonl", rows)
    n = demo.rl_numbers(str(tmp_path / "metrics.jsonl"))
    assert n["steps"] == 4
    assert n["reward_mean"] == pytest.approx(0.5)
    assert n["first_turn_pass_first_half"] == pytest.approx(0.125)  # steps 1-2
    assert n["first_turn_pass_second_half"] == pytest.approx(0.625)  # steps 3-4
    assert n["bdr_recovered_share"] == pytest.approx(3 / 20)  # recovered groups over groups in updates
    assert n["mirrorpop_learned_share"] == pytest.approx(0.15)
    assert n["mirrorpop_compute_saved"] == pytest.approx(0.15)
    assert n["seconds_per_step"] == pytest.approx(25.0)


def test_rl_numbers_of_an_empty_run(tmp_path):
    write_jsonl(tmp_path / "metrics.jsonl", [])
    assert demo.rl_numbers(str(tmp_path / "metrics.jsonl")) == {}


def test_eval_numbers_read_the_first_turn_overall_means(tmp_path):
    def stat(mean):
        return {"low": 0.0, "mean": mean, "high": 1.0}
    overall = {"pass_at_1": stat(0.25), "pass_at_k": stat(0.5), "avg_at_k": stat(0.3),
               "fast_p": {"0": stat(0.5), "1": stat(0.125)}, "verdicts": {"ok": 3, "compile_error": 5}}
    best = dict(overall, pass_at_1=stat(0.9))  # the best-turn view must not be read
    with open(tmp_path / "summary.json", "w") as f:
        json.dump({"views": {"turn1": {"overall": overall}, "best": {"overall": best}}}, f)
    n = demo.eval_numbers(str(tmp_path / "summary.json"))
    assert n == {"pass_at_1": 0.25, "pass_at_k": 0.5, "avg_at_k": 0.3, "fast_1": 0.125,
                 "verdicts": {"ok": 3, "compile_error": 5}}


def test_curve_evaluates_every_checkpoint_but_the_final_one_and_starts_at_the_sft_point(tmp_path, monkeypatch):
    qs = tmp_path / "quickstart"
    qs.mkdir()
    with open(qs / "summary.json", "w") as f:
        json.dump({"heldout_tasks": 4, "points": [
            {"stage": "before SFT", "pass_at_1": 0.0, "pass_at_k": 0.0, "avg_at_k": 0.0, "fast_1": 0.0},
            {"stage": "after SFT", "pass_at_1": 0.125, "pass_at_k": 0.25, "avg_at_k": 0.125, "fast_1": 0.125}]}, f)
    rl_dir = tmp_path / "rl-baseline"
    for d in ("checkpoint-4", "checkpoint-2", "checkpoint-6", "checkpoint-x", "tensorboard"):
        (rl_dir / d).mkdir(parents=True)
    assert demo.checkpoint_steps(str(rl_dir)) == [2, 4, 6]
    evaluated = []

    def fake_evaluate(args, model, tasks, eval_dir, log_name, out):
        evaluated.append((os.path.basename(model), os.path.basename(eval_dir), log_name))
        step = int(model.rsplit("-", 1)[1])
        return {"pass_at_1": step / 16, "pass_at_k": step / 8}, 1.5

    monkeypatch.setattr(demo, "evaluate", fake_evaluate)
    result = {"rl": {"steps": 6}, "heldout": {"pass_at_1": 0.5, "pass_at_k": 0.75}}
    points, seconds = demo.curve(None, str(tmp_path), str(qs), "baseline", str(rl_dir), result)
    assert evaluated == [("checkpoint-2", "eval-baseline-step2", "eval-baseline-step2.log"),
                         ("checkpoint-4", "eval-baseline-step4", "eval-baseline-step4.log")]
    assert [p["step"] for p in points] == [0, 2, 4, 6]
    assert [p["pass_at_1"] for p in points] == [0.125, 0.125, 0.25, 0.5]
    assert seconds == 3.0
    report = {"k": 4, "quickstart": {"heldout_tasks": 4}, "ablation": {"baseline": {"curve": points}, "all": {}}}
    lines = demo.curve_lines(report)
    assert lines[1] == "Held-out first turn over RL, `baseline` (16 samples per point):"
    assert lines[5:] == ["| 0 | 12.5% | 2 | 25.0% |", "| 2 | 12.5% | 2 | 25.0% |", "| 4 | 25.0% | 4 | 50.0% |",
                         "| 6 | 50.0% | 8 | 75.0% |"]
    assert demo.curve_lines({"k": 4, "quickstart": {}, "ablation": {"all": {}}}) == []
