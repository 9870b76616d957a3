"""MooreEval runner: the Python side of the verifier.

The C++ orchestrator (`mooreeval`) starts one fresh process of this package per job and
talks to it through files: a job JSON in, a result JSON (and a tensor file) out. Python is
used here only because PyTorch semantics are the point: importing KernelBench task modules,
running the reference `Model`, and running a candidate `ModelNew` with its prebuilt extension.
"""
