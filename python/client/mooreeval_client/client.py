"""Synchronous and asyncio clients of the MooreEval service."""
from __future__ import annotations

import asyncio
import base64
import http.client
import json
import os
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

Candidate = Union[str, bytes]


class MooreEvalError(RuntimeError):
    """The service rejected a request (4xx) or could not be reached."""

    def __init__(self, message: str, status: int = 0, code: str = "", body: Any = None):
        super().__init__(message)
        self.status, self.code, self.body = status, code, body


class MooreEvalInfraError(MooreEvalError):
    """An evaluation ended in infra_error (after retries): our failure, not the candidate's."""


@dataclass
class Verdict:
    """One verdict (schema docs/verdict.schema.json). `reward` is None for infra_error."""

    verdict: str
    reward: Optional[float]
    message: str
    task: str
    job_id: str = ""
    stage: str = ""
    compiled: bool = False
    passed: int = 0
    trials: int = 0
    speedup: Optional[float] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    @property
    def infra_error(self) -> bool:
        return self.verdict == "infra_error"

    @classmethod
    def from_job(cls, job: Dict[str, Any]) -> "Verdict":
        v = job.get("verdict") or {}
        reward = v.get("reward")
        return cls(
            verdict=v.get("verdict", "infra_error"),
            reward=None if reward is None else float(reward.get("total")),
            message=v.get("message", ""),
            task=v.get("task", job.get("task", "")),
            job_id=job.get("job_id", ""),
            stage=v.get("stage", ""),
            compiled=bool(v.get("compiled", False)),
            passed=int(v.get("passed", 0)),
            trials=int(v.get("trials", 0)),
            speedup=v.get("speedup"),
            raw=v,
        )

    @classmethod
    def client_side_infra(cls, task: str, message: str, job_id: str = "") -> "Verdict":
        """A verdict for a job whose result never arrived (timeout, cancelled, unreachable)."""
        return cls(verdict="infra_error", reward=None, message=message, task=task, job_id=job_id, stage="client")


def _job_body(task: str, candidate: Candidate, label: str = "") -> Dict[str, Any]:
    body: Dict[str, Any] = {"task": task}
    if isinstance(candidate, bytes):
        try:
            body["candidate"] = candidate.decode("utf-8")
        except UnicodeDecodeError:
            body["candidate_b64"] = base64.b64encode(candidate).decode("ascii")
    else:
        body["candidate"] = candidate
    if label:
        body["label"] = label
    return body


def _raise_for(status: int, payload: Any) -> None:
    if 200 <= status < 300:
        return
    err = payload.get("error", {}) if isinstance(payload, dict) else {}
    raise MooreEvalError(
        f"HTTP {status}: {err.get('code', '?')}: {err.get('message', payload)}",
        status=status,
        code=err.get("code", ""),
        body=payload,
    )


def new_idempotency_key() -> str:
    """A fresh Idempotency-Key: the server returns the first request's jobs for a repeat."""
    return uuid.uuid4().hex


# Transport failures and these statuses are retried, and only for requests that are safe to
# repeat: reads, cancels, and submissions that carry an Idempotency-Key.
_RETRY_STATUSES = (429, 503)


def _retry_delay(attempt: int, backoff: float, payload_headers: Optional[Dict[str, str]]) -> float:
    after = (payload_headers or {}).get("retry-after")
    if after:
        try:
            return min(60.0, max(0.0, float(after)))
        except ValueError:
            pass
    return backoff * (2 ** attempt)


def _headers(token: Optional[str], has_body: bool, key: Optional[str]) -> Dict[str, str]:
    h: Dict[str, str] = {}
    if has_body:
        h["Content-Type"] = "application/json"
    if token:
        h["Authorization"] = f"Bearer {token}"
    if key:
        h["Idempotency-Key"] = key
    return h


def _split_url(url: str) -> Tuple[str, int]:
    u = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
    if u.scheme != "http":
        raise ValueError(f"only http:// URLs are supported, got {url!r}")
    return u.hostname or "127.0.0.1", u.port or 80


class _BatchState:
    """Shared bookkeeping of a windowed batch: submit ≤ concurrency jobs at a time."""

    def __init__(self, items: Sequence[Tuple[str, Candidate]], concurrency: int, timeout: float):
        if concurrency < 1:
            raise ValueError("concurrency must be ≥ 1")
        self.items = list(items)
        self.concurrency = concurrency
        self.deadline = time.monotonic() + timeout
        self.results: List[Optional[Verdict]] = [None] * len(self.items)
        self.next_index = 0
        self.in_flight: Dict[str, int] = {}  # job id -> item index

    def to_submit(self, max_batch: int) -> List[int]:
        n = min(self.concurrency - len(self.in_flight), len(self.items) - self.next_index, max_batch)
        idx = list(range(self.next_index, self.next_index + max(0, n)))
        self.next_index += len(idx)
        return idx

    def done(self) -> bool:
        return self.next_index == len(self.items) and not self.in_flight

    def to_submit_pending(self) -> bool:
        """True when there is room and work to submit (then the loop does not sleep)."""
        return len(self.in_flight) < self.concurrency and self.next_index < len(self.items)

    def absorb(self, jobs: List[Dict[str, Any]]) -> None:
        for job in jobs:
            i = self.in_flight.get(job.get("job_id", ""))
            if i is None:
                continue
            state = job.get("state")
            if state == "done":
                self.results[i] = Verdict.from_job(job)
            elif state in ("cancelled", "unknown"):
                self.results[i] = Verdict.client_side_infra(self.items[i][0], f"job {state}", job["job_id"])
            else:
                continue
            del self.in_flight[job["job_id"]]

    def expire(self) -> List[str]:
        """Marks everything unfinished as client-side timeouts; returns job ids to cancel."""
        ids = list(self.in_flight)
        for job_id, i in self.in_flight.items():
            self.results[i] = Verdict.client_side_infra(self.items[i][0], "client timeout; job cancelled", job_id)
        for i in range(self.next_index, len(self.items)):
            self.results[i] = Verdict.client_side_infra(self.items[i][0], "client timeout; never submitted")
        self.in_flight.clear()
        self.next_index = len(self.items)
        return ids


class Client:
    """Synchronous client. Thread-safe: one keep-alive connection per thread.

    Args:
      url: the service, e.g. "http://127.0.0.1:8080".
      token: API token (docs/security.md); default $MOOREEVAL_TOKEN.
      timeout: socket timeout of one HTTP request, seconds.
      max_batch: jobs per POST /v1/batches (≤ the server's --max-batch).
      retries: repeats of a request that failed in transport or got 429/503 -- only for
        requests safe to repeat: reads, cancels and submissions, which always carry an
        Idempotency-Key (the server answers a repeat with the first request's jobs).
      backoff: first delay between repeats, seconds (doubling; a Retry-After wins).
    """

    def __init__(self, url: str = "http://127.0.0.1:8080", timeout: float = 60.0, max_batch: int = 256,
                 token: Optional[str] = None, retries: int = 3, backoff: float = 0.5):
        self.url = url
        self.host, self.port = _split_url(url)
        self.timeout = timeout
        self.max_batch = max_batch
        self.token = token if token is not None else os.environ.get("MOOREEVAL_TOKEN")
        self.retries, self.backoff = retries, backoff
        self._local = threading.local()

    # -- transport ---------------------------------------------------------------------
    def _once(self, method: str, path: str, data: Optional[bytes], headers: Dict[str, str],
              timeout: float) -> Tuple[int, bytes, Dict[str, str]]:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
            self._local.conn = conn
        conn.timeout = timeout
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        except BaseException:
            conn.close()
            self._local.conn = None
            raise
        if resp.getheader("Connection", "").lower() == "close":
            conn.close()
            self._local.conn = None
        return resp.status, raw, {k.lower(): v for k, v in resp.getheaders()}

    def _request(self, method: str, path: str, body: Any = None, timeout: Optional[float] = None,
                 key: Optional[str] = None, safe: bool = False) -> Tuple[int, Any]:
        """One request; repeated (up to `retries`) only when `safe` or `key` is given."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = _headers(self.token, data is not None, key)
        repeatable = safe or key is not None
        attempt = 0
        while True:
            try:
                status, raw, resp_headers = self._once(method, path, data, headers, timeout or self.timeout)
            except (ConnectionError, http.client.HTTPException, OSError) as e:
                if not repeatable or attempt >= self.retries:
                    raise MooreEvalError(f"cannot reach MooreEval at {self.url}: {e}") from e
                time.sleep(_retry_delay(attempt, self.backoff, None))
                attempt += 1
                continue
            if status in _RETRY_STATUSES and repeatable and attempt < self.retries:
                time.sleep(_retry_delay(attempt, self.backoff, resp_headers))
                attempt += 1
                continue
            break
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = raw.decode("utf-8", "replace")
        return status, payload

    def _call(self, method: str, path: str, body: Any = None, timeout: Optional[float] = None,
              key: Optional[str] = None, safe: bool = False) -> Any:
        status, payload = self._request(method, path, body, timeout, key=key, safe=safe)
        _raise_for(status, payload)
        return payload

    # -- API ---------------------------------------------------------------------------
    def health(self) -> Dict[str, Any]:
        return self._call("GET", "/healthz", safe=True)

    def tasks(self) -> List[str]:
        return [t["id"] for t in self._call("GET", "/v1/tasks", safe=True)["tasks"]]

    def submit(self, task: str, candidate: Candidate, label: str = "", idempotency_key: Optional[str] = None) -> str:
        key = idempotency_key or new_idempotency_key()
        return self._call("POST", "/v1/jobs", _job_body(task, candidate, label), key=key)["job_id"]

    def submit_batch(self, items: Sequence[Tuple[str, Candidate]], idempotency_key: Optional[str] = None) -> List[str]:
        """Submits all items in one request. A timed-out request is repeated with the same
        Idempotency-Key, so the service creates the jobs once."""
        jobs = [_job_body(t, c) for t, c in items]
        key = idempotency_key or new_idempotency_key()
        return self._call("POST", "/v1/batches", {"jobs": jobs}, key=key)["job_ids"]

    def job(self, job_id: str) -> Dict[str, Any]:
        return self._call("GET", f"/v1/jobs/{job_id}", safe=True)

    def lookup(self, job_ids: Sequence[str]) -> List[Dict[str, Any]]:
        return self._call("POST", "/v1/jobs/lookup", {"job_ids": list(job_ids)}, safe=True)["jobs"]

    def cancel(self, job_id: str) -> bool:
        """True when the job is (now) cancelled; False when it had already finished."""
        status, payload = self._request("POST", f"/v1/jobs/{job_id}/cancel", safe=True)
        if status == 409:
            return False
        _raise_for(status, payload)
        return True

    def evaluate(self, task: str, candidate: Candidate, deadline: float = 600.0, cancel_on_deadline: bool = True,
                 idempotency_key: Optional[str] = None) -> Verdict:
        """Evaluates one candidate synchronously. A deadline that passes gives an
        infra_error Verdict (stage "client") and, by default, cancels the job. A repeat
        after a lost connection carries the same Idempotency-Key: it waits for the same job."""
        body = _job_body(task, candidate)
        body["deadline_seconds"] = deadline
        body["cancel_on_deadline"] = cancel_on_deadline
        key = idempotency_key or new_idempotency_key()
        status, payload = self._request("POST", "/v1/evaluate", body, timeout=deadline + 30, key=key)
        if status == 504:
            return Verdict.client_side_infra(task, payload["error"]["message"], payload.get("job_id", ""))
        _raise_for(status, payload)
        if payload.get("state") != "done":
            return Verdict.client_side_infra(task, f"job {payload.get('state')}", payload.get("job_id", ""))
        return Verdict.from_job(payload)

    def evaluate_batch(
        self,
        items: Sequence[Tuple[str, Candidate]],
        concurrency: int = 64,
        timeout: float = 1800.0,
        poll_interval: float = 0.2,
    ) -> List[Verdict]:
        """Evaluates (task, candidate) pairs with at most `concurrency` jobs on the
        service at once; returns verdicts in input order. Jobs unfinished after `timeout`
        seconds are cancelled and returned as infra_error verdicts (stage "client")."""
        st = _BatchState(items, concurrency, timeout)
        while not st.done():
            if time.monotonic() > st.deadline:
                for job_id in st.expire():
                    try:
                        self.cancel(job_id)
                    except MooreEvalError:
                        pass
                break
            idx = st.to_submit(self.max_batch)
            if idx:
                ids = self.submit_batch([st.items[i] for i in idx])
                st.in_flight.update(zip(ids, idx))
            if st.in_flight:
                ids = list(st.in_flight)
                for k in range(0, len(ids), self.max_batch):
                    st.absorb(self.lookup(ids[k : k + self.max_batch]))
                if st.in_flight and not st.to_submit_pending():
                    time.sleep(poll_interval)
        return [v for v in st.results]  # type: ignore[misc]


class AsyncClient:
    """asyncio client (one HTTP/1.1 connection per request, standard library only)."""

    def __init__(self, url: str = "http://127.0.0.1:8080", timeout: float = 60.0, max_batch: int = 256,
                 token: Optional[str] = None, retries: int = 3, backoff: float = 0.5):
        self.url = url
        self.host, self.port = _split_url(url)
        self.timeout = timeout
        self.max_batch = max_batch
        self.token = token if token is not None else os.environ.get("MOOREEVAL_TOKEN")
        self.retries, self.backoff = retries, backoff

    async def _request(self, method: str, path: str, body: Any = None, timeout: Optional[float] = None,
                       key: Optional[str] = None, safe: bool = False) -> Tuple[int, Any]:
        """As Client._request: repeated only when `safe` or `key` is given."""
        attempt = 0
        while True:
            try:
                status, payload, retry_after = await self._once(method, path, body, timeout, key)
            except MooreEvalError:
                if not (safe or key) or attempt >= self.retries:
                    raise
                await asyncio.sleep(_retry_delay(attempt, self.backoff, None))
                attempt += 1
                continue
            if status in _RETRY_STATUSES and (safe or key) and attempt < self.retries:
                await asyncio.sleep(_retry_delay(attempt, self.backoff, {"retry-after": retry_after}))
                attempt += 1
                continue
            return status, payload

    async def _once(self, method: str, path: str, body: Any, timeout: Optional[float],
                    key: Optional[str]) -> Tuple[int, Any, str]:
        data = b"" if body is None else json.dumps(body).encode("utf-8")
        extra = "".join(f"{k}: {v}\r\n" for k, v in _headers(self.token, body is not None, key).items())
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nConnection: close\r\n"
            f"{extra}Content-Length: {len(data)}\r\n\r\n"
        ).encode("ascii")

        async def roundtrip() -> Tuple[int, bytes, str]:
            reader, writer = await asyncio.open_connection(self.host, self.port)
            try:
                writer.write(head + data)
                await writer.drain()
                status_line = await reader.readline()
                parts = status_line.split(b" ", 2)
                if len(parts) < 2:
                    raise MooreEvalError(f"bad HTTP status line from {self.url}: {status_line!r}")
                status = int(parts[1])
                length, retry_after = None, ""
                while True:
                    line = await reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = line.decode("latin-1").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                    elif name.strip().lower() == "retry-after":
                        retry_after = value.strip()
                raw = await (reader.readexactly(length) if length is not None else reader.read())
                return status, raw, retry_after
            finally:
                writer.close()
                try:
                    await writer.wait_closed()
                except (ConnectionError, OSError):
                    pass

        try:
            status, raw, retry_after = await asyncio.wait_for(roundtrip(), timeout or self.timeout)
        except (ConnectionError, OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as e:
            raise MooreEvalError(f"cannot reach MooreEval at {self.url}: {e!r}") from e
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = raw.decode("utf-8", "replace")
        return status, payload, retry_after

    async def _call(self, method: str, path: str, body: Any = None, timeout: Optional[float] = None,
                    key: Optional[str] = None, safe: bool = False) -> Any:
        status, payload = await self._request(method, path, body, timeout, key=key, safe=safe)
        _raise_for(status, payload)
        return payload

    async def health(self) -> Dict[str, Any]:
        return await self._call("GET", "/healthz", safe=True)

    async def cancel(self, job_id: str) -> bool:
        status, payload = await self._request("POST", f"/v1/jobs/{job_id}/cancel", safe=True)
        if status == 409:
            return False
        _raise_for(status, payload)
        return True

    async def evaluate(self, task: str, candidate: Candidate, deadline: float = 600.0, cancel_on_deadline: bool = True) -> Verdict:
        body = _job_body(task, candidate)
        body["deadline_seconds"] = deadline
        body["cancel_on_deadline"] = cancel_on_deadline
        status, payload = await self._request("POST", "/v1/evaluate", body, timeout=deadline + 30,
                                              key=new_idempotency_key())
        if status == 504:
            return Verdict.client_side_infra(task, payload["error"]["message"], payload.get("job_id", ""))
        _raise_for(status, payload)
        if payload.get("state") != "done":
            return Verdict.client_side_infra(task, f"job {payload.get('state')}", payload.get("job_id", ""))
        return Verdict.from_job(payload)

    async def evaluate_batch(
        self,
        items: Sequence[Tuple[str, Candidate]],
        concurrency: int = 64,
        timeout: float = 1800.0,
        poll_interval: float = 0.2,
    ) -> List[Verdict]:
        """As Client.evaluate_batch, without blocking the event loop."""
        st = _BatchState(items, concurrency, timeout)
        while not st.done():
            if time.monotonic() > st.deadline:
                await asyncio.gather(*(self.cancel(j) for j in st.expire()), return_exceptions=True)
                break
            idx = st.to_submit(self.max_batch)
            if idx:
                jobs = [_job_body(*st.items[i]) for i in idx]
                ids = (await self._call("POST", "/v1/batches", {"jobs": jobs}, key=new_idempotency_key()))["job_ids"]
                st.in_flight.update(zip(ids, idx))
            if st.in_flight:
                ids = list(st.in_flight)
                chunks = [ids[k : k + self.max_batch] for k in range(0, len(ids), self.max_batch)]
                replies = await asyncio.gather(
                    *(self._call("POST", "/v1/jobs/lookup", {"job_ids": c}, safe=True) for c in chunks))
                for r in replies:
                    st.absorb(r["jobs"])
                if st.in_flight and not st.to_submit_pending():
                    await asyncio.sleep(poll_interval)
        return [v for v in st.results]  # type: ignore[misc]
