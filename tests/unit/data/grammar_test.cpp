// The operator-program grammar, task rendering and the rule generator's text (no verifier).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "data/grammar.h"
#include "data/rule_kernels.h"
#include "data/task_source.h"

namespace musacoder::data {
namespace {

TEST(Grammar, SameSeedSameProgramAndSources) {
  GrammarOptions o;
  for (uint64_t s = 0; s < 50; ++s) {
    Program a = sample_program(mix_seed(7, s), o), b = sample_program(mix_seed(7, s), o);
    EXPECT_EQ(canonical_form(a), canonical_form(b));
    EXPECT_EQ(render_task_source(a), render_task_source(b));
    EXPECT_EQ(rule_solution(a, KernelTarget::kCuda, "e"), rule_solution(b, KernelTarget::kCuda, "e"));
  }
  EXPECT_NE(canonical_form(sample_program(mix_seed(7, 0), o)), canonical_form(sample_program(mix_seed(8, 0), o)));
}

TEST(Grammar, CoversEveryCategoryDtypeAndAnchorWithinBounds) {
  GrammarOptions o;
  std::set<std::string> categories;
  std::set<DType> dtypes;
  std::set<Anchor> anchors;
  for (uint64_t s = 0; s < 2000; ++s) {
    Program p = sample_program(mix_seed(1, s), o);
    categories.insert(p.category);
    dtypes.insert(p.dtype);
    anchors.insert(p.anchor.kind);
    EXPECT_GE(op_count(p), 1);
    EXPECT_LE(op_count(p), 4) << canonical_form(p);
    if (p.category == "fusion") {
      EXPECT_GE(op_count(p), 2);
    }
    EXPECT_LE(numel(p.input), o.max_elements) << canonical_form(p);
    for (int64_t d : anchor_output(p)) EXPECT_GE(d, 1) << canonical_form(p);
    for (const EwOp& e : p.prologue) EXPECT_EQ(ew_reads_tensor(e.kind), e.operand >= 0);
  }
  EXPECT_EQ(categories.size(), all_categories().size());
  EXPECT_EQ(dtypes.size(), 3u);
  EXPECT_EQ(anchors.size(), 16u);  // every anchor kind, kNone included
}

TEST(Grammar, OptionsRestrictAndAreValidated) {
  GrammarOptions o;
  o.categories = {"conv"};
  o.dtypes = {DType::kBFloat16};
  for (uint64_t s = 0; s < 100; ++s) {
    Program p = sample_program(s, o);
    EXPECT_EQ(p.category, "conv");
    EXPECT_EQ(p.dtype, DType::kBFloat16);
  }
  o.categories = {"attention"};
  EXPECT_FALSE(validate(o).ok());
}

TEST(TaskSource, RendersKernelBenchFormatWithToleranceSidecar) {
  Program p;
  p.category = "fusion";
  p.dtype = DType::kFloat16;
  p.input = {8, 64};
  p.anchor.kind = Anchor::kLinear;
  p.anchor.out_features = 32;
  p.epilogue = {{Ew::kGelu, 0, 0, -1}, {Ew::kAddTensor, 0, 0, 0}};
  p.operands = {{"p0", {32}, true}};
  const std::string s = render_task_source(p);
  EXPECT_NE(s.find("class Model(nn.Module):"), std::string::npos);
  EXPECT_NE(s.find("self.linear = nn.Linear(64, 32, bias=True, dtype=torch.float16)"), std::string::npos);
  EXPECT_NE(s.find("self.p0 = nn.Parameter(torch.randn(32, dtype=torch.float16) * 0.5)"), std::string::npos);
  EXPECT_NE(s.find("        x = self.linear(x)\n        x = F.gelu(x)\n        x = x + self.p0\n        return x\n"),
            std::string::npos);
  EXPECT_NE(s.find("def get_inputs():\n    x = torch.randn(8, 64, dtype=torch.float16)\n    return [x]"), std::string::npos);
  EXPECT_NE(s.find("def get_init_inputs():\n    return []"), std::string::npos);
  const std::string j = render_sidecar(p);
  EXPECT_NE(j.find("\"rtol\": 0.01"), std::string::npos);
  EXPECT_NE(j.find("\"dtype\": \"float16\""), std::string::npos);
  EXPECT_EQ(anchor_output(p), (Shape{8, 32}));
  EXPECT_EQ(program_summary(p), "linear+gelu+add");
}

TEST(RuleKernels, ModuleShapeMatchesTheBackendRules) {
  Program p;
  p.category = "activation";
  p.input = {16, 256};
  p.prologue = {{Ew::kRelu, 0, 0, -1}};
  const std::string cpu = rule_solution(p, KernelTarget::kCpu, "ext_cpu");
  EXPECT_NE(cpu.find("extra_cflags=[\"-O3\", \"-fopenmp\"]"), std::string::npos);
  EXPECT_NE(cpu.find("#pragma omp parallel for"), std::string::npos);
  EXPECT_EQ(cpu.find("cuda_sources"), std::string::npos);
  EXPECT_NE(cpu.find("return fused_ext.fused_forward(x)"), std::string::npos);
  const std::string cuda = rule_solution(p, KernelTarget::kCuda, "ext_cuda");
  EXPECT_NE(cuda.find("__global__ void ew_kernel"), std::string::npos);
  EXPECT_NE(cuda.find("cpp_source = \"torch::Tensor fused_forward(torch::Tensor x_in);\""), std::string::npos);
  EXPECT_NE(cuda.find("check_launch();"), std::string::npos);
  EXPECT_EQ(cuda.find("-arch"), std::string::npos);
  p.dtype = DType::kBFloat16;
  EXPECT_NE(rule_solution(p, KernelTarget::kCuda, "e").find("#include <cuda_bf16.h>"), std::string::npos);
  EXPECT_NE(rule_solution(p, KernelTarget::kCpu, "e").find("float_to_bf16"), std::string::npos);
}

TEST(RuleKernels, CudaBlockReductionHelpersOnlyWhereAKernelUsesThem) {
  Program p;
  p.category = "activation";
  p.input = {16, 256};
  p.prologue = {{Ew::kRelu, 0, 0, -1}};
  EXPECT_EQ(rule_solution(p, KernelTarget::kCuda, "e").find("block_reduce"), std::string::npos);
  p.category = "softmax";
  p.prologue.clear();
  p.anchor.kind = Anchor::kSoftmax;
  p.anchor.dim = 1;
  const std::string softmax = rule_solution(p, KernelTarget::kCuda, "e");
  EXPECT_NE(softmax.find("__device__ float block_reduce(float v, float* smem)"), std::string::npos);
  EXPECT_NE(softmax.find("m = block_reduce<true>(m, smem);"), std::string::npos);
}

}  // namespace
}  // namespace musacoder::data
