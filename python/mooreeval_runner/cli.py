"""Dispatches a runner mode. Every mode writes a result JSON; the exit code is 0 when that
file was written, whatever the candidate did (its failures are in the JSON)."""
import argparse
import json
import os
import sys
import time
import traceback

from . import phase


def _write_result(path, result):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(result, f)
    os.replace(tmp, path)


def run_job(argv):
    """Runs one job (`mode --job F --result F [--phase-file F]`) and writes its result JSON.
    The result's "clock" holds the wall-clock times (time.time()) at which the job's own code
    started and ended, so the orchestrator can tell the job's seconds from the cost of
    starting it (a fork, a client process) and of learning that it ended."""
    started = time.time()
    parser = argparse.ArgumentParser(prog="mooreeval_runner")
    parser.add_argument("mode", choices=["probe", "inspect", "reference", "candidate"])
    parser.add_argument("--job", required=True, help="job description (JSON file)")
    parser.add_argument("--result", required=True, help="where to write the result JSON")
    parser.add_argument("--phase-file", default="", help="progress marker file")
    args = parser.parse_args(argv)
    phase.init(args.phase_file)
    with open(args.job, encoding="utf-8") as f:
        job = json.load(f)
    phase.mark("importing_torch")
    if args.mode == "probe":
        from .probe import run
    elif args.mode == "inspect":
        from .inspect_candidate import run
    elif args.mode == "reference":
        from .execute import run_reference as run
    else:
        from .execute import run_candidate as run
    try:
        result = run(job)
    except Exception as e:  # a bug in the runner or a broken environment: infrastructure
        result = {"status": "infra_error", "message": f"runner {args.mode} failed: {e!r}",
                  "traceback": traceback.format_exc()[-4000:]}
    if isinstance(result, dict):
        result["clock"] = {"start": started, "end": time.time()}
    _write_result(args.result, result)
    sys.stdout.flush()
    sys.stderr.flush()


def main(argv):
    if argv and argv[0] in ("zygote", "resident"):
        zp = argparse.ArgumentParser(prog="mooreeval_runner " + argv[0])
        zp.add_argument("--listen-fd", type=int, required=True, help="a listening Unix stream socket")
        zp.add_argument("--log-fd", type=int, required=True, help="where the server's own output goes")
        if argv[0] == "zygote":
            zp.add_argument("--exclusive", action="store_true",
                            help="alone in a sandbox: one job at a time, everything it left killed/emptied after")
            zargs = zp.parse_args(argv[1:])
            from .zygote import serve
            return serve(zargs.listen_fd, zargs.log_fd, zargs.exclusive)
        zp.add_argument("--device", required=True, help="cpu or cuda:N: set up and warmed before serving")
        zargs = zp.parse_args(argv[1:])
        from .resident import serve
        return serve(zargs.listen_fd, zargs.log_fd, zargs.device)
    run_job(argv)
    # Skip interpreter teardown: a candidate's extension may crash in static destructors,
    # and the verdict is already written.
    os._exit(0)
