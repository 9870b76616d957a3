"""Client for the MooreEval HTTP service (docs/service.md, docs/openapi.yaml).

Standard library only. `Client` is synchronous (http.client, keep-alive), `AsyncClient`
uses asyncio streams; `make_verl_compute_score` and `TRLReward` are reward functions for
verl and TRL that treat infra_error as "retry", never as a zero reward.
"""
from .client import AsyncClient, Client, MooreEvalError, MooreEvalInfraError, Verdict
from .rewards import TRLReward, compute_score, make_verl_compute_score

__all__ = [
    "AsyncClient",
    "Client",
    "MooreEvalError",
    "MooreEvalInfraError",
    "TRLReward",
    "Verdict",
    "compute_score",
    "make_verl_compute_score",
]
