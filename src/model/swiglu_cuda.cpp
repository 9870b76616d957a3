#include "model/swiglu_cuda.h"

#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/torch.h>

#include "model/cuda/swiglu_kernels.h"
#include "model/kernel_dtype.h"

namespace musacoder::model::detail {
namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

void check(int err, const char* what) {
  TORCH_CHECK(err == 0, "SwiGLU CUDA kernel ", what, ": ", cudaGetErrorString(static_cast<cudaError_t>(err)));
}

cuda::Stream stream() {
  return c10::cuda::getCurrentCUDAStream().stream();
}

struct SwigluFunction : public torch::autograd::Function<SwigluFunction> {
  static Tensor forward(AutogradContext* ctx, const Tensor& gate_in, const Tensor& up_in) {
    const Tensor gate = gate_in.contiguous(), up = up_in.contiguous();
    Tensor out = torch::empty_like(gate);
    cuda::SwigluArgs a;
    a.dtype = kernel_dtype_code(gate, "swiglu"), a.n = gate.numel(), a.gate = gate.data_ptr(),
    a.up = up.data_ptr();
    a.out = out.data_ptr();
    check(cuda::swiglu_forward(a, stream()), "forward");
    ctx->save_for_backward({gate, up});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const Tensor &gate = saved[0], &up = saved[1];
    const Tensor grad = grads[0].contiguous();
    Tensor d_gate = torch::empty_like(gate), d_up = torch::empty_like(up);
    cuda::SwigluArgs a;
    a.dtype = kernel_dtype_code(gate, "swiglu"), a.n = gate.numel(), a.gate = gate.data_ptr(),
    a.up = up.data_ptr();
    a.grad = grad.data_ptr(), a.d_gate = d_gate.data_ptr(), a.d_up = d_up.data_ptr();
    check(cuda::swiglu_backward(a, stream()), "backward");
    return {d_gate, d_up};
  }
};

}  // namespace

bool cuda_swiglu_takes(const at::Tensor& gate, const at::Tensor& up) {
  const auto t = gate.scalar_type();
  return gate.is_cuda() && up.device() == gate.device() && up.sizes() == gate.sizes() &&
         up.scalar_type() == t && kernel_dtype_supported(t);
}

at::Tensor cuda_swiglu(const at::Tensor& gate, const at::Tensor& up) {
  return SwigluFunction::apply(gate, up);
}

}  // namespace musacoder::model::detail
