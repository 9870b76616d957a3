"""The trial-outputs format (python/mooreeval_runner/tensors.py; read by src/mooreeval/verify/output_file.cpp):
a header file with the trial count and one file per trial, so that no file is larger than one call's outputs."""
import struct

import torch

from mooreeval_runner import tensors


def read_trial(path):
    """A reader written from the format's grammar: [(dtype, shape, storage, values)] of one trial file."""
    with open(path, "rb") as f:
        data = f.read()
    pos = 0

    def take(fmt):
        nonlocal pos
        vals = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return vals

    out = []
    (n,) = take("<I")
    for _ in range(n):
        (length,) = take("<I")
        dtype = data[pos:pos + length].decode()
        pos += length
        (ndim,) = take("<I")
        shape = list(take("<%dq" % ndim))
        (numel,) = take("<Q")
        (slen,) = take("<I")
        storage = data[pos:pos + slen].decode()
        pos += slen
        size = torch.empty(0, dtype=getattr(torch, storage)).element_size()
        raw = bytearray(data[pos:pos + numel * size])
        pos += numel * size
        values = torch.frombuffer(raw, dtype=getattr(torch, storage)).tolist() if numel else []
        out.append((dtype, shape, storage, values))
    assert pos == len(data), "trailing bytes"
    return out


def test_one_file_per_trial_and_a_header_with_the_count(tmp_path):
    path = str(tmp_path / "candidate.bin")
    trials = [[torch.tensor([[1.0, -2.0]]), torch.tensor([3], dtype=torch.int64)],
              [torch.tensor([0.5, 0.25], dtype=torch.bfloat16)],
              [torch.tensor([1 + 2j])]]
    tensors.write_outputs(path, trials)
    with open(path, "rb") as f:
        assert f.read() == b"MCOUT003" + struct.pack("<I", 3)
    assert read_trial(path + ".0") == [("float32", [1, 2], "float32", [1.0, -2.0]), ("int64", [1], "int64", [3])]
    assert read_trial(path + ".1") == [("bfloat16", [2], "bfloat16", [0.5, 0.25])]
    # complex: both parts are stored (and so compared), as a last dimension of 2
    assert read_trial(path + ".2") == [("complex64", [1, 2], "float32", [1.0, 2.0])]
    assert not (tmp_path / "candidate.bin.3").exists()


def test_no_trials_is_a_header_only(tmp_path):
    path = str(tmp_path / "o.bin")
    tensors.write_outputs(path, [])
    with open(path, "rb") as f:
        assert f.read() == b"MCOUT003" + struct.pack("<I", 0)
