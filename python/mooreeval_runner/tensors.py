"""Trial outputs to a flat binary file the C++ verify stage reads (verify/output_file.h).

    file   := "MCOUT001" u32:n_trials trial*
    trial  := u32:n_tensors tensor*
    tensor := u32:len dtype-name[len] u32:ndim i64:shape[ndim] u64:numel f64:data[numel]

All integers little-endian; values widened to float64 (exact for every float dtype up to
float64 and for integers below 2**53)."""
import struct

MAGIC = b"MCOUT001"


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


def write_outputs(path, trials):
    import numpy as np
    import torch
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<I", len(trials)))
        for tensors in trials:
            f.write(struct.pack("<I", len(tensors)))
            for t in tensors:
                t = t.detach()
                dtype = str(t.dtype).replace("torch.", "").encode()
                f.write(struct.pack("<I", len(dtype)))
                f.write(dtype)
                f.write(struct.pack("<I", t.dim()))
                f.write(struct.pack("<%dq" % t.dim(), *t.shape))
                data = t.to("cpu").to(torch.float64).contiguous().numpy()
                f.write(struct.pack("<Q", data.size))
                f.write(np.ascontiguousarray(data, dtype="<f8").tobytes())
