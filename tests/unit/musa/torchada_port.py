"""Ports each file named on the command line with the installed torchada's own
torchada.utils.cpp_extension._port_cuda_source and prints {path: ported text} as JSON (the reference
for tests/unit/musa/port_test.cpp's parity test)."""
import json
import sys

from torchada.utils.cpp_extension import _port_cuda_source

out = {}
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as f:
        out[path] = _port_cuda_source(f.read())
json.dump(out, sys.stdout)
