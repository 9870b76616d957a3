"""The warm runner: a process that has imported torch once and forks a fresh job process
per request (~10 ms instead of ~5 s of `import torch` per job).

Protocol, over a Unix stream socket, one connection per job (see warm_client.py):
  client -> zygote: one JSON request {"argv": [...], "cwd": ..., "env": {...}} with the
                    client's stdin, stdout, stderr and control pipe (fd 3) attached (SCM_RIGHTS)
  zygote -> client: "pid N\\n" once forked, then "exit N\\n" or "signal N\\n" when the job ends.
If the client's connection closes first (the orchestrator killed the client at its deadline),
the zygote kills the job's process group at once.

The zygote never initialises CUDA (forking after that is not allowed); each job does, itself.
It dies with its parent (PR_SET_PDEATHSIG, set by the orchestrator's spawn), and each job dies
with the zygote.
"""
import array
import ctypes
import json
import os
import select
import signal
import socket
import sys

_PR_SET_PDEATHSIG = 1


# torch._dynamo: the candidate runner's first TorchDispatchMode imports it (~1 s), and it wraps
# torch functions on import, which must happen before the harness snapshot (guards.py).
_PRELOAD = ["torch", "numpy", "torch.utils.cpp_extension", "torch._dynamo", "mooreeval_runner.cli",
            "mooreeval_runner.execute", "mooreeval_runner.inspect_candidate"]


def _preload():
    """Imports what every job needs, once — each module only if importing it leaves forked
    children able to use CUDA (tried first in a throwaway child). Returns the skipped ones."""
    import importlib
    skipped = []
    for name in _PRELOAD:
        pid = os.fork()
        if pid == 0:
            try:
                importlib.import_module(name)
                os._exit(1 if _fork_poisoned() else 0)
            except BaseException:  # noqa: BLE001
                os._exit(2)
        _, status = os.waitpid(pid, 0)
        if os.WEXITSTATUS(status) == 0:
            importlib.import_module(name)
        else:
            skipped.append(name)
    return skipped


def _recv_request(conn):
    fds = array.array("i")
    data, ancdata, _, _ = conn.recvmsg(1 << 20, socket.CMSG_LEN(4 * fds.itemsize))
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - (len(payload) % fds.itemsize)])
    return json.loads(data.decode()), list(fds)


def _run_job(request, fds, listener, conns, wake_fds):
    """In the forked child: become the job (own process group, the client's fds) and run."""
    try:
        os.setpgid(0, 0)
        signal.set_wakeup_fd(-1)
        for fd in wake_fds:
            os.close(fd)
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        listener.close()
        for c in conns:
            c.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)  # 0 stdin, 1 stdout, 2 stderr, 3 control pipe
        for fd in fds:
            if fd > 3:
                os.close(fd)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.chdir(request["cwd"])
        os.environ.update(request.get("env", {}))
        sys.stdout = os.fdopen(1, "w", buffering=1)
        sys.stderr = os.fdopen(2, "w", buffering=1)
        sys.stdin = os.fdopen(0, "r")
        from .cli import main
        main(request["argv"])  # ends with os._exit
    except BaseException as e:  # noqa: BLE001 - report, then exit the job
        try:
            os.write(2, ("warm runner job failed to start: %r\n" % (e,)).encode())
        finally:
            os._exit(86)
    os._exit(0)


def _fork_poisoned():
    """Whether a child forked now could not use CUDA (torch marks children of a process that
    initialised CUDA, or merely counted devices, as a bad fork)."""
    check = getattr(__import__("torch")._C, "_cuda_isInBadFork", None)
    if check is None:  # a CPU-only torch
        return False
    pid = os.fork()
    if pid == 0:
        os._exit(1 if check() else 0)
    _, status = os.waitpid(pid, 0)
    return os.WEXITSTATUS(status) != 0


def serve(socket_path):
    status_path = socket_path + ".status"
    # torch.utils.cpp_extension calls torch.cuda.is_available() at import; the NVML-based
    # check answers without initialising CUDA, so forked jobs can still use the GPU.
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    skipped = _preload()
    if "torch" in skipped or _fork_poisoned():
        # Forked jobs could not use the GPU: refuse, and the orchestrator starts runners cold.
        with open(status_path, "w") as f:
            f.write("refused: CUDA was initialised while importing torch and the runner; "
                    "forked jobs could not use the GPU")
        return 3
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(socket_path):
        os.unlink(socket_path)
    listener.bind(socket_path)
    listener.listen(64)  # the orchestrator waits until it can connect
    # Nobody drains our own stdout/stderr pipes from now on: keep what we print in a file.
    log = os.open(socket_path + ".log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    if skipped:
        print("zygote: not preloaded (importing them would poison forked CUDA jobs): %s" % skipped, flush=True)
    jobs = {}  # connection -> job pid
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    while True:
        readable, _, _ = select.select([listener, wake_r] + list(jobs), [], [], 1.0)
        for r in readable:
            if r is listener:
                conn, _ = listener.accept()
                try:
                    request, fds = _recv_request(conn)
                except (OSError, ValueError):
                    conn.close()
                    continue
                if len(fds) != 4:
                    conn.sendall(b"error expected 4 file descriptors\n")
                    conn.close()
                    for fd in fds:
                        os.close(fd)
                    continue
                pid = os.fork()
                if pid == 0:
                    _run_job(request, fds, listener, list(jobs) + [conn], (wake_r, wake_w))
                for fd in fds:
                    os.close(fd)
                jobs[conn] = pid
                conn.sendall(b"pid %d\n" % pid)
            elif r is wake_r:
                os.read(wake_r, 4096)
            else:
                # The client closed its end: it was killed (deadline) or gave up; so does the job.
                if not r.recv(1):
                    _kill_group(jobs.pop(r))
                    r.close()
        _reap(jobs)


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _reap(jobs):
    by_pid = {pid: conn for conn, pid in jobs.items()}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = by_pid.get(pid)
        if conn is None:
            continue  # already disowned (its client went away)
        _kill_group(pid)  # stragglers in the job's group would keep the client's pipes open
        if os.WIFSIGNALED(status):
            line = b"signal %d\n" % os.WTERMSIG(status)
        else:
            line = b"exit %d\n" % os.WEXITSTATUS(status)
        try:
            conn.sendall(line)
        except OSError:
            pass
        conn.close()
        del jobs[conn]
