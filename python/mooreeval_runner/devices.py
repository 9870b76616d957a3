"""The runner's accelerator back ends: cuda (torch.cuda) and musa (torch_musa's torch.musa, which mirrors
it). Every device-specific call of the runner goes through here, so a device string "musa:N" works
wherever "cuda:N" does.

What MUSA offers for each step the harness takes on CUDA (torch_musa 2.9 mirrors the torch.cuda API):
  set_device / synchronize / empty_cache .... torch.musa.*; synchronize is device-wide as on CUDA
  events (benchmark timing) ................. torch.musa.Event(enable_timing=True), elapsed_time in ms
  L2 flush .................................. get_device_properties(d).L2_cache_size where torch_musa
                                              reports it, else 64 MiB assumed (same fallback as CUDA)
  device-side input draws ................... `with torch.device("musa:N")` factory calls
  NaN poisoning of the caching allocator .... yes (torch_musa's caching allocator reuses freed blocks)
  TF32 off .................................. torch.backends.mudnn.allow_tf32 (matmul and conv together)
  side-stream detection (profiler) .......... not on MUSA: torch.profiler has no MUSA kernel activity we
                                              can read streams from; the static side-stream rules still run
  CUDA-written candidates ................... torchada (when installed) redirects torch.cuda / "cuda"
                                              device strings to MUSA, as the lesson runs its CUDA dataset
"""
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess


def kind(device):
    """'cpu', 'cuda' or 'musa' for a device string such as 'cuda:0'."""
    return device.split(":", 1)[0]


def is_gpu(device):
    return kind(device) in ("cuda", "musa")


def module(device):
    """torch.cuda or torch.musa: the device module of an accelerator device string."""
    import torch
    if kind(device) == "musa":
        _import_torch_musa()
        return torch.musa
    return torch.cuda


def _import_torch_musa():
    try:
        import torch_musa  # noqa: F401  (registers the musa device and torch.musa)
    except ImportError as e:
        raise RuntimeError("the musa backend needs torch_musa in the runner's Python: %s" % e) from e
    if importlib.util.find_spec("torchada") is not None:
        import torchada  # noqa: F401  (CUDA-written candidates: torch.cuda and "cuda" run on MUSA)


def setup(device):
    """Checks the device is there and makes it current (a no-op on cpu)."""
    if not is_gpu(device):
        return
    mod = module(device)
    if not mod.is_available():
        raise RuntimeError("%s backend requested but torch sees no %s device" % (kind(device), kind(device).upper()))
    mod.set_device(device)
    _sleep_fn(device)  # bound before any candidate code runs (timing.py's head start)


def synchronize(device):
    if is_gpu(device):
        module(device).synchronize()


def empty_cache(device):
    if is_gpu(device):
        module(device).empty_cache()


def timing_event(device):
    return module(device).Event(enable_timing=True)


_SLEEP_FN = {}  # device kind -> torch.cuda._sleep (or torch.musa's), bound by setup()
_SLEEP_CYCLES_PER_S = {}


def _sleep_fn(device):
    """The device module's _sleep as it was first seen: setup() binds it before any candidate code runs,
    so a candidate that patches torch.cuda._sleep later does not reach the head start."""
    key = kind(device)
    if key not in _SLEEP_FN:
        _SLEEP_FN[key] = getattr(module(device), "_sleep", None)
    return _SLEEP_FN[key]


def sleep_cycles(device, seconds):
    """Cycles of device_sleep that last about `seconds`, from a one-off calibration per process (a
    1M-cycle sleep timed by events); 0 where the device module has no _sleep (no head start)."""
    sleep = _sleep_fn(device)
    if sleep is None:
        return 0
    key = kind(device)
    if key not in _SLEEP_CYCLES_PER_S:
        start, end = timing_event(device), timing_event(device)
        sleep(1000)  # first use: module load outside the timed interval
        start.record()
        sleep(1000000)
        end.record()
        end.synchronize()
        _SLEEP_CYCLES_PER_S[key] = 1000000 / max(start.elapsed_time(end) * 1e-3, 1e-9)
    return int(seconds * _SLEEP_CYCLES_PER_S[key])


def device_sleep(device, cycles):
    """A kernel on the current stream that spins for `cycles` clock cycles."""
    _sleep_fn(device)(cycles)


def l2_cache_bytes(device):
    return getattr(module(device).get_device_properties(device), "L2_cache_size", 64 << 20)


def disable_tf32():
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    mudnn = getattr(torch.backends, "mudnn", None)
    if mudnn is not None and hasattr(mudnn, "allow_tf32"):
        mudnn.allow_tf32 = False


def profiles_kernels(device):
    """Whether the kernel profile (side streams, decoy kernels) can run on this device."""
    return kind(device) == "cuda"


# --- The MUSA toolchain profile (torch_musa.utils.musa_extension's JIT build, see docs/musa.md) ---

def find_musa_home():
    """torch_musa's _find_musa_home order: MUSA_HOME, MUSA_PATH, the mcc on PATH, /usr/local/musa."""
    home = os.environ.get("MUSA_HOME") or os.environ.get("MUSA_PATH")
    if not home:
        mcc = shutil.which("mcc")
        if mcc:
            home = os.path.dirname(os.path.dirname(os.path.realpath(mcc)))
        elif os.path.isdir("/usr/local/musa"):
            home = "/usr/local/musa"
    return home or ""


def _sdk_version(musa_home, mcc):
    """The MUSA SDK version: $MUSA_HOME/version.txt (or version.json) when the SDK has one, else the
    first x.y.z that `mcc --version` prints."""
    for name in ("version.txt", "version.json"):
        path = os.path.join(musa_home, name)
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                found = re.search(r"(\d+\.\d+\.\d+)", f.read())
            if found:
                return found.group(1)
    try:
        out = subprocess.run([mcc, "--version"], capture_output=True, text=True, timeout=30)
        found = re.search(r"(\d+\.\d+\.\d+)", out.stdout + out.stderr)
        return found.group(1) if found else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def _torch_musa_location():
    """(package dir, version) of torch_musa without importing it (importing needs the MUSA driver)."""
    spec = importlib.util.find_spec("torch_musa")
    if spec is None or not spec.submodule_search_locations:
        return "", ""
    pkg = list(spec.submodule_search_locations)[0]
    version = ""
    try:
        version = importlib.metadata.version("torch_musa")
    except Exception:  # noqa: BLE001  (a source checkout has no dist-info: read version.py)
        path = os.path.join(pkg, "version.py")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                found = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", f.read())
            version = found.group(1) if found else ""
    return pkg, version


SUPPORTED_ARCHES = ("10", "21", "22", "31", "32")  # torch_musa's _get_musa_arch_flags


def _arch_flags(torch_musa_importable):
    """--offload-arch=mp_XX: TORCH_MUSA_ARCH_LIST ("22;31") or the visible devices' capability."""
    listed = os.environ.get("TORCH_MUSA_ARCH_LIST")
    arches = listed.split(";") if listed else []
    if not arches and torch_musa_importable:
        import torch
        for i in range(torch.musa.device_count()):
            major, minor = torch.musa.get_device_capability(i)
            arches.append("%d%d" % (major, minor))
    bad = [a for a in arches if a not in SUPPORTED_ARCHES]
    if bad:
        raise RuntimeError("unknown MUSA arch %s (torch_musa supports mp_%s)" % (bad, ", mp_".join(SUPPORTED_ARCHES)))
    return ["--offload-arch=mp_%s" % a for a in sorted(set(arches))]


def musa_profile():
    """What the build stage needs for --backend musa, or what is missing. Paths and flags follow
    torch_musa.utils.musa_extension (include_paths(musa=True), _prepare_ldflags(with_musa=True),
    COMMON_MCC_FLAGS = [], -std=c++17), derived from the install's layout so the probe needs no MUSA
    driver; where torch_musa imports, its own functions are asked too and a difference is an error."""
    import sysconfig
    import torch
    profile = {"missing": []}
    home = find_musa_home()
    mcc = os.environ.get("PYTORCH_MCC") or (os.path.join(home, "bin", "mcc") if home else "")
    if not home:
        profile["missing"].append("the MUSA SDK (no MUSA_HOME / MUSA_PATH, no mcc on PATH, no /usr/local/musa)")
    elif not os.path.isfile(mcc):
        profile["missing"].append("mcc (MUSA compiler) at %s" % mcc)
    pkg, tm_version = _torch_musa_location()
    if not pkg:
        profile["missing"].append("torch_musa in the runner's Python (pip install torch_musa)")
    available, device_names, importable = False, [], False
    if pkg:
        try:
            _import_torch_musa()
            available = torch.musa.is_available()
            device_names = [torch.musa.get_device_name(i) for i in range(torch.musa.device_count())]
            importable = True
        except Exception as e:  # noqa: BLE001  (no driver: the build can still be described)
            profile["import_error"] = str(e)[:300]
    root = os.path.dirname(pkg) if pkg else ""
    lib_dir = "lib64" if not home or os.path.exists(os.path.join(home, "lib64")) or \
        not os.path.exists(os.path.join(home, "lib")) else "lib"
    torch_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    includes = ["/usr/local/musa/include"] + [os.path.join(root, p) for p in (
        "torch_musa/share/generated_cuda_compatible/aten/src",
        "torch_musa/share/generated_cuda_compatible/include",
        "torch_musa/share/generated_cuda_compatible/include/torch/csrc/api/include",
        "torch_musa/share/torch_musa_codegen")] + [root, os.path.join(home, "include")]
    ldflags = ["-L" + torch_lib, "-lc10", "-ltorch_cpu", "-L" + os.path.join(pkg, "lib"), "-ltorch",
               "-ltorch_python", "-lmusa_python", "-lmusa_kernels", "-L" + os.path.join(home, lib_dir), "-lmusart"]
    ldflags_cpu = ["-L" + torch_lib, "-lc10", "-ltorch_cpu", "-ltorch", "-ltorch_python", "-lmusa_python",
                   "-lmusa_kernels"]
    mudnn = os.environ.get("MUDNN_HOME") or os.environ.get("MUDNN_PATH")
    if mudnn:
        includes.append(os.path.join(mudnn, "include"))
        ldflags.append("-L" + os.path.join(mudnn, "lib64"))
    profile.update({
        "musa_home": home, "mcc": mcc if os.path.isfile(mcc) else "", "sdk_version": _sdk_version(home, mcc)
        if os.path.isfile(mcc) else "", "torch_musa_version": tm_version, "torch_musa_dir": pkg,
        "include_paths": includes if pkg and home else [], "ldflags": ldflags if pkg and home else [],
        "ldflags_cpu": ldflags_cpu if pkg else [],
        "mcc_flags": [], "cxx_std": "c++17", "python_include": sysconfig.get_path("include", scheme="posix_prefix"),
        "arch_flags": _arch_flags(importable), "available": available, "device_names": device_names,
    })
    if importable and pkg and home:
        _cross_check(profile)
    return profile


def _cross_check(profile):
    """On a real install, torch_musa's own answers must equal the derived ones."""
    from torch_musa.utils import musa_extension as me
    theirs = {"include_paths": list(me.include_paths(True)),
              "ldflags": list(me._prepare_ldflags([], True, False, False)),
              "ldflags_cpu": list(me._prepare_ldflags([], False, False, False)),
              "mcc_flags": list(me.COMMON_MCC_FLAGS)}
    for key, value in theirs.items():
        if value != profile[key]:
            raise RuntimeError("torch_musa %s's musa_extension gives %s = %s, MooreEval derived %s: update "
                               "python/mooreeval_runner/devices.py" % (profile["torch_musa_version"], key, value,
                                                                      profile[key]))


# --- torch_musa's load_inline, seen by the harness as torch's ---

def musa_extension_module():
    """torch_musa.utils.musa_extension when torch_musa is installed and imports here, else None (on
    machines without torch_musa nothing is imported)."""
    if importlib.util.find_spec("torch_musa") is None:
        return None
    try:
        from torch_musa.utils import musa_extension
        return musa_extension
    except Exception:  # noqa: BLE001  (no driver in this process: a candidate importing it fails alike)
        return None


def musa_load_inline_adapter(load_inline):
    """torch_musa's load_inline signature (musa_sources, extra_musa_cflags, with_musa) mapped onto torch's,
    so a native MUSA submission is recorded and served like a CUDA one (its musa_sources are the spec's
    device sources; the musa build compiles them with mcc)."""
    def adapted(name, cpp_sources, musa_sources=None, sycl_sources=None, functions=None, extra_cflags=None,
                extra_musa_cflags=None, extra_sycl_cflags=None, extra_ldflags=None, extra_include_paths=None,
                build_directory=None, verbose=False, with_musa=None, with_sycl=None, is_python_module=True,
                with_pytorch_error_handling=True, keep_intermediates=True, use_pch=False):
        return load_inline(name, cpp_sources, cuda_sources=musa_sources, sycl_sources=sycl_sources,
                           functions=functions, extra_cflags=extra_cflags, extra_cuda_cflags=extra_musa_cflags,
                           extra_sycl_cflags=extra_sycl_cflags, extra_ldflags=extra_ldflags,
                           extra_include_paths=extra_include_paths, build_directory=build_directory,
                           verbose=verbose, with_cuda=with_musa, with_sycl=with_sycl,
                           is_python_module=is_python_module,
                           with_pytorch_error_handling=with_pytorch_error_handling,
                           keep_intermediates=keep_intermediates, use_pch=use_pch)
    return adapted
