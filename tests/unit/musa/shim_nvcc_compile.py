"""CPU-CI check of the reverse shim: runs each shimmed submission (files named on the command line) with
torch.utils.cpp_extension.load_inline recording instead of building, so the shim's load_inline wrapper
prepares the sources exactly as it would on a GPU machine; then compiles every recorded CUDA source with
nvcc in ONE translation unit (each source in its own namespace, include lines hoisted; nvcc on
torch/types.h costs ~30 s per unit, so one unit for all). A MUSA name the shim header does not map back
fails the compile. Prints the nvcc command and output; exit status is nvcc's.

    shim_nvcc_compile.py WORK_DIR NVCC FILE..."""
import importlib.util
import os
import re
import subprocess
import sys

import torch.utils.cpp_extension as cpp_extension


def recorded_sources(path, index):
    calls = []

    def record(name, cpp_sources, cuda_sources=None, **kwargs):
        calls.append(cuda_sources or [])
        return None

    saved = cpp_extension.load_inline
    cpp_extension.load_inline = record
    try:
        spec = importlib.util.spec_from_file_location("shimmed_%d" % index, path)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    finally:
        cpp_extension.load_inline = saved
    return [s for call in calls for s in call]


def main():
    work, nvcc, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    includes, headers, bodies = [], [], []
    for i, path in enumerate(files):
        for j, src in enumerate(recorded_sources(path, i)):
            header, _, body = src.partition("#line 1\n")
            if not body:
                raise SystemExit("%s: a CUDA source without the shim header" % path)
            headers.append(header)
            lines = []
            for line in body.splitlines():
                (includes if re.match(r"\s*#\s*include", line) else lines).append(line)
            bodies.append("namespace shimmed_%d_%d {  // %s\n%s\n}\n" % (i, j, path, "\n".join(lines)))
    unit = "\n".join(["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"]
                     + sorted(set(includes)) + headers + bodies)
    cu = os.path.join(work, "shimmed_all.cu")
    with open(cu, "w", encoding="utf-8") as f:
        f.write(unit)
    cmd = [nvcc, "-c", cu, "-o", os.path.join(work, "shimmed_all.o"), "-std=c++17",
           "-D_GLIBCXX_USE_CXX11_ABI=%d" % int(__import__("torch")._C._GLIBCXX_USE_CXX11_ABI),
           "-gencode=arch=compute_90,code=sm_90"]
    # torch's CPU wheels ship the CUDA headers but report no CUDA_HOME: include_paths("cpu") plus the
    # include dir of the nvcc given.
    cuda_inc = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "include")
    for inc in cpp_extension.include_paths() + [cuda_inc]:
        cmd += ["-isystem", inc]
    print(" ".join(cmd), "\n", "%d sources from %d files" % (len(bodies), len(files)), flush=True)
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main())
