#include "model/swiglu.h"

#include <torch/torch.h>

#ifdef MUSACODER_HAVE_CUDA_KERNELS
#include "model/swiglu_cuda.h"
#endif

namespace musacoder::model {

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up, bool fused) {
#ifdef MUSACODER_HAVE_CUDA_KERNELS
  if (fused && detail::cuda_swiglu_takes(gate, up)) return detail::cuda_swiglu(gate, up);
#else
  (void)fused;
#endif
  return torch::silu(gate) * up;
}

}  // namespace musacoder::model
