// The rule-based teacher: the kernel from rule_kernels.h, with a short plan before it.
#include <string>

#include "data/rule_kernels.h"
#include "data/teacher.h"

namespace musacoder::data {
namespace {

std::string plan(const Program& p, KernelTarget t) {
  const bool cuda = t == KernelTarget::kCuda;
  std::string how;
  switch (p.anchor.kind) {
    case Anchor::kNone:
      how = cuda ? "one grid-stride kernel applies the whole chain per element in registers"
                 : "one OpenMP loop applies the whole chain per element";
      break;
    case Anchor::kReduce:
    case Anchor::kSoftmax:
    case Anchor::kLogSoftmax:
      how = cuda ? "view the input as (outer, R, inner); contiguous rows get one block each with warp-shuffle "
                   "block reductions, strided ones one thread per output"
                 : "view the input as (outer, R, inner) and reduce each output in double";
      break;
    case Anchor::kMatmul:
    case Anchor::kBmm:
    case Anchor::kLinear:
      how = cuda ? "a 16x16 shared-memory tiled matmul with the bias and element-wise ops in its epilogue"
                 : "an i-k-j loop (dot products for Linear) with float accumulators and the epilogue at the store";
      break;
    case Anchor::kConv1d:
    case Anchor::kConv2d:
      how = cuda ? "a direct convolution with one thread per output and the epilogue fused"
                 : "a direct convolution parallel over (batch, out channel) with the epilogue fused";
      break;
    case Anchor::kMaxPool:
    case Anchor::kAvgPool: how = "one pass per output window with the element-wise ops fused"; break;
    default:
      how = cuda ? "one block per normalised group: block reductions for the statistics, then one normalising pass"
                 : "one pass for the statistics (double accumulation), then one normalising pass";
  }
  std::string s = "Plan: " + program_summary(p) + " fused into one extension: " + how + ".";
  if (p.dtype != DType::kFloat32)
    s += " Math is in float; values are rounded to " + std::string(dtype_name(p.dtype)) +
         " after each op, where PyTorch rounds.";
  if (!p.prologue.empty() && (p.anchor.kind == Anchor::kMatmul || p.anchor.kind == Anchor::kBmm ||
                              p.anchor.kind == Anchor::kLinear || p.anchor.kind == Anchor::kConv1d ||
                              p.anchor.kind == Anchor::kConv2d))
    s += " The ops before it run once per input element in a first pass, since it reads each input many times.";
  return s;
}

class RuleTeacher : public Teacher {
 public:
  explicit RuleTeacher(bool reasoning) : reasoning_(reasoning) {}
  std::string name() const override { return "rule"; }

  Result<std::vector<TeacherAnswer>> answer(const TeacherRequest& r) override {
    if (r.program == nullptr) return invalid_argument("the rule teacher needs the task's operator program");
    if (r.target == prompts::Target::kMusa) return invalid_argument("the rule teacher writes cpu and cuda kernels");
    const KernelTarget t = r.target == prompts::Target::kCuda ? KernelTarget::kCuda : KernelTarget::kCpu;
    // One name per backend: an answer holds nothing its prompt does not say (a task id there is a token a
    // model trained on these pairs can only guess); MooreEval keys its builds by content, not by name.
    const std::string ext = "fused_" + std::string(prompts::target_name(r.target));
    const std::string code = rule_solution(*r.program, t, ext);
    return std::vector<TeacherAnswer>{{prompts::render_answer(code, reasoning_ ? plan(*r.program, t) : "")}};
  }

 private:
  bool reasoning_;
};

}  // namespace

std::unique_ptr<Teacher> make_rule_teacher(bool reasoning) {
  return std::make_unique<RuleTeacher>(reasoning);
}

}  // namespace musacoder::data
