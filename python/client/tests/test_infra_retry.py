"""infra_error means "retry", never 0: the retry contract of the reward functions, against a
local stand-in HTTP server that answers infra_error a given number of times (the real
server cannot be made to fail on demand; its infra paths are tested in C++)."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mooreeval_client import MooreEvalInfraError, TRLReward, make_verl_compute_score


def _verdict(cls, reward):
    return {"verdict": cls, "reward": None if reward is None else {"total": reward}, "message": cls,
            "task": "elementwise/add", "stage": "run", "passed": 1, "trials": 1}


class _Flaky:
    def __init__(self, failures):
        self.failures, self.calls, self.jobs = failures, 0, {}
        handler = self._handler()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def next_verdict(self):
        self.calls += 1
        return _verdict("infra_error", None) if self.calls <= self.failures else _verdict("ok", 0.9)

    def _handler(self):
        flaky = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                if self.path == "/v1/evaluate":
                    self._send(200, {"job_id": "a" * 32, "state": "done", "verdict": flaky.next_verdict()})
                elif self.path == "/v1/batches":
                    ids = []
                    for _ in body["jobs"]:
                        jid = "%032x" % (len(flaky.jobs) + 1)
                        flaky.jobs[jid] = flaky.next_verdict()
                        ids.append(jid)
                    self._send(202, {"job_ids": ids})
                elif self.path == "/v1/jobs/lookup":
                    self._send(200, {"jobs": [{"job_id": j, "state": "done", "verdict": flaky.jobs[j]}
                                              for j in body["job_ids"]]})
                else:
                    self._send(404, {"error": {"code": "not_found", "message": self.path}})

        return H


@pytest.fixture
def flaky():
    servers = []

    def make(failures):
        s = _Flaky(failures)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.httpd.shutdown()


def test_verl_retries_infra_errors_then_scores(flaky):
    s = flaky(2)
    score = make_verl_compute_score(s.url, retries=3, backoff=0.01)("kb", "code", "elementwise/add")
    assert score == pytest.approx(0.9) and s.calls == 3


def test_verl_raises_or_returns_none_when_infra_persists(flaky):
    s = flaky(100)
    with pytest.raises(MooreEvalInfraError):
        make_verl_compute_score(s.url, retries=2, backoff=0.01)("kb", "code", "elementwise/add")
    assert s.calls == 3
    assert make_verl_compute_score(s.url, retries=1, backoff=0.01, on_infra="none")("kb", "c", "t") is None


def test_verl_raises_when_unreachable():
    with pytest.raises(MooreEvalInfraError):
        make_verl_compute_score("http://127.0.0.1:9", retries=1, backoff=0.01)("kb", "code", "elementwise/add")


def test_trl_retries_only_the_infra_ones_and_gives_none_when_it_persists(flaky):
    s = flaky(1)  # the first evaluation of the first batch fails once
    out = TRLReward(s.url, retries=2, backoff=0.01)(["p"] * 3, ["a", "b", "c"], task=["elementwise/add"] * 3)
    assert out == [pytest.approx(0.9)] * 3 and s.calls == 4
    s2 = flaky(100)
    assert TRLReward(s2.url, retries=1, backoff=0.01)(["p"], ["a"], task=["t"]) == [None]
