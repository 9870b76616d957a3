// What a lean entry point hands back to the shim (see bindings.h): shared by the lean side
// and the shim, so it depends on nothing but the C boundary.
#pragma once

#include <cstdint>
#include <vector>

#include "mooreeval_lean/abi.h"

namespace mooreeval_lean::binding {

struct Result {
  char kind = 'v';                    // the return code of the signature
  mc_lean_impl tensor = nullptr;      // 'T' (owned)
  std::vector<mc_lean_impl> tensors;  // 'V', 'U' (owned)
  double d = 0.0;                     // 'd'
  int64_t l = 0;                      // 'l', 'b'
};

}  // namespace mooreeval_lean::binding
