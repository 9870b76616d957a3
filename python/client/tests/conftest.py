"""Starts a real `mooreeval serve` (embedded queue, one worker) on a free loopback port."""
import os
import pathlib
import re
import signal
import subprocess
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]


def _binary() -> pathlib.Path:
    path = pathlib.Path(os.environ.get("MOOREEVAL_BIN", REPO / "build" / "tools" / "mooreeval" / "mooreeval"))
    if not path.exists():
        pytest.exit(f"mooreeval binary not found at {path} (build it, or set MOOREEVAL_BIN)", returncode=2)
    return path


def _token(tmp: pathlib.Path, name: str, scope: str) -> str:
    out = subprocess.run([str(_binary()), "token", "--name", name, "--scope", scope, "--append-to",
                          str(tmp / "tokens")], check=True, capture_output=True, text=True)
    return out.stdout.strip()


@pytest.fixture(scope="session")
def admin_token(server_url):
    return os.environ["MOOREEVAL_TEST_ADMIN_TOKEN"]


@pytest.fixture(scope="session")
def server_url(tmp_path_factory):
    """The server, with token auth; the session's clients find their token in $MOOREEVAL_TOKEN."""
    tmp = tmp_path_factory.mktemp("mooreeval")
    os.environ["MOOREEVAL_TOKEN"] = _token(tmp, "client-tests", "submit")
    os.environ["MOOREEVAL_TEST_ADMIN_TOKEN"] = _token(tmp, "ops", "admin")
    log = open(tmp / "server.log", "w+")
    proc = subprocess.Popen(
        [str(_binary()), "serve", "--listen", "127.0.0.1:0", "--db", str(tmp / "client.db"), "--workers", "1",
         "--tokens", str(tmp / "tokens"), "--rate-limit", "1000", "--rate-burst", "1000",
         # The build cache the C++ tests share (build/test-build-cache): the lean shim is built once.
         "--cache-dir", str(_binary().parent.parent.parent / "test-build-cache")],
        stdout=log, stderr=subprocess.STDOUT)
    url = None
    for _ in range(6000):  # up to 10 min: the first start builds the lean shim (minutes on a loaded machine)
        log.seek(0)
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", log.read())
        if m:
            url = f"http://127.0.0.1:{m.group(1)}"
            break
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    if url is None:
        log.seek(0)
        proc.kill()
        pytest.fail("server did not start:\n" + log.read())
    yield url
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def fixtures_dir():
    return REPO / "tests" / "fixtures" / "candidates"
