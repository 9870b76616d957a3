#include "mooreeval/legality/legality.h"

#include <regex>

namespace musacoder::legality {

std::set<std::string> LegalityOptions::default_allowed_ops() {
  return {
      // allocation and filling
      "empty",
      "empty_like",
      "empty_strided",
      "new_empty",
      "new_empty_strided",
      "zeros",
      "zeros_like",
      "zero_",
      "ones",
      "ones_like",
      "full",
      "full_like",
      "fill_",
      "new_zeros",
      "new_ones",
      "new_full",
      "scalar_tensor",
      "lift_fresh",
      // views and metadata
      "view",
      "_unsafe_view",
      "reshape",
      "as_strided",
      "expand",
      "permute",
      "transpose",
      "t",
      "squeeze",
      "unsqueeze",
      "flatten",
      "unflatten",
      "select",
      "slice",
      "narrow",
      "split",
      "split_with_sizes",
      "chunk",
      "unbind",
      "alias",
      "detach",
      "view_as",
      "expand_as",
      "resize_",
      "sym_size",
      "sym_stride",
      "sym_numel",
      "sym_storage_offset",
      "is_contiguous",
      "_local_scalar_dense",
      // data movement (no arithmetic)
      "clone",
      "copy_",
      "_to_copy",
      "contiguous",
      "to",
  };
}

std::vector<Finding> findings_from_inspection(const nlohmann::json& findings) {
  std::vector<Finding> out;
  if (!findings.is_array()) return out;
  for (const auto& f : findings) {
    if (!f.is_object()) continue;
    out.push_back({f.value("rule", "unknown"), f.value("message", ""), f.value("line", 0)});
  }
  return out;
}

std::vector<Finding> check_extension_sources(const std::vector<build::ExtensionSpec>& specs,
                                             build::Backend backend) {
  std::vector<Finding> out;
  if (specs.empty()) {
    out.push_back({"no_kernel", "the candidate builds no extension", 0});
    return out;
  }
  if (backend == build::Backend::kCpu) return out;
  static const std::regex global_kernel(R"(__global__\s+[\w\s:<>,*&]*?\b(\w+)\s*\()");
  static const std::regex launch(R"(<<<|cudaLaunchKernel|cuLaunchKernel|musaLaunchKernel)");
  bool any_kernel = false, any_launch = false;
  for (const auto& s : specs) {
    for (const auto& src : s.cuda_sources) {
      any_kernel |= std::regex_search(src, global_kernel);
      any_launch |= std::regex_search(src, launch);
    }
  }
  if (!any_kernel)
    out.push_back({"no_device_kernel", "no __global__ kernel in the CUDA sources", 0});
  else if (!any_launch)
    out.push_back({"kernel_not_launched", "the CUDA sources never launch a kernel", 0});
  return out;
}

std::vector<Finding> findings_from_run(const nlohmann::json& findings, bool reference_mutates_inputs,
                                       const LegalityOptions& options) {
  std::vector<Finding> out;
  if (!options.check_runtime_behaviour) return out;
  for (auto& f : findings_from_inspection(findings)) {
    if (f.rule == "input_mutation" && reference_mutates_inputs) continue;
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> check_dispatched_ops(const std::map<std::string, int>& ops,
                                          const LegalityOptions& options) {
  std::vector<Finding> out;
  if (!options.check_runtime_ops) return out;
  for (const auto& [op, count] : ops) {
    if (options.allowed_torch_ops.count(op)) continue;
    out.push_back({"torch_compute_op",
                   "forward dispatched aten::" + op + " (" + std::to_string(count) +
                       "x): PyTorch compute instead of the candidate's kernel",
                   0});
  }
  return out;
}

std::string describe(const std::vector<Finding>& findings) {
  std::string s;
  for (const auto& f : findings) {
    if (!s.empty()) s += "; ";
    s += f.rule + ": " + f.message;
    if (f.line > 0) s += " (line " + std::to_string(f.line) + ")";
  }
  return s;
}

}  // namespace musacoder::legality
