"""The runner's side of the orchestrator contract (mirror of src/mooreeval/runner/protocol.h):
job keys, control-pipe gates and commands, progress phases. Versioned by
docs/runner-job.schema.json ("mooreeval.runner-job/1"); tests/runner/test_protocol.py compares
JOB_KEYS with the schema, and the C++ unit test compares protocol.h's keys with it, so neither
side can add a key the other does not know."""

JOB_SCHEMA = "mooreeval.runner-job/1"

# Every key a job (or a candidate's late job) may hold; see protocol.h for which mode reads which.
JOB_KEYS = frozenset({
    "task_path", "candidate_path", "device_type", "allowed_torch_ops", "forbid_fallback_code",
    "device", "trial_seeds", "init_seed", "check_seeds", "recheck_seed", "recheck_max_bytes",
    "warmup_iters", "benchmark_iters", "flush_l2", "host_head_start", "timing_rounds", "benchmark", "control_fd",
    "threads",
    "outputs_path", "checks_path", "timing_path", "recheck_path",
    "poison_bytes", "poison_host", "min_own_kernel_share", "late_job_path",
    "kernel_names", "extensions", "fallback_blocks",
})

# Announced on the control pipe; the orchestrator answers with a command.
GATE_LOADED = "loaded"
GATE_OUTPUTS_READY = "outputs_ready"
GATE_TIMED = "timed"
GATES = frozenset({GATE_LOADED, GATE_OUTPUTS_READY, GATE_TIMED})

COMMAND_RUN = "run"
COMMAND_BENCH = "bench"
COMMAND_EXIT = "exit"
COMMAND_REMEASURE = "remeasure"
COMMANDS = frozenset({COMMAND_RUN, COMMAND_BENCH, COMMAND_EXIT, COMMAND_REMEASURE})

# Progress phases: those with this prefix mean candidate code has started, so a death after one is
# the candidate's fault (protocol.h: fault_of_phase).
CANDIDATE_PHASE_PREFIX = "candidate_"
