"""Trial outputs to a flat binary file the C++ verify stage reads (verify/output_file.h).

    file   := "MCOUT003" u32:n_trials         (and trial t in the file <path>.<t>)
    trial  := u32:n_tensors tensor*
    tensor := u32:len dtype-name[len] u32:ndim i64:shape[ndim] u64:numel
              u32:slen storage-name[slen] data[numel * size(storage)]

All integers little-endian. The data is the tensor's own bytes (row-major, little-endian) when
its dtype is a storage type (float64, float32, float16, bfloat16, int64, int32, int16, int8,
uint8, bool); a complex tensor is stored as its real and imaginary parts (a last dimension of 2,
torch.view_as_real); any other dtype is widened to float64. Widening everything to float64 doubled or
quadrupled what the run slot wrote and read back for float32/bf16 outputs. One file per trial:
the sandbox's RLIMIT_FSIZE is per file, and 8 trials of a 268 MB output in one file exceeded it
(MCOUT002, still read by the C++ side, held every trial in the one file)."""
import struct

MAGIC = b"MCOUT003"

_STORED = {"float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"}


def flatten_outputs(out):
    import torch
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        flat = []
        for item in out:
            flat.extend(flatten_outputs(item))
        return flat
    raise TypeError("forward returned %s, expected a tensor or a tuple of tensors" % type(out).__name__)


def _payload(t):
    """(storage name, the tensor's bytes on the host as a buffer)."""
    import torch
    name = str(t.dtype).replace("torch.", "")
    if name not in _STORED:
        t, name = t.to(torch.float64), "float64"
    flat = t.to("cpu").contiguous().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    return name, flat.view(torch.uint8).numpy().data


def write_outputs(path, trials):
    for t, tensors in enumerate(trials):  # the trial files first: the header names how many there are
        with open("%s.%d" % (path, t), "wb") as f:
            _write_trial(f, tensors)
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<I", len(trials)))


def _write_trial(f, tensors):
    import torch
    f.write(struct.pack("<I", len(tensors)))
    for t in tensors:
        t = t.detach()
        dtype = str(t.dtype).replace("torch.", "").encode()
        if t.is_complex():  # real and imaginary parts as a last dimension of 2: both are compared
            t = torch.view_as_real(t.resolve_conj())
        f.write(struct.pack("<I", len(dtype)))
        f.write(dtype)
        f.write(struct.pack("<I", t.dim()))
        f.write(struct.pack("<%dq" % t.dim(), *t.shape))
        f.write(struct.pack("<Q", t.numel()))
        storage, data = _payload(t)
        f.write(struct.pack("<I", len(storage)))
        f.write(storage.encode())
        f.write(data)
