"""The process the orchestrator starts for a warm job: hands its stdin, stdout, stderr and
control pipe (fd 3) to the zygote (zygote.py), which forks the job, and then mirrors the
job's end — the same exit code, or death by the same signal — so that to the orchestrator it
is the job. Killing this process (its deadline) makes the zygote kill the job.

    python3 -m mooreeval_runner.warm_client SOCKET <runner argv...>

Exit code 86 with a message on stderr: the zygote could not be reached (nothing ran).
"""
import array
import json
import os
import signal
import socket
import sys


def main():
    socket_path, argv = sys.argv[1], sys.argv[2:]
    request = {"argv": argv, "cwd": os.getcwd(), "env": json.loads(os.environ.get("MOOREEVAL_WARM_ENV", "{}"))}
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(socket_path)
        conn.sendmsg([json.dumps(request).encode()],
                     [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2, 3]))])
    except OSError as e:
        sys.stderr.write("mooreeval warm runner unreachable at %s: %s\n" % (socket_path, e))
        os._exit(86)
    # Our own copies must not keep the pipes open after the job closes them.
    for fd in (0, 1, 3):
        os.close(fd)
    reader = conn.makefile("rb")
    for line in reader:
        word, _, value = line.decode().strip().partition(" ")
        if word == "exit":
            os._exit(int(value))
        if word == "signal":
            sig = int(value)
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
            os._exit(128 + sig)
        if word == "error":
            os.write(2, ("mooreeval warm runner refused the job: %s\n" % value).encode())
            os._exit(86)
    os.write(2, b"mooreeval warm runner went away during the job\n")
    os._exit(86)


if __name__ == "__main__":
    main()
