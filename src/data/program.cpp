#include "data/program.h"

#include <cstdio>

#include "core/check.h"

namespace musacoder::data {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
  }
  return "float32";
}

const char* torch_dtype(DType d) {
  switch (d) {
    case DType::kFloat32: return "torch.float32";
    case DType::kFloat16: return "torch.float16";
    case DType::kBFloat16: return "torch.bfloat16";
  }
  return "torch.float32";
}

const char* ew_name(Ew e) {
  switch (e) {
    case Ew::kRelu: return "relu";
    case Ew::kLeakyRelu: return "leaky_relu";
    case Ew::kGelu: return "gelu";
    case Ew::kSilu: return "silu";
    case Ew::kSigmoid: return "sigmoid";
    case Ew::kTanh: return "tanh";
    case Ew::kClamp: return "clamp";
    case Ew::kSoftplus: return "softplus";
    case Ew::kElu: return "elu";
    case Ew::kHardswish: return "hardswish";
    case Ew::kAbs: return "abs";
    case Ew::kSquare: return "square";
    case Ew::kAddScalar: return "add_scalar";
    case Ew::kMulScalar: return "mul_scalar";
    case Ew::kAddTensor: return "add";
    case Ew::kSubTensor: return "sub";
    case Ew::kMulTensor: return "mul";
    case Ew::kMaxTensor: return "maximum";
    case Ew::kMinTensor: return "minimum";
  }
  return "?";
}

bool ew_reads_tensor(Ew e) {
  return e == Ew::kAddTensor || e == Ew::kSubTensor || e == Ew::kMulTensor || e == Ew::kMaxTensor ||
         e == Ew::kMinTensor;
}

const char* anchor_name(Anchor a) {
  switch (a) {
    case Anchor::kNone: return "none";
    case Anchor::kReduce: return "reduce";
    case Anchor::kSoftmax: return "softmax";
    case Anchor::kLogSoftmax: return "log_softmax";
    case Anchor::kLayerNorm: return "layer_norm";
    case Anchor::kRmsNorm: return "rms_norm";
    case Anchor::kGroupNorm: return "group_norm";
    case Anchor::kBatchNormEval: return "batch_norm_eval";
    case Anchor::kBatchNormTrain: return "batch_norm_train";
    case Anchor::kMatmul: return "matmul";
    case Anchor::kBmm: return "bmm";
    case Anchor::kLinear: return "linear";
    case Anchor::kConv1d: return "conv1d";
    case Anchor::kConv2d: return "conv2d";
    case Anchor::kMaxPool: return "max_pool";
    case Anchor::kAvgPool: return "avg_pool";
  }
  return "?";
}

const char* reduce_name(Reduce r) {
  switch (r) {
    case Reduce::kSum: return "sum";
    case Reduce::kMean: return "mean";
    case Reduce::kAmax: return "amax";
    case Reduce::kAmin: return "amin";
    case Reduce::kLogSumExp: return "logsumexp";
  }
  return "?";
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

namespace {

int64_t window_out(int64_t len, int kernel, int stride, int padding) {
  return (len + 2 * padding - kernel) / stride + 1;
}

}  // namespace

Shape anchor_output(const Program& p) {
  const AnchorSpec& a = p.anchor;
  Shape s = p.input;
  switch (a.kind) {
    case Anchor::kReduce:
      if (a.keepdim) s[a.dim] = 1;
      else s.erase(s.begin() + a.dim);
      return s;
    case Anchor::kMatmul:
    case Anchor::kBmm: s.back() = a.other.back(); return s;
    case Anchor::kLinear: s.back() = a.out_features; return s;
    case Anchor::kConv1d:
    case Anchor::kConv2d:
      s[1] = a.out_features;
      for (std::size_t d = 2; d < s.size(); ++d) s[d] = window_out(s[d], a.kernel, a.stride, a.padding);
      return s;
    case Anchor::kMaxPool:
    case Anchor::kAvgPool:
      for (std::size_t d = 2; d < s.size(); ++d) s[d] = window_out(s[d], a.kernel, a.stride, a.padding);
      return s;
    default: return s;
  }
}

int op_count(const Program& p) {
  return static_cast<int>(p.prologue.size() + p.epilogue.size()) + (p.anchor.kind == Anchor::kNone ? 0 : 1);
}

std::string program_summary(const Program& p) {
  std::string out;
  auto add = [&out](const std::string& s) { out += (out.empty() ? "" : "+") + s; };
  for (const EwOp& e : p.prologue) add(ew_name(e.kind));
  if (p.anchor.kind == Anchor::kReduce) add(reduce_name(p.anchor.reduce));
  else if (p.anchor.kind == Anchor::kConv2d && p.anchor.groups > 1) add("depthwise_conv2d");
  else if (p.anchor.kind != Anchor::kNone) add(anchor_name(p.anchor.kind));
  for (const EwOp& e : p.epilogue) add(ew_name(e.kind));
  return out;
}

namespace {

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string ops_text(const std::vector<EwOp>& ops, const Program& p) {
  std::string out;
  for (const EwOp& e : ops) {
    out += std::string(ew_name(e.kind)) + "(" + number(e.a) + "," + number(e.b);
    if (e.operand >= 0) {
      const Operand& o = p.operands[static_cast<std::size_t>(e.operand)];
      out += "," + std::string(o.parameter ? "param" : "input") + shape_text(o.shape);
    }
    out += ");";
  }
  return out;
}

}  // namespace

std::string canonical_form(const Program& p) {
  const AnchorSpec& a = p.anchor;
  std::string out = std::string(dtype_name(p.dtype)) + "|x" + shape_text(p.input) + "|" + ops_text(p.prologue, p) +
                    "|" + anchor_name(a.kind);
  if (a.kind != Anchor::kNone) {
    out += "(" + std::string(reduce_name(a.reduce)) + ",dim=" + std::to_string(a.dim) + ",keep=" +
           std::to_string(a.keepdim) + ",groups=" + std::to_string(a.groups) + ",out=" +
           std::to_string(a.out_features) + ",other=" + shape_text(a.other) + ",k=" + std::to_string(a.kernel) +
           ",s=" + std::to_string(a.stride) + ",p=" + std::to_string(a.padding) + ",bias=" +
           std::to_string(a.bias) + ",eps=" + number(a.eps) + ")";
  }
  return out + "|" + ops_text(p.epilogue, p);
}

}  // namespace musacoder::data
