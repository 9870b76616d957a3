// Lean stand-in for <c10/util/Exception.h> (src/mooreeval/compile/lean/include/mooreeval_lean/tensor.h).
#pragma once
#include "mooreeval_lean/tensor.h"
