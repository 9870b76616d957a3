"""The client against the real server (conftest.py)."""
import asyncio

import pytest

from mooreeval_client import AsyncClient, Client, MooreEvalError, TRLReward, Verdict, make_verl_compute_score


def test_health_and_tasks(server_url):
    c = Client(server_url)
    assert c.health()["status"] == "ok"
    assert "elementwise/add" in c.tasks()


def test_evaluate_format_error_is_scored(server_url):
    v = Client(server_url).evaluate("elementwise/add", "no code here, just prose")
    assert isinstance(v, Verdict)
    assert v.verdict == "format_error"
    assert v.reward is not None and v.reward <= 0.2
    assert not v.infra_error


def test_evaluate_bytes_that_are_not_utf8(server_url):
    v = Client(server_url).evaluate("elementwise/add", b"class ModelNew:\xff\xfe")
    assert v.verdict == "format_error"
    assert "UTF-8" in v.message or "utf-8" in v.message.lower()


def test_real_candidate_goes_through_the_runner(server_url, fixtures_dir):
    v = Client(server_url).evaluate("elementwise/add", (fixtures_dir / "no_kernel.py").read_text(), deadline=300)
    assert v.verdict == "illegal", v.message
    assert v.reward is not None
    assert v.raw["seconds"]["inspect"] > 0


def test_unknown_task_is_a_404(server_url):
    with pytest.raises(MooreEvalError) as e:
        Client(server_url).evaluate("no/such_task", "x")
    assert e.value.status == 404 and e.value.code == "unknown_task"


def test_deadline_gives_client_side_infra_error_and_cancels(server_url, fixtures_dir):
    c = Client(server_url)
    # A candidate that builds and runs: seconds, far beyond the deadline.
    v = c.evaluate("elementwise/add", (fixtures_dir / "correct_cpu.py").read_text(), deadline=0.2)
    assert v.infra_error and v.stage == "client" and v.reward is None
    assert c.job(v.job_id)["state"] in ("cancelled", "done")


def test_batch_keeps_order_with_a_small_window(server_url):
    items = [("elementwise/add", ""), ("norm/softmax", "prose " * 10), ("matmul/matmul", b"\xff\xfe")] * 7
    verdicts = Client(server_url, max_batch=4).evaluate_batch(items, concurrency=5, timeout=120)
    assert len(verdicts) == len(items)
    assert [v.task for v in verdicts] == [t for t, _ in items]
    assert all(v.verdict == "format_error" for v in verdicts)


def test_async_batch_and_evaluate(server_url):
    async def go():
        c = AsyncClient(server_url)
        one = await c.evaluate("elementwise/add", "")
        many = await c.evaluate_batch([("elementwise/add", f"prose {i}") for i in range(30)], concurrency=8)
        return one, many

    one, many = asyncio.run(go())
    assert one.verdict == "format_error"
    assert len(many) == 30 and all(v.verdict == "format_error" for v in many)


def test_batch_timeout_returns_infra_verdicts(server_url, fixtures_dir):
    code = (fixtures_dir / "correct_cpu.py").read_text()  # builds and runs: seconds each
    verdicts = Client(server_url).evaluate_batch([("elementwise/add", code + f"\n# {i}") for i in range(3)],
                                                 concurrency=1, timeout=0.5)
    assert all(v.infra_error and v.stage == "client" for v in verdicts)


def test_verl_compute_score_and_trl_reward_on_the_real_server(server_url):
    score = make_verl_compute_score(server_url)("kernelbench", "prose only", "elementwise/add")
    assert isinstance(score, float) and score <= 0.2
    d = make_verl_compute_score(server_url, return_dict=True)("kb", "", "ignored", {"task": "elementwise/add"})
    assert d["verdict"] == "format_error" and isinstance(d["score"], float)
    reward = TRLReward(server_url)
    out = reward(prompts=["p1", "p2"], completions=[[{"role": "assistant", "content": "prose"}], ""],
                 task=["elementwise/add", "norm/softmax"])
    assert len(out) == 2 and all(isinstance(r, float) for r in out)
    assert reward.__name__ == "mooreeval"
