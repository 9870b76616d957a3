"""The warm runner's zygote (python/mooreeval_runner/zygote.py) as a real process, served over its socket the way
src/mooreeval/runner/warm_client_main.cpp talks to it: a client that goes away while its job runs ends that job,
and the zygote goes on serving — also when the client left our "pid" line unread, which resets the connection
(ECONNRESET) instead of closing it (the zygote used to die of that, losing its warm runner)."""
import array
import json
import os
import select
import socket
import subprocess
import sys
import time

from conftest import ROOT


def _ping(path, seconds):
    """The zygote's answer to a ping within `seconds`, or None."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
                c.settimeout(max(0.1, deadline - time.monotonic()))
                c.connect(path)
                c.sendall(b'{"ping": true}')
                return c.recv(64).decode()
        except OSError:
            time.sleep(0.2)
    return None


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _start_zygote(tmp_path):
    path = str(tmp_path / "zygote.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    log = open(tmp_path / "zygote.log", "w")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    z = subprocess.Popen([sys.executable, "-m", "mooreeval_runner", "zygote", "--listen-fd", str(listener.fileno()),
                          "--log-fd", str(log.fileno())], pass_fds=(listener.fileno(), log.fileno()), env=env)
    listener.close()  # the zygote holds it now: with the zygote gone, a connect is refused
    log.close()
    return z, path


def _start_blocking_job(path, tmp_path):
    """A job that blocks (its job file is a FIFO nobody writes); returns the client's connection, the job's pid
    read with MSG_PEEK, so the "pid" line stays unread in the connection."""
    fifo = tmp_path / "job.fifo"
    os.mkfifo(fifo)
    request = {"argv": ["probe", "--job", str(fifo), "--result", str(tmp_path / "result.json")],
               "cwd": str(tmp_path), "env": {}}
    null = os.open(os.devnull, os.O_RDWR)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    conn.sendmsg([json.dumps(request).encode()],
                 [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [null] * 4))])
    os.close(null)
    assert select.select([conn], [], [], 60)[0], "the zygote did not answer the job request"
    line = conn.recv(64, socket.MSG_PEEK).decode()
    assert line.startswith("pid "), line
    return conn, int(line.split()[1])


def test_a_client_that_goes_away_with_the_pid_line_unread_ends_its_job_not_the_zygote(tmp_path):
    z, path = _start_zygote(tmp_path)
    try:
        assert _ping(path, 150) == "pong\n", (tmp_path / "zygote.log").read_text()
        conn, pid = _start_blocking_job(path, tmp_path)
        assert _alive(pid)
        conn.close()  # unread data: the zygote's end is reset, not closed
        deadline = time.monotonic() + 30
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid), "the job outlived its client"
        assert z.poll() is None, "the zygote died: " + (tmp_path / "zygote.log").read_text()[-2000:]
        assert _ping(path, 30) == "pong\n", (tmp_path / "zygote.log").read_text()[-2000:]
    finally:
        z.kill()
        z.wait()
