// The rule-based teacher's code generator: one correct kernel per program and backend, as a
// complete submission module (load_inline + ModelNew), so a verified dataset exists with no
// model at all. The kernels follow the shapes of the bundled reference solutions
// (docs/tasks.md): fused single-pass element-wise code, block reductions with warp shuffles
// (CUDA) / double accumulation (CPU), 16x16 shared-memory tiled matmul, direct convolution.
//
// Numerics: every op computes in float and, for float16/bfloat16 programs, rounds to the
// storage type after each op exactly where PyTorch's reference rounds (between ops, not inside
// one), so a fused kernel sees the same intermediate values the reference does.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "data/program.h"

namespace musacoder::data {

enum class KernelTarget { kCpu, kCuda };

// The submission module (Python source) for `p` on `target`; `ext_name` names the extension.
std::string rule_solution(const Program& p, KernelTarget target, const std::string& ext_name);

namespace rule {  // shared by the two code generators (rule_cpu.cpp, rule_cuda.cpp)

// A tensor argument of the bound function: its C++ name and the Python expression ModelNew
// passes for it.
struct Arg {
  std::string name, py;
};
std::vector<Arg> kernel_args(const Program& p);

// The element-wise chain `ops` on the float variable `v` at flat index `idx` (of the shape
// the chain applies to), one statement per op, rounding after each for low precision.
std::string chain(const Program& p, const std::vector<EwOp>& ops, const std::string& idx, const std::string& indent);
// "const scalar_t* __restrict__ y0, Bcast bc0" ... for the operands `ops` read (CUDA kernels).
std::string operand_params(const Program& p, const std::vector<EwOp>& ops);
// ", y0p, bc0" ... matching operand_params (CUDA launches).
std::string operand_args(const Program& p, const std::vector<EwOp>& ops);
// Host statements: pointer `y0p` and broadcast descriptor `bc0` of each operand of `ops`
// against the shape vector named `shape`.
std::string operand_setup(const Program& p, const std::vector<EwOp>& ops, const std::string& shape,
                          const std::string& indent);
// The host function's parameter list and its contiguous copies ("auto x = x_in.contiguous();").
// struct Bcast, make_bcast and bcast_offset as emitted text; `offset_qualifier` prefixes bcast_offset
// ("static inline" for the CPU kernels, "__device__ __forceinline__" for CUDA). Empty when no op of `p`
// reads a tensor operand (the kernel carries no dead helpers).
std::string broadcast_helpers(const Program& p, const std::string& offset_qualifier);
std::string host_params(const Program& p);
std::string host_prologue(const Program& p);

// Replaces every @KEY@ of `tpl`.
std::string fill(std::string tpl, const std::map<std::string, std::string>& vars);

}  // namespace rule

// The two back ends: the C++ source (CPU) or the CUDA source, defining `fused_forward`.
std::string cpu_kernel_source(const Program& p);
std::string cuda_kernel_source(const Program& p);

}  // namespace musacoder::data
