#include "mooreeval/compile/extension_spec.h"

#include <cctype>

namespace musacoder::build {

using nlohmann::json;

namespace {

// load_inline strips each flag and joins them with spaces into build.ninja, whose command line the
// shell splits into words: an empty flag vanishes and "-O3 -DX" is two flags. (Quotes are not
// interpreted here; a flag holding a quoted space is rare and then fails to compile visibly.)
std::vector<std::string> shell_words(const std::vector<std::string>& flags) {
  std::vector<std::string> words;
  for (const auto& flag : flags) {
    std::size_t i = 0;
    while (i < flag.size()) {
      while (i < flag.size() && std::isspace(static_cast<unsigned char>(flag[i]))) ++i;
      std::size_t end = i;
      while (end < flag.size() && !std::isspace(static_cast<unsigned char>(flag[end]))) ++end;
      if (end > i) words.push_back(flag.substr(i, end - i));
      i = end;
    }
  }
  return words;
}

std::vector<std::string> flag_words(const json& j, const char* key) {
  return shell_words(j.at(key).get<std::vector<std::string>>());
}

}  // namespace

Result<ExtensionSpec> extension_spec_from_json(const json& j) {
  ExtensionSpec s;
  try {
    s.name = j.at("name").get<std::string>();
    s.cpp_sources = j.at("cpp_sources").get<std::vector<std::string>>();
    s.cuda_sources = j.at("cuda_sources").get<std::vector<std::string>>();
    if (!j.at("functions").is_null()) {
      s.has_functions = true;
      for (const auto& [k, v] : j.at("functions").items()) s.functions.emplace_back(k, v.get<std::string>());
    }
    s.extra_cflags = flag_words(j, "extra_cflags");
    s.extra_cuda_cflags = flag_words(j, "extra_cuda_cflags");
    s.extra_ldflags = flag_words(j, "extra_ldflags");
    s.extra_include_paths = j.at("extra_include_paths").get<std::vector<std::string>>();
    if (!j.at("with_cuda").is_null()) s.with_cuda = j.at("with_cuda").get<bool>() ? 1 : 0;
    s.with_pytorch_error_handling = j.at("with_pytorch_error_handling").get<bool>();
    s.no_implicit_headers = j.at("no_implicit_headers").get<bool>();
  } catch (const json::exception& e) {
    return internal_error(std::string("malformed extension spec from the runner: ") + e.what());
  }
  return s;
}

std::string generated_cpp_source(const ExtensionSpec& spec) {
  std::vector<std::string> parts;
  if (!spec.no_implicit_headers) parts.push_back("#include <torch/extension.h>");
  parts.insert(parts.end(), spec.cpp_sources.begin(), spec.cpp_sources.end());
  if (spec.has_functions) {
    parts.push_back("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {");
    for (const auto& [fn, doc] : spec.functions) {
      if (spec.with_pytorch_error_handling)
        parts.push_back("m.def(\"" + fn + "\", torch::wrap_pybind_function(" + fn + "), \"" + doc + "\");");
      else
        parts.push_back("m.def(\"" + fn + "\", " + fn + ", \"" + doc + "\");");
    }
    parts.push_back("}");
  }
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "\n" : "") + parts[i];
  return out;
}

std::string generated_cuda_source(const ExtensionSpec& spec) {
  std::vector<std::string> parts;
  if (!spec.no_implicit_headers) {
    parts = {"#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"};
  }
  parts.insert(parts.end(), spec.cuda_sources.begin(), spec.cuda_sources.end());
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "\n" : "") + parts[i];
  return out;
}

bool uses_cuda(const ExtensionSpec& spec) {
  return spec.with_cuda == 1 || (spec.with_cuda == -1 && !spec.cuda_sources.empty());
}

}  // namespace musacoder::build
