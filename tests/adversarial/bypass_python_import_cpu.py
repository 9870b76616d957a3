import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Imports torch from C++ and calls torch.relu with the Python dispatch keys excluded, so the mode never sees it.
cpp_source = r"""

torch::Tensor relu_forward(torch::Tensor x) {
    c10::impl::ExcludeDispatchKeyGuard hide(
        c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
    pybind11::object torch_module = pybind11::module_::import("torch");
    return torch_module.attr("relu")(x).cast<torch::Tensor>();
}
"""

ext = load_inline(name="adv_bypass_python_import", cpp_sources=cpp_source, functions=["relu_forward"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        return ext.relu_forward(x)
