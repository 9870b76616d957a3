// The full build: exactly the compile and link commands torch.utils.cpp_extension's JIT
// builder runs for a load_inline call (flags from the toolchain probe), and its cache key.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "mooreeval/compile/compile_steps.h"
#include "mooreeval/compile/extension_spec.h"
#include "mooreeval/compile/toolchain.h"

namespace musacoder::build {

// g++ main.cpp (and nvcc cuda.cu when there are CUDA sources), then the link as the last
// element. The sources must already be written in `dir`.
std::vector<CompileStep> full_build_steps(const ExtensionSpec& spec, const Toolchain& toolchain,
                                          const std::filesystem::path& dir,
                                          const std::filesystem::path& library);

// Identifies the built library: generated sources, flags, toolchain, backend.
std::string full_cache_key(const ExtensionSpec& spec, const Toolchain& toolchain, Backend backend);

// -D, -I and -isystem flags load_inline passes to both compilers.
std::vector<std::string> common_cflags(const ExtensionSpec& spec, const Toolchain& toolchain, bool cuda);

}  // namespace musacoder::build
