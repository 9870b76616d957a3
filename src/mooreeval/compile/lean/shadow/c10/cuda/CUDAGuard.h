// Lean stand-in for <c10/cuda/CUDAGuard.h> (src/mooreeval/compile/lean/include/mooreeval_lean/cuda.h).
#pragma once
#ifndef MOOREEVAL_LEAN_CUDA
#error "<c10/cuda/CUDAGuard.h> needs a CUDA build (the lean build path falls back to the full build)"
#endif
#include "mooreeval_lean/tensor.h"
