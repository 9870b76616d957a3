"""The target backend's device as inspection sees it: inspection runs with no GPU visible (it must
never touch one), yet a candidate written for CUDA asks `torch.cuda.is_available()` before it
builds, moves parameters with `.cuda()` in __init__, or sizes a grid from the device properties.
For a cuda target, `target_device` answers those queries as one GPU would and keeps every device
move on the host (a TorchFunctionMode maps cuda devices to cpu), so the module executes the way it
will in the run. Nothing here launches work on a device."""
import contextlib
import types

# What inspection reports for the device (an H100's numbers; nothing is measured with them).
_PROPERTIES = types.SimpleNamespace(
    name="NVIDIA H100 80GB HBM3 (inspection)", major=9, minor=0, multi_processor_count=132,
    total_memory=80 * (1 << 30), warp_size=32, max_threads_per_multi_processor=2048,
    max_threads_per_block=1024, regs_per_multiprocessor=65536, shared_memory_per_block=49152,
    shared_memory_per_block_optin=232448, shared_memory_per_multiprocessor=233472, L2_cache_size=50 * (1 << 20),
    is_integrated=False, is_multi_gpu_board=False)

_QUERIES = {
    "is_available": lambda: True,
    "device_count": lambda: 1,
    "current_device": lambda: 0,
    "is_initialized": lambda: True,
    "init": lambda: None,
    "synchronize": lambda device=None: None,
    "set_device": lambda device: None,
    "get_device_name": lambda device=None: _PROPERTIES.name,
    "get_device_capability": lambda device=None: (_PROPERTIES.major, _PROPERTIES.minor),
    "get_device_properties": lambda device=None: _PROPERTIES,
    "get_arch_list": lambda: ["sm_90"],
}


def _is_cuda(device):
    import torch
    if isinstance(device, str):
        return device.startswith("cuda")
    if isinstance(device, torch.device):
        return device.type == "cuda"
    return isinstance(device, int) and not isinstance(device, bool)


def _host_mode():
    import torch
    from torch.overrides import TorchFunctionMode

    class HostDevices(TorchFunctionMode):
        """cuda devices in torch calls become cpu; Tensor.cuda() returns the tensor itself."""

        def __torch_function__(self, func, types_, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            name = getattr(func, "__name__", "")
            if name == "cuda" and args and isinstance(args[0], torch.Tensor):
                return args[0]
            if "device" in kwargs and _is_cuda(kwargs["device"]):
                kwargs["device"] = "cpu"
            if name == "to":
                args = tuple("cpu" if i > 0 and _is_cuda(a) else a for i, a in enumerate(args))
            return func(*args, **kwargs)

    return HostDevices()


@contextlib.contextmanager
def target_device(device_type):
    """Within the block, the process looks like it has the target device (see the module doc)."""
    if device_type != "cuda":
        yield
        return
    import torch
    saved = {name: getattr(torch.cuda, name) for name in _QUERIES if hasattr(torch.cuda, name)}
    for name, answer in _QUERIES.items():
        setattr(torch.cuda, name, answer)
    try:
        with _host_mode():
            yield
    finally:
        for name in _QUERIES:
            if name in saved:
                setattr(torch.cuda, name, saved[name])


def meta_inputs(task):
    """The task's inputs as meta tensors (shapes and dtypes, no memory) for the lazy-build probe."""
    import torch
    torch.manual_seed(0)
    with torch.device("meta"):
        values = list(task.get_inputs())
    return [v.to("meta") if isinstance(v, torch.Tensor) else v for v in values]
