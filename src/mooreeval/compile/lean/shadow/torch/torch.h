// Lean stand-in for <torch/torch.h> (src/mooreeval/compile/lean/include/mooreeval_lean/tensor.h).
#pragma once
#include "mooreeval_lean/tensor.h"
