#include "kernelbench/prompt_template.h"

#include "core/text.h"

namespace musacoder::kernelbench {
namespace {

// Our own worked example (an elementwise product, written for this project).
constexpr const char* kExampleReference = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a * b

def get_inputs():
    return [torch.randn(4096), torch.randn(4096)]

def get_init_inputs():
    return []
)";

constexpr const char* kExampleAnswer = R"(import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>

__global__ void mul_kernel(const float* a, const float* b, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] * b[i];
}

torch::Tensor mul(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty_like(a);
    int64_t n = a.numel();
    int threads = 256;
    mul_kernel<<<(n + threads - 1) / threads, threads>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                                        out.data_ptr<float>(), n);
    return out;
}
"""

ext = load_inline(name="mul_ext", cpp_sources="torch::Tensor mul(torch::Tensor a, torch::Tensor b);",
                  cuda_sources=source, functions=["mul"])

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.mul(a.contiguous(), b.contiguous())
)";

std::string kernel_words(prompts::Target t) {
  switch (t) {
    case prompts::Target::kCpu: return "C++ CPU kernels";
    case prompts::Target::kMusa: return "MUSA kernels";
    case prompts::Target::kCuda: break;
  }
  return "CUDA kernels";
}

std::string kernelbench_style(const SuiteTask& task, prompts::Target target) {
  const std::string k = kernel_words(target);
  std::string s;
  s += "Your job is to speed up a PyTorch model by writing custom " + k +
       " for some or all of its operators. Which operators you replace is up to you: you may fuse several "
       "into one kernel (say a matmul with the activation after it) or change the algorithm (an online "
       "softmax, for one).\n\n";
  s += "Here is an example. The model:\n\n```python\n" + std::string(kExampleReference) + "```\n\n";
  s += "A rewrite with an inline extension:\n\n```python\n" + std::string(kExampleAnswer) + "```\n\n";
  s += "Now the model to optimise:\n\n```python\n" + task.source + (task.source.ends_with("\n") ? "" : "\n") + "```\n\n";
  s += "Write the optimised architecture as a class named ModelNew using custom " + k +
       ". Answer with the complete code in one code block: real, compilable, working code, not pseudocode, "
       "with no test code and no other text.\n";
  return s;
}

}  // namespace

const char* prompt_template_name(PromptTemplate t) {
  return t == PromptTemplate::kKernelBench ? "kernelbench" : "musacoder";
}

Result<PromptTemplate> parse_prompt_template(std::string_view s) {
  if (s == "musacoder") return PromptTemplate::kMusacoder;
  if (s == "kernelbench") return PromptTemplate::kKernelBench;
  return invalid_argument("unknown prompt template '" + std::string(s) + "' (musacoder, kernelbench)");
}

std::vector<prompts::Message> first_turn(const SuiteTask& task, PromptTemplate t, const prompts::PromptOptions& o) {
  if (t == PromptTemplate::kKernelBench) return {{"user", kernelbench_style(task, o.target)}};
  return prompts::render_task({task.source, task.description}, o);
}

std::string conversation_hash(const std::vector<prompts::Message>& conversation) {
  return sha256_hex(prompts::to_json(conversation).dump());
}

}  // namespace musacoder::kernelbench
