"""Reward functions for RL frameworks on top of the MooreEval service.

Contract (both): a scored verdict gives its reward (verdict.reward, the server's scheme);
an infra_error verdict -- or a service that cannot be reached -- is NOT a zero reward:
the evaluation is retried with exponential backoff (`retries` times, delays
`backoff`, 2·backoff, ...). If it still fails:
  * verl `compute_score` raises MooreEvalInfraError (on_infra="raise", the default) so the
    step fails loudly instead of training on a fake 0; with on_infra="none" it returns
    None and the caller must drop the sample.
  * TRL `TRLReward` returns None for that completion: TRL (≥ 0.16) treats None as "no
    reward from this function" (NaN, ignored in the weighted sum), never as 0.
Format errors, compile errors, wrong answers etc. are candidate failures and keep their
(scheme-defined) reward.
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from .client import Client, MooreEvalError, MooreEvalInfraError, Verdict, new_idempotency_key


def _with_retries(run: Callable[[], Verdict], retries: int, backoff: float, sleep=time.sleep) -> Verdict:
    last: Optional[Verdict] = None
    error: Optional[Exception] = None
    for attempt in range(retries + 1):
        if attempt:
            sleep(backoff * (2 ** (attempt - 1)))
        try:
            last = run()
            error = None
        except MooreEvalError as e:
            if e.status and 400 <= e.status < 500:
                raise  # our request is wrong (unknown task, too large): retrying cannot help
            error, last = e, None
            continue
        if not last.infra_error:
            return last
    if error is not None:
        raise MooreEvalInfraError(f"MooreEval unreachable after {retries + 1} attempts: {error}") from error
    assert last is not None
    raise MooreEvalInfraError(f"infra_error after {retries + 1} attempts: {last.message}", body=last.raw)


def make_verl_compute_score(
    url: Optional[str] = None,
    deadline: float = 600.0,
    retries: int = 3,
    backoff: float = 1.0,
    on_infra: str = "raise",
    return_dict: bool = False,
):
    """A verl custom reward function:
    compute_score(data_source, solution_str, ground_truth, extra_info=None) -> float | dict | None.

    `ground_truth` is the task id (e.g. "elementwise/add"); extra_info["task"] overrides it.
    With return_dict, returns {"score", "verdict", "pass_fraction", "speedup"} (verl logs
    the extra keys)."""
    if on_infra not in ("raise", "none"):
        raise ValueError("on_infra must be 'raise' or 'none'")
    client = Client(url or os.environ.get("MOOREEVAL_URL", "http://127.0.0.1:8080"), timeout=deadline + 30)

    def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Optional[Dict] = None):
        task = (extra_info or {}).get("task") or ground_truth
        # One key while the service cannot be reached (a repeat must not evaluate twice);
        # a fresh one after an infra_error verdict (the service answered: evaluate anew).
        key = [new_idempotency_key()]

        def attempt() -> Verdict:
            v = client.evaluate(str(task), solution_str, deadline=deadline, idempotency_key=key[0])
            if v.infra_error:
                key[0] = new_idempotency_key()
            return v

        try:
            v = _with_retries(attempt, retries, backoff)
        except MooreEvalInfraError:
            if on_infra == "none":
                return None
            raise
        score = float(v.reward if v.reward is not None else 0.0)
        if return_dict:
            return {
                "score": score,
                "verdict": v.verdict,
                "pass_fraction": (v.passed / v.trials) if v.trials else 0.0,
                "speedup": v.speedup if v.speedup is not None else 0.0,
            }
        return score

    return compute_score


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Optional[Dict] = None):
    """verl entry point with defaults (service at $MOOREEVAL_URL); see make_verl_compute_score."""
    global _default_compute_score
    if _default_compute_score is None:
        _default_compute_score = make_verl_compute_score()
    return _default_compute_score(data_source, solution_str, ground_truth, extra_info)


_default_compute_score = None


class TRLReward:
    """A TRL `reward_funcs` entry: reward(prompts, completions, **columns) -> list[float | None].

    The task of each completion comes from the dataset column `task_column` (TRL passes
    every column as a keyword argument). Completions may be strings or conversational
    ([{"role": "assistant", "content": ...}]). Evaluations run as one windowed batch."""

    def __init__(
        self,
        url: Optional[str] = None,
        task_column: str = "task",
        concurrency: int = 64,
        timeout: float = 1800.0,
        retries: int = 3,
        backoff: float = 1.0,
        sleep=time.sleep,
    ):
        self.client = Client(url or os.environ.get("MOOREEVAL_URL", "http://127.0.0.1:8080"))
        self.task_column = task_column
        self.concurrency, self.timeout = concurrency, timeout
        self.retries, self.backoff, self._sleep = retries, backoff, sleep
        self.__name__ = "mooreeval"  # TRL logs rewards under the function's __name__

    @staticmethod
    def _text(completion: Any) -> str:
        if isinstance(completion, str):
            return completion
        if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
            return str(completion[-1].get("content", ""))
        return str(completion)

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> List[Optional[float]]:
        tasks = kwargs.get(self.task_column)
        if tasks is None:
            raise ValueError(f"TRLReward needs the dataset column '{self.task_column}' (the task id per prompt)")
        items = [(str(t), self._text(c)) for t, c in zip(tasks, completions)]
        rewards: List[Optional[float]] = [None] * len(items)
        todo = list(range(len(items)))
        for attempt in range(self.retries + 1):
            if attempt:
                self._sleep(self.backoff * (2 ** (attempt - 1)))
            try:
                verdicts = self.client.evaluate_batch([items[i] for i in todo], self.concurrency, self.timeout)
            except MooreEvalError as e:
                if e.status and 400 <= e.status < 500:
                    raise
                continue  # unreachable: retry all of `todo`
            retry = []
            for i, v in zip(todo, verdicts):
                if v.infra_error:
                    retry.append(i)
                else:
                    rewards[i] = float(v.reward if v.reward is not None else 0.0)
            todo = retry
            if not todo:
                break
        return rewards  # None where infra_error persisted
