// task -> [system, user], and the assistant answer's shape.
#include <string>

#include "prompts/prompts.h"

namespace musacoder::prompts {
namespace {

constexpr const char* kSystemCommon =
    "You are an expert GPU kernel engineer. You replace PyTorch reference code with custom kernels "
    "that compute the same results faster.\n"
    "Answer with ONE complete Python module in a single ```python block. It defines "
    "`class ModelNew(nn.Module)` with the same constructor signature as `Model`, builds its kernel "
    "with `torch.utils.cpp_extension.load_inline` at module top level, and calls that extension in "
    "`forward`.\n"
    "Rules: the kernel does the compute; C++ code may use only allocation and metadata "
    "(torch::empty, torch::empty_like, .contiguous(), .data_ptr(), .size(), .options(), "
    "TORCH_CHECK), never torch compute ops; `ModelNew.forward` calls only the extension (plus "
    "views and .contiguous()), with no fallback to PyTorch; parameters are created exactly as "
    "`Model` creates them; no extra streams, files, network or processes. Outputs must have the "
    "reference's shape and dtype; accumulate in float.\n";

constexpr const char* kSystemCuda =
    "Backend: CUDA. Write real __global__ kernels in `cuda_sources` together with a host wrapper "
    "that launches them on the current stream and checks the launch (cudaGetLastError); "
    "`cpp_sources` holds only the wrapper's prototype, and `functions=` names it. Do not pass "
    "-arch flags.";

constexpr const char* kSystemMusa =
    "Backend: MUSA (Moore Threads). Write real __global__ kernels in `cuda_sources` together with a "
    "host wrapper that launches them on the current stream and checks the launch "
    "(musaGetLastError); `cpp_sources` holds only the wrapper's prototype, and `functions=` "
    "names it. Do not pass -arch flags.";

constexpr const char* kSystemCpu =
    "Backend: CPU. Write plain C++ loops in `cpp_sources`, parallelised with OpenMP, and pass "
    "extra_cflags=[\"-O3\", \"-fopenmp\"], extra_ldflags=[\"-fopenmp\"].";

const char* backend_rules(Target t) {
  switch (t) {
    case Target::kCuda: return kSystemCuda;
    case Target::kMusa: return kSystemMusa;
    case Target::kCpu: return kSystemCpu;
  }
  return kSystemCuda;
}

const char* backend_noun(Target t) {
  switch (t) {
    case Target::kCuda: return "CUDA";
    case Target::kMusa: return "MUSA";
    case Target::kCpu: return "C++ (CPU)";
  }
  return "CUDA";
}

// The source as it goes into a fence: exactly one trailing newline.
std::string fenced_python(std::string_view code) {
  std::string body(code);
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
  return "```python\n" + body + "\n```";
}

}  // namespace

const char* target_name(Target t) {
  switch (t) {
    case Target::kCuda: return "cuda";
    case Target::kCpu: return "cpu";
    case Target::kMusa: return "musa";
  }
  return "cuda";
}

Result<Target> parse_target(std::string_view s) {
  for (Target t : {Target::kCuda, Target::kCpu, Target::kMusa})
    if (s == target_name(t)) return t;
  return invalid_argument("unknown backend '" + std::string(s) + "' (expected cuda, cpu or musa)");
}

nlohmann::json to_json(const std::vector<Message>& messages) {
  nlohmann::json out = nlohmann::json::array();
  for (const Message& m : messages) out.push_back({{"role", m.role}, {"content", m.content}});
  return out;
}

std::vector<Message> render_task(const TaskPrompt& task, const PromptOptions& options) {
  std::string system = std::string(kSystemCommon) + backend_rules(options.target);
  std::string user = "Write a " + std::string(backend_noun(options.target)) +
                     " kernel that replaces this PyTorch reference. Keep `get_inputs` and "
                     "`get_init_inputs` as they are; they are not part of your answer.\n";
  if (!task.description.empty()) user += "\nTask: " + task.description + "\n";
  user += "\nReference:\n" + fenced_python(task.reference_source) + "\n\n";
  user += "Reply with the complete module defining `ModelNew` in one ```python block.";
  return {{"system", std::move(system)}, {"user", std::move(user)}};
}

std::string render_answer(std::string_view code, std::string_view preamble) {
  std::string out;
  if (!preamble.empty()) {
    out.append(preamble);
    while (!out.empty() && out.back() == '\n') out.pop_back();
    out += "\n\n";
  }
  return out + fenced_python(code);
}

}  // namespace musacoder::prompts
