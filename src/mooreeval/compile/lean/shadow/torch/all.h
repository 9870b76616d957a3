// Lean stand-in for <torch/all.h> (src/mooreeval/compile/lean/include/mooreeval_lean/tensor.h).
#pragma once
#include "mooreeval_lean/tensor.h"
