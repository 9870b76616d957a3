import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
// out (B, OUT) = x (B, IN) @ W^T + b, with W (OUT, IN) as nn.Linear stores it.
torch::Tensor linear_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto bc = bias.contiguous();
    TORCH_CHECK(xc.sizes().size() == 2 && wc.sizes().size() == 2, "linear: expected 2-D x and weight");
    const int64_t batch = xc.size(0), in = xc.size(1), outf = wc.size(0);
    TORCH_CHECK(wc.size(1) == in && bc.size(0) == outf, "linear: shape mismatch");
    auto out = torch::empty({batch, outf}, xc.options());
    const float* px = xc.data_ptr<float>();
    const float* pw = wc.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    #pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < batch; ++b) {
        for (int64_t o = 0; o < outf; ++o) {
            const float* xrow = px + b * in;
            const float* wrow = pw + o * in;
            float acc = 0.0f;
            for (int64_t p = 0; p < in; ++p) acc += xrow[p] * wrow[p];
            acc += pb[o];
            po[b * outf + o] = acc;
        }
    }
    return out;
}
"""

linear_ext = load_inline(
    name="ref_cpu_matmul_linear",
    cpp_sources=cpp_source,
    functions=["linear_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear_ext.linear_forward(x, self.fc.weight, self.fc.bias)
