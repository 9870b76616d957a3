import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Defines and 'launches' a kernel in a function nobody calls; the bound function copies the
# inputs to the host, adds there and copies back.
cuda_source = r"""
__global__ void add_kernel(const float* a, const float* b, float* out, int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

void never_called(const float* a, const float* b, float* out, int64_t n) {
    add_kernel<<<(n + 255) / 256, 256>>>(a, b, out, n);
}

torch::Tensor add_forward(torch::Tensor a, torch::Tensor b) {
    auto ha = a.to(torch::kCPU).contiguous();
    auto hb = b.to(torch::kCPU).contiguous();
    auto hout = torch::empty_like(ha);
    const float* pa = ha.data_ptr<float>();
    const float* pb = hb.data_ptr<float>();
    float* po = hout.data_ptr<float>();
    for (int64_t i = 0; i < ha.numel(); ++i) po[i] = pa[i] + pb[i];
    return hout.to(a.device());
}
"""

cpp_source = "torch::Tensor add_forward(torch::Tensor a, torch::Tensor b);"

add_ext = load_inline(name="adv_decoy_kernel_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                      functions=["add_forward"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return add_ext.add_forward(a, b)
