// Lean stand-in for <ATen/Tensor.h> (src/mooreeval/compile/lean/include/mooreeval_lean/tensor.h).
#pragma once
#include "mooreeval_lean/tensor.h"
