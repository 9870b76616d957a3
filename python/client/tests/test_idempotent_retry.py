"""A submission whose reply comes too late is repeated with its Idempotency-Key and never
creates work twice; a request without a key is never repeated. The real server sits behind
a proxy that holds the first reply past the client's timeout (the server has already
created the jobs by then)."""
import re
import socket
import threading
import time

import pytest

from mooreeval_client import Client, MooreEvalError


class _DelayingProxy:
    """Forwards TCP to the server; the replies of the first `delayed` connections are held
    back `delay` seconds (the request itself reaches the server at once)."""

    def __init__(self, upstream_url: str, delayed: int, delay: float):
        host, port = re.match(r"http://([^:]+):(\d+)", upstream_url).groups()
        self.upstream = (host, int(port))
        self.delayed, self.delay, self.connections = delayed, delay, 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            hold = self.delay if self.connections <= self.delayed else 0.0
            upstream = socket.create_connection(self.upstream)
            threading.Thread(target=self._pump, args=(client, upstream, 0.0), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, hold), daemon=True).start()

    @staticmethod
    def _pump(src, dst, hold):
        try:
            first = True
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if first and hold:
                    time.sleep(hold)
                first = False
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.sock.close()


def _submitted_total(url: str, admin_token: str) -> int:
    text = Client(url, token=admin_token)._request("GET", "/metrics", safe=True)[1]
    return int(re.search(r"^mooreeval_jobs_submitted_total (\d+)", text, re.M).group(1))


def test_submit_batch_retried_past_timeout_creates_jobs_once(server_url, admin_token):
    before = _submitted_total(server_url, admin_token)
    proxy = _DelayingProxy(server_url, delayed=1, delay=3.0)
    try:
        items = [("elementwise/add", f"prose only {i}") for i in range(60)]
        ids = Client(proxy.url, timeout=1.0, backoff=0.1).submit_batch(items)
    finally:
        proxy.close()
    assert len(ids) == 60 and len(set(ids)) == 60
    assert proxy.connections >= 2  # the first reply was late: the request was repeated
    assert _submitted_total(server_url, admin_token) - before == 60  # not 120


def test_evaluate_retried_past_timeout_waits_for_the_same_job(server_url, admin_token):
    before = _submitted_total(server_url, admin_token)
    proxy = _DelayingProxy(server_url, delayed=1, delay=3.0)
    try:
        c = Client(proxy.url, timeout=1.0, backoff=0.1)
        v = c._call("POST", "/v1/evaluate", {"task": "elementwise/add", "candidate": "", "deadline_seconds": 60},
                    timeout=1.0, key="evaluate-retry-test")
    finally:
        proxy.close()
    assert v["state"] == "done" and v["verdict"]["verdict"] == "format_error"
    assert _submitted_total(server_url, admin_token) - before == 1


def test_without_a_key_a_late_reply_is_not_repeated(server_url, admin_token):
    before = _submitted_total(server_url, admin_token)
    proxy = _DelayingProxy(server_url, delayed=1, delay=3.0)
    try:
        with pytest.raises(MooreEvalError):
            Client(proxy.url, timeout=1.0)._call("POST", "/v1/jobs", {"task": "elementwise/add", "candidate": "x"})
        time.sleep(0.5)
        assert proxy.connections == 1
    finally:
        proxy.close()
    assert _submitted_total(server_url, admin_token) - before == 1


def test_requests_without_the_token_are_refused(server_url):
    with pytest.raises(MooreEvalError) as e:
        Client(server_url, token="").submit("elementwise/add", "x")
    assert e.value.status == 401 and e.value.code == "unauthorized"
