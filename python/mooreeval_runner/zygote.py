"""The warm runner: a process that has imported torch once and forks a fresh job process
per request (~10 ms instead of ~5 s of `import torch` per job).

    python3 -m mooreeval_runner zygote --listen-fd N --log-fd M [--exclusive]

The orchestrator (src/mooreeval/runner/warm_runner.cpp) creates the listening Unix socket and the log file
and hands both over as open descriptors, so the socket's path need not be visible to (or
replaceable by) anything inside a sandbox. Protocol, one connection per request:
  {"ping": true}        -> "pong\\n" (the zygote is up and serving)
  a job request {"argv": [...], "cwd": ..., "env": {...}} with the client's stdin, stdout,
  stderr and control pipe (fd 3) attached (SCM_RIGHTS; see src/mooreeval/runner/warm_client_main.cpp)
                        -> "pid N\\n" once forked, then "exit N\\n" or "signal N\\n" when it ends.
If the client's connection closes first (the orchestrator killed the client at its deadline), or is
reset (a client killed before it read "pid N"), the zygote kills the job's process group at once.

--exclusive: the zygote runs alone in its own sandbox (bubblewrap, its own pid namespace; see
src/mooreeval/runner/sandboxed_warm_pool.h) and serves one untrusted job at a time. Before it reports a
job's end (or, for a killed client, before it serves the next request) it kills every other
process of the namespace, setsid'ed ones included, and empties what a job could leave behind
for the next one: /tmp, /dev/shm and the namespace's SysV IPC objects. The zygote itself is
not dumpable, so a job cannot read or write its memory through /proc.

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
import subprocess
import sys
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_IPC_RMID = 0


# torch._dynamo: the candidate runner's first TorchDispatchMode imports it (~1 s), and it wraps
# torch functions on import, which must happen before the harness snapshot (guards.py).
_PRELOAD = ["torch", "numpy", "torch.utils.cpp_extension", "torch._dynamo", "torch.profiler",
            "mooreeval_runner.cli", "mooreeval_runner.execute", "mooreeval_runner.inspect_candidate"]


def _preload():
    """Imports what every job needs, once — each module only if importing it leaves forked
    children able to use CUDA (tried first in a throwaway child). Returns the skipped ones."""
    import importlib
    # torch itself directly (trying it in a child first would double the largest import);
    # if it poisons fork, the zygote refuses anyway.
    importlib.import_module("torch")
    if _fork_poisoned():
        return ["torch"]
    skipped = []
    for name in _PRELOAD:
        if name == "torch":
            continue
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


def _freeze_heap():
    """Moves every object the preload created (torch's, ~300k) into the collector's permanent
    generation. A forked job's first full collection would otherwise traverse them all, and
    touching their headers copies every page on write: ~0.15 s of a job here, seconds under load.
    (A resident server freezes its set-up the same way, so its clean-up between jobs collects
    only what the job left.) The jobs' own objects are collected as usual."""
    import gc
    gc.collect()
    gc.freeze()


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
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # the job's own /proc entries stay usable
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


def _in_own_pid_namespace():
    """Whether this process runs directly under bubblewrap's init in a pid namespace of its own
    (the only place where killing "every other process" is the sandbox's processes only)."""
    try:
        with open("/proc/1/comm") as f:
            init = f.read().strip()
    except OSError:
        return False
    return init == "bwrap" and os.getppid() == 1


def serve(listen_fd, log_fd, exclusive):
    # Everything we print goes to the orchestrator's log file: nobody drains our stdio pipes.
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    if exclusive:
        if not _in_own_pid_namespace():
            print("zygote: refused: --exclusive needs a pid namespace of its own (bubblewrap)", flush=True)
            return 3
        # Jobs leave files in their work dir and /tmp: nothing is imported from there.
        cwd = os.getcwd()
        sys.path[:] = [p for p in sys.path if p not in ("", ".", cwd)]
        os.chdir("/")
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    # torch.utils.cpp_extension calls torch.cuda.is_available() at import; the NVML-based
    # check answers without initialising CUDA, so forked jobs can still use the GPU.
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    skipped = _preload()
    if "torch" in skipped or _fork_poisoned():
        # Forked jobs could not use the GPU: refuse, and the orchestrator starts runners cold.
        print("zygote: refused: CUDA was initialised while importing torch and the runner; "
              "forked jobs could not use the GPU", flush=True)
        return 3
    _freeze_heap()
    listener = socket.socket(fileno=listen_fd)
    if skipped:
        print("zygote: not preloaded (importing them would poison forked CUDA jobs): %s" % skipped, flush=True)
    jobs = {}  # connection -> job pid
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    while True:
        readable, _, _ = select.select([listener, wake_r] + list(jobs), [], [], 1.0)
        # Job connections first: a client killed at its deadline is cleaned up after before
        # the next request (which the orchestrator may already have sent) is served.
        for r in sorted(readable, key=lambda x: x is listener):
            if r is listener:
                _accept(listener, jobs, (wake_r, wake_w), exclusive)
            elif r is wake_r:
                os.read(wake_r, 4096)
            elif r in jobs and _client_gone(r):
                # The client closed its end: it was killed (deadline) or gave up; so does the job.
                _kill_group(jobs.pop(r))
                r.close()
                if exclusive:
                    _sweep()
        _reap(jobs, exclusive)


def _client_gone(conn):
    """Whether a job's client has gone: its end closed, or reset — a client killed before it read our "pid"
    line leaves the connection reset (ECONNRESET), which must end its job, not the zygote."""
    try:
        return not conn.recv(1)
    except OSError:
        return True


def _accept(listener, jobs, wake_fds, exclusive):
    conn, _ = listener.accept()
    try:
        request, fds = _recv_request(conn)
    except (OSError, ValueError):
        conn.close()
        return
    reply = None  # an answer that ends the connection
    if request.get("ping"):
        reply = "pong"
    elif len(fds) != 4:
        reply = "error expected 4 file descriptors"
    elif exclusive and jobs:
        reply = "error busy: this warm runner serves one job at a time"
    if reply is not None:
        try:
            conn.sendall(reply.encode() + b"\n")
        except OSError:
            pass
        conn.close()
        for fd in fds:
            os.close(fd)
        return
    pid = os.fork()
    if pid == 0:
        _run_job(request, fds, listener, list(jobs) + [conn], wake_fds)
    try:
        # The child makes itself a group leader first thing; doing it here too means a client that goes away
        # at once still has its job's group killed (before the child got there, killpg found no group).
        os.setpgid(pid, pid)
    except OSError:
        pass  # the child got there first, or has already ended
    for fd in fds:
        os.close(fd)
    jobs[conn] = pid
    try:
        conn.sendall(b"pid %d\n" % pid)
    except OSError:
        pass


def _others_alive():
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, me):
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                state = f.read().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue  # gone meanwhile
        if state not in ("Z", "X"):
            return True
    return False


def _empty_dir(path):
    """Removes what is inside `path`, never crossing into another file system (the job dir,
    a bind from the host, may be mounted below /tmp); rm copes with any depth of nesting."""
    try:
        names = os.listdir(path)
    except OSError:
        return
    if names:
        subprocess.run(["rm", "-rf", "--one-file-system", "--"] + [os.path.join(path, n) for n in names],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=60, check=False)


def _remove_sysv_ipc():
    libc = ctypes.CDLL(None, use_errno=True)
    for kind, remove in (("shm", lambda i: libc.shmctl(i, _IPC_RMID, None)),
                         ("msg", lambda i: libc.msgctl(i, _IPC_RMID, None)),
                         ("sem", lambda i: libc.semctl(i, 0, _IPC_RMID))):
        try:
            with open("/proc/sysvipc/" + kind) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 1 and fields[1].isdigit():
                remove(int(fields[1]))


def _sweep():
    """Exclusive mode, between jobs: no process, file or IPC object of the last job survives."""
    _kill_all()
    _clean_up()


def _kill_all():
    """Every process of the sandbox but init and us, dead and reaped: nothing of the job can
    write to its outputs any more."""
    deadline = time.monotonic() + 5.0
    while True:
        try:
            os.kill(-1, signal.SIGKILL)  # every process we may signal here but init and us
        except ProcessLookupError:
            pass
        for _ in _exited_children():  # our own (the job); orphans are reaped by bubblewrap's init
            pass
        if not _others_alive() or time.monotonic() > deadline:
            break
        time.sleep(0.002)


def _clean_up():
    """The files and IPC objects a job may have left (its processes are dead)."""
    for d in ("/tmp", "/dev/shm"):
        _empty_dir(d)
    _remove_sysv_ipc()


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _exited_children():
    """(pid, status) of each child that has ended, reaped without waiting."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, status


def _reap(jobs, exclusive):
    by_pid = {pid: conn for conn, pid in jobs.items()}
    for pid, status in _exited_children():
        conn = by_pid.get(pid)
        if conn is None:
            continue  # already disowned (its client went away)
        _kill_group(pid)  # stragglers in the job's group would keep the client's pipes open
        if exclusive:
            _kill_all()  # before the orchestrator hears of the end and reads the job's outputs
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
        if exclusive:
            # After the report, so it overlaps the orchestrator's reading of the outputs: this
            # loop is single-threaded, so the next ping (acquire()) is answered after it.
            _clean_up()
