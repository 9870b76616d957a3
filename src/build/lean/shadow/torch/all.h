// Lean stand-in for <torch/all.h> (src/build/lean/include/mooreeval_lean/tensor.h).
#pragma once
#include "mooreeval_lean/tensor.h"
