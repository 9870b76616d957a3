"""The resident reference runner: one long-lived process per run slot that has imported torch,
set up its device (a CUDA context, library handles) once, and runs reference jobs in-process,
one at a time. A forked or fresh reference would create a CUDA context per evaluation
(seconds, CPU-heavy, beside every candidate's own); the reference is the task's trusted code,
so it may share a process with the references before it. Candidate code never runs here.

    python3 -m mooreeval_runner resident --listen-fd N --log-fd M --device cpu|cuda:N

It speaks the zygote's protocol (zygote.py; jobs come through the warm client,
src/mooreeval/runner/warm_client_main.cpp, with the client's stdin, stdout, stderr and control pipe), so to
the orchestrator a job is an ordinary runner process:
  {"ping": true}       -> "pong\\n" (served only between jobs, after the last one's clean-up)
  a reference job      -> "pid N\\n" (this process), then "exit N\\n" when the job is done.
  any other mode       -> "error ...\\n" (nothing runs).
Between jobs the job's fds are closed again, its environment, cwd and task modules dropped,
and the device's caching allocator emptied (the next candidate's process needs that memory).

If the client's connection closes while a job runs (the orchestrator killed it at its
deadline), a job in this process cannot be killed alone: the whole server exits at once, and
the orchestrator starts a new one (see src/mooreeval/runner/resident_references.h). A device that fails
its health check after a job (a sticky CUDA error) ends the server the same way.
"""
import os
import socket
import sys
import threading
import traceback

from .zygote import _freeze_heap, _recv_request

_RESTART_EXIT = 70  # this server must be replaced
_log_fd = 2  # the server's log (a job's stderr is the client's, on fd 2 while it runs)


def _log(message):
    os.write(_log_fd, ("resident: %s\n" % message).encode())


def _warm_up(device):
    """What every reference job would otherwise pay first: the device context, the first
    kernels, cuBLAS and cuDNN handles, the modules the runner imports."""
    import torch
    from . import devices, execute  # noqa: F401
    if devices.is_gpu(device):
        devices.setup(device)
        a = torch.randn(256, 256, device=device)
        (a @ a).sum().item()
        x = torch.randn(1, 4, 16, 16, device=device)
        torch.nn.functional.conv2d(x, torch.randn(4, 4, 3, 3, device=device)).sum().item()
        devices.synchronize(device)
        del a, x
        devices.empty_cache(device)
    else:
        a = torch.randn(64, 64)
        (a @ a).sum().item()


def _device_healthy(device):
    import torch
    from . import devices
    if not devices.is_gpu(device):
        return True
    try:
        torch.ones(1, device=device).add_(1).item()
        devices.synchronize(device)
        return True
    except Exception:  # noqa: BLE001 - any failure means: replace this server
        traceback.print_exc()
        return False


def _clean_up(device):
    import gc
    for name in [n for n in sys.modules if n.startswith("mooreeval_task_")]:
        del sys.modules[name]
    from . import devices
    gc.collect()
    devices.synchronize(device)
    devices.empty_cache(device)


def _watch(conn, done):
    """Ends the server when the client goes away before the job is done (deadline kill)."""
    try:
        while not done.is_set():
            if not conn.recv(1):
                break
    except OSError:
        pass
    if not done.is_set():
        _log("the client went away during a job; exiting")
        os._exit(_RESTART_EXIT)


def _run_in_process(request, fds):
    """Runs the job with the client's fds as 0-3, in its cwd and environment; restores ours."""
    from .cli import run_job
    saved = [os.dup(i) for i in range(4)]
    cwd = os.getcwd()
    env = dict(os.environ)
    streams = sys.stdin, sys.stdout, sys.stderr
    code = 0
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.chdir(request["cwd"])
        os.environ.update(request.get("env", {}))
        sys.stdin = open(0, "r", closefd=False)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        run_job(request["argv"])
    except BaseException:  # noqa: BLE001 - a bad request or a runner bug: the job fails
        code = 1
        try:
            sys.stderr.write("resident reference job failed: %s\n" % traceback.format_exc()[-4000:])
        except Exception:  # noqa: BLE001
            pass
    finally:
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except Exception:  # noqa: BLE001
                pass
        sys.stdin, sys.stdout, sys.stderr = streams
        for target, fd in enumerate(saved):
            os.dup2(fd, target)  # the client's copies at 0-3 close here
            os.close(fd)
        for fd in fds:
            os.close(fd)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
    return code


def _serve_one(conn, device):
    """One connection: a ping, a refused request, or a reference job. False: exit."""
    try:
        request, fds = _recv_request(conn)
    except (OSError, ValueError):
        conn.close()
        return True
    reply = None
    argv = request.get("argv") or []
    if request.get("ping"):
        reply = "pong"
    elif len(fds) != 4:
        reply = "error expected 4 file descriptors"
    elif not argv or argv[0] != "reference":
        reply = "error the resident runner serves reference jobs only"
    if reply is not None:
        try:
            conn.sendall(reply.encode() + b"\n")
        except OSError:
            pass
        conn.close()
        for fd in fds:
            os.close(fd)
        return True
    try:
        conn.sendall(b"pid %d\n" % os.getpid())
    except OSError:
        pass
    done = threading.Event()
    watcher = threading.Thread(target=_watch, args=(conn, done), daemon=True)
    watcher.start()
    code = _run_in_process(request, fds)
    done.set()
    try:
        conn.sendall(b"exit %d\n" % code)
        conn.shutdown(socket.SHUT_RDWR)  # wakes the watcher
    except OSError:
        pass
    watcher.join(timeout=5)
    conn.close()
    # After the report, so it overlaps the orchestrator's reading of the outputs; the next
    # ping is answered only after it.
    _clean_up(device)
    if not _device_healthy(device):
        _log("the device failed its check after a job; exiting")
        return False
    return True


def serve(listen_fd, log_fd, device):
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    global _log_fd
    _log_fd = os.dup(2)
    try:
        _warm_up(device)
    except Exception as e:  # noqa: BLE001
        _log("refused: cannot set up %s: %r" % (device, e))
        return 3
    # The set-up's objects (torch's, the device's) are never garbage: the jobs' collections
    # need not traverse them each time.
    _freeze_heap()
    listener = socket.socket(fileno=listen_fd)
    _log("serving reference jobs on %s (pid %d)" % (device, os.getpid()))
    while True:
        conn, _ = listener.accept()
        if not _serve_one(conn, device):
            return _RESTART_EXIT

