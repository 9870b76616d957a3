// Operator programs: the grammar's sentences. A program is a primary input `x`, a chain of
// element-wise ops on it (prologue), at most one anchor op (a reduction, norm, softmax, matmul,
// convolution or pooling) and a chain of element-wise ops on the anchor's output (epilogue).
// Element-wise ops may read extra tensors (inputs or parameters) that broadcast to the shape
// they apply to. Everything about a program is static (shapes, constants), so one program
// renders to exactly one KernelBench task file and one rule-based kernel per backend.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace musacoder::data {

using Shape = std::vector<int64_t>;

enum class DType { kFloat32, kFloat16, kBFloat16 };
const char* dtype_name(DType d);   // "float32", "float16", "bfloat16"
const char* torch_dtype(DType d);  // "torch.float32", ...

// Element-wise ops. The *Tensor ones read `operand` (an index into Program::operands).
enum class Ew {
  kRelu, kLeakyRelu, kGelu, kSilu, kSigmoid, kTanh, kClamp, kSoftplus, kElu, kHardswish, kAbs,
  kSquare, kAddScalar, kMulScalar, kAddTensor, kSubTensor, kMulTensor, kMaxTensor, kMinTensor,
};
const char* ew_name(Ew e);
bool ew_reads_tensor(Ew e);

struct EwOp {
  Ew kind = Ew::kRelu;
  double a = 0, b = 0;  // constants: leaky slope, clamp bounds, elu alpha, scalar operand
  int operand = -1;     // the tensor operand of the *Tensor ops
};

enum class Anchor {
  kNone, kReduce, kSoftmax, kLogSoftmax, kLayerNorm, kRmsNorm, kGroupNorm, kBatchNormEval,
  kBatchNormTrain, kMatmul, kBmm, kLinear, kConv1d, kConv2d, kMaxPool, kAvgPool,
};
const char* anchor_name(Anchor a);

enum class Reduce { kSum, kMean, kAmax, kAmin, kLogSumExp };
const char* reduce_name(Reduce r);

struct AnchorSpec {
  Anchor kind = Anchor::kNone;
  Reduce reduce = Reduce::kSum;  // kReduce
  int dim = -1;                  // kReduce, kSoftmax, kLogSoftmax: the dimension (>= 0)
  bool keepdim = false;          // kReduce
  int groups = 1;                // kGroupNorm: groups; kConv*: groups (in channels: depthwise)
  int64_t out_features = 0;      // kLinear: out features; kConv*: out channels
  Shape other;                   // kMatmul, kBmm: the second input's shape
  int kernel = 1, stride = 1, padding = 0;  // kConv*, kMaxPool, kAvgPool
  bool bias = true;                         // kLinear, kConv*
  double eps = 1e-5;                        // norms
};

// An extra tensor read by element-wise ops: a forward input (`y<k>`) or a parameter of the
// module (`p<k>`, randn * 0.5 at construction).
struct Operand {
  std::string name;
  Shape shape;  // broadcasts (right-aligned) to the shape of the op that reads it
  bool parameter = false;
};

struct Program {
  std::string category;  // elementwise activation reduction norm softmax matmul conv pool fusion
  DType dtype = DType::kFloat32;
  Shape input;  // x
  std::vector<EwOp> prologue;
  AnchorSpec anchor;
  std::vector<EwOp> epilogue;
  std::vector<Operand> operands;
};

// Shape of the anchor's output (the input's for kNone), hence of the epilogue and the result.
Shape anchor_output(const Program& p);
int64_t numel(const Shape& s);
// Short human name: "conv2d+relu+add", "layer_norm", "gelu".
std::string program_summary(const Program& p);
// Canonical text: every field that changes the computation, in a fixed order (two programs
// with equal canonical forms render to the same task). Dedup keys hash it.
std::string canonical_form(const Program& p);
// Ops in the program (prologue + anchor + epilogue).
int op_count(const Program& p);

}  // namespace musacoder::data
