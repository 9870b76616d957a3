"""Toolchain profile: everything the C++ build stage needs to compile a load_inline
extension exactly as torch.utils.cpp_extension would, without importing torch per build."""
import inspect
import os
import re
import shutil
import sys
import sysconfig


def _cxx_std(cpp_extension):
    """The -std flag torch's JIT builder passes (c++17 before torch 2.10, c++20 after)."""
    try:
        src = inspect.getsource(cpp_extension._write_ninja_file_to_build_library)
        found = re.findall(r"-std=(c\+\+\d\d)", src)
        if found:
            return found[0]
    except (OSError, TypeError, AttributeError):
        pass
    return "c++17"


def _ldflags(cpp_extension, with_cuda):
    prepare = cpp_extension._prepare_ldflags
    params = list(inspect.signature(prepare).parameters)
    kwargs = {"extra_ldflags": [], "with_cuda": with_cuda, "verbose": False, "is_standalone": False}
    if "with_sycl" in params:
        kwargs["with_sycl"] = False
    return prepare(**{k: v for k, v in kwargs.items() if k in params})


def run(job):
    import torch
    import torch.utils.cpp_extension as cpp_extension

    cuda_available = torch.cuda.is_available()
    cuda_home = cpp_extension.CUDA_HOME
    nvcc = os.environ.get("PYTORCH_NVCC") or (os.path.join(cuda_home, "bin", "nvcc") if cuda_home else "")
    capabilities = []
    device_names = []
    if cuda_available:
        for i in range(torch.cuda.device_count()):
            capabilities.append("%d.%d" % torch.cuda.get_device_capability(i))
            device_names.append(torch.cuda.get_device_name(i))
    abi_flags = []
    if hasattr(cpp_extension, "_get_pybind11_abi_build_flags"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            abi_flags = list(cpp_extension._get_pybind11_abi_build_flags())
    glibcxx_flags = []
    if hasattr(cpp_extension, "_get_glibcxx_abi_build_flags"):
        glibcxx_flags = list(cpp_extension._get_glibcxx_abi_build_flags())
    else:
        glibcxx_flags = ["-D_GLIBCXX_USE_CXX11_ABI=%d" % int(torch._C._GLIBCXX_USE_CXX11_ABI)]
    profile = {
        "status": "ok",
        "python": sys.executable,
        "python_version": sys.version.split()[0],
        "python_include": sysconfig.get_path("include", scheme="posix_prefix"),
        "torch_version": torch.__version__,
        "torch_cuda_version": torch.version.cuda or "",
        "cxx": os.environ.get("CXX", "c++"),
        "cxx_std": _cxx_std(cpp_extension),
        "include_paths_cpu": cpp_extension.include_paths("cpu"),
        "include_paths_cuda": cpp_extension.include_paths("cuda") if cuda_home else [],
        "abi_flags": abi_flags + glibcxx_flags,
        "ldflags_cpu": _ldflags(cpp_extension, False),
        "ldflags_cuda": _ldflags(cpp_extension, True) if cuda_home else [],
        "nvcc_common_flags": list(cpp_extension.COMMON_NVCC_FLAGS),
        "cuda_home": cuda_home or "",
        "nvcc": nvcc if nvcc and shutil.which(nvcc) else "",
        "cuda_available": cuda_available,
        "device_capabilities": capabilities,
        "device_names": device_names,
        "lib_ext": ".so",
        "musa": _musa(),
    }
    return profile


def _musa():
    """The MUSA side (devices.musa_profile), or what went wrong as the missing piece."""
    from . import devices
    try:
        return devices.musa_profile()
    except Exception as e:  # noqa: BLE001  (never breaks the cpu/cuda probe)
        return {"missing": ["a usable MUSA profile: %s" % e]}
