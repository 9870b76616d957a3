// One load_inline call as the build stage sees it, and the sources load_inline would
// generate from it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace musacoder::build {

// One load_inline call, as recorded by the runner's inspect mode.
struct ExtensionSpec {
  std::string name;
  std::vector<std::string> cpp_sources, cuda_sources;
  bool has_functions = false;
  std::vector<std::pair<std::string, std::string>> functions;  // name -> docstring
  std::vector<std::string> extra_cflags, extra_cuda_cflags, extra_ldflags, extra_include_paths;
  int with_cuda = -1;  // -1: decide from cuda_sources (load_inline's None)
  bool with_pytorch_error_handling = true;
  bool no_implicit_headers = false;
};

// The flags come out as the build's words, the way load_inline's ninja command line splits them:
// each extra_*flags entry is split at whitespace and empty entries vanish (KernelBench's own example
// passes extra_cflags=[""], which PyTorch builds fine).
Result<ExtensionSpec> extension_spec_from_json(const nlohmann::json& j);

// The generated main.cpp / cuda.cu texts, exactly as load_inline writes them.
std::string generated_cpp_source(const ExtensionSpec& spec);
std::string generated_cuda_source(const ExtensionSpec& spec);

// Whether the extension is built with CUDA (load_inline's with_cuda=None rule).
bool uses_cuda(const ExtensionSpec& spec);

}  // namespace musacoder::build
