// The full build for --backend musa: exactly what torch_musa.utils.musa_extension.load_inline runs (the
// JIT path; flags from the probe's MUSA profile), after porting the sources CUDA -> MUSA with torchada's
// rules (src/musa) as torchada's load_inline does, so candidates written for CUDA build for MUSA too.
//
//   c++  -DTORCH_EXTENSION_NAME=<name> -DTORCH_API_INCLUDE_EXTENSION_H <pybind11 ABI> -I<user>...
//        -isystem <include_paths(musa=True)>... -isystem <python> <glibcxx ABI> -fPIC -std=c++17
//        <extra_cflags> -c main.cpp -o main.o
//   mcc  <same -D/-I/-isystem> <COMMON_MCC_FLAGS> -fPIC <extra_musa_cflags> [-std=c++17]
//        -c musa.mu -o musa.musa.o --offload-arch=mp_XX
//   c++  main.o musa.musa.o -shared <extra_ldflags> <_prepare_ldflags(with_musa=True)> -o <name>.so
//
// Differences from torch_musa, on purpose: no -MD/-MF depfiles (there is no ninja to read them; the CUDA
// path leaves them out too), and the device's --offload-arch as MUSAExtension adds it (the JIT path leaves
// the arch to mcc's default); cpp_sources are ported too (torchada ports only the CUDA sources).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "mooreeval/compile/compile_steps.h"
#include "mooreeval/compile/extension_spec.h"
#include "mooreeval/compile/toolchain.h"

namespace musacoder::build {

// main.cpp and musa.mu as torch_musa's load_inline writes them, from the ported sources.
std::string generated_musa_cpp_source(const ExtensionSpec& spec);
std::string generated_musa_source(const ExtensionSpec& spec);

// The compile steps then the link (last). Requires toolchain.musa.mcc (see musa_unavailable_reason).
std::vector<CompileStep> musa_build_steps(const ExtensionSpec& spec, const Toolchain& toolchain,
                                          const std::filesystem::path& dir, const std::filesystem::path& library);

}  // namespace musacoder::build
