// Lean stand-in for <ATen/core/Tensor.h> (src/build/lean/include/mooreeval_lean/tensor.h).
#pragma once
#include "mooreeval_lean/tensor.h"
