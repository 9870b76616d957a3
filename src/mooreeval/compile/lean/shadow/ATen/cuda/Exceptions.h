// Lean stand-in for <ATen/cuda/Exceptions.h> (src/mooreeval/compile/lean/include/mooreeval_lean/cuda.h).
#pragma once
#ifndef MOOREEVAL_LEAN_CUDA
#error "<ATen/cuda/Exceptions.h> needs a CUDA build (the lean build path falls back to the full build)"
#endif
#include "mooreeval_lean/tensor.h"
