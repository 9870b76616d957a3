// Program -> KernelBench task module (Model, get_inputs, get_init_inputs) and its sidecar JSON
// (difficulty, trials, tolerances, dtype, description). docs/tasks.md describes the format.
#pragma once

#include <string>

#include "data/program.h"

namespace musacoder::data {

struct Tolerance {
  double rtol = 1e-3, atol = 1e-3;
};

// Tolerances for a program's dtype: float32 1e-3 (the verifier's default); float16 1e-2 and
// bfloat16 3e-2, where a kernel that rounds exactly as PyTorch does after every op can still
// differ by an ulp or two through libm and accumulation order.
Tolerance tolerance(const Program& p);

// One line for the sidecar, reports and the prompt: "conv2d+relu on float16 (2, 16, 32, 32)".
std::string describe(const Program& p);

// The task module's text (deterministic: the same program gives the same bytes).
std::string render_task_source(const Program& p);

// The body of `Model.__init__` after super().__init__(), indented 8 spaces, one line each:
// modules and parameters created from the global RNG in a fixed order. ModelNew's __init__
// repeats it, so the same seed gives it the same weights.
std::string render_init_body(const Program& p);

// The forward signature's parameters, comma-separated: "x", "x, b", "x, y0" ...
std::string forward_params(const Program& p);

// The sidecar JSON text (ends with a newline).
std::string render_sidecar(const Program& p);

// Python and C literals of a constant: "0.5"/"0.5f", "2.0"/"2.0f", "1e-05"/"1e-05f".
std::string py_float(double v);
std::string c_float(double v);

}  // namespace musacoder::data
