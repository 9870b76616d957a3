#include "data/task_source.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace musacoder::data {
namespace {

std::string dims(const Shape& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out;
}

// ", dtype=torch.float16" for the low-precision programs, "" for float32.
std::string dtype_kw(const Program& p) {
  return p.dtype == DType::kFloat32 ? "" : std::string(", dtype=") + torch_dtype(p.dtype);
}

std::string bool_py(bool b) {
  return b ? "True" : "False";
}

std::string operand_ref(const Program& p, int k) {
  const Operand& o = p.operands[static_cast<std::size_t>(k)];
  return o.parameter ? "self." + o.name : o.name;
}

std::string ew_line(const Program& p, const EwOp& e) {
  const std::string y = e.operand >= 0 ? operand_ref(p, e.operand) : "";
  switch (e.kind) {
    case Ew::kRelu: return "torch.relu(x)";
    case Ew::kLeakyRelu: return "F.leaky_relu(x, negative_slope=" + py_float(e.a) + ")";
    case Ew::kGelu: return "F.gelu(x)";
    case Ew::kSilu: return "F.silu(x)";
    case Ew::kSigmoid: return "torch.sigmoid(x)";
    case Ew::kTanh: return "torch.tanh(x)";
    case Ew::kClamp: return "torch.clamp(x, min=" + py_float(e.a) + ", max=" + py_float(e.b) + ")";
    case Ew::kSoftplus: return "F.softplus(x)";
    case Ew::kElu: return "F.elu(x, alpha=" + py_float(e.a) + ")";
    case Ew::kHardswish: return "F.hardswish(x)";
    case Ew::kAbs: return "torch.abs(x)";
    case Ew::kSquare: return "x * x";
    case Ew::kAddScalar: return "x + " + py_float(e.a);
    case Ew::kMulScalar: return "x * " + py_float(e.a);
    case Ew::kAddTensor: return "x + " + y;
    case Ew::kSubTensor: return "x - " + y;
    case Ew::kMulTensor: return "x * " + y;
    case Ew::kMaxTensor: return "torch.maximum(x, " + y + ")";
    case Ew::kMinTensor: return "torch.minimum(x, " + y + ")";
  }
  return "x";
}

std::string anchor_line(const Program& p) {
  const AnchorSpec& a = p.anchor;
  const std::string d = std::to_string(a.dim);
  const bool one_d = p.input.size() == 3;
  switch (a.kind) {
    case Anchor::kReduce:
      return "torch." + std::string(reduce_name(a.reduce)) + "(x, dim=" + d + ", keepdim=" + bool_py(a.keepdim) + ")";
    case Anchor::kSoftmax: return "torch.softmax(x, dim=" + d + ")";
    case Anchor::kLogSoftmax: return "torch.log_softmax(x, dim=" + d + ")";
    case Anchor::kMatmul: return "torch.matmul(x, b)";
    case Anchor::kBmm: return "torch.bmm(x, b)";
    case Anchor::kLinear: return "self.linear(x)";
    case Anchor::kConv1d:
    case Anchor::kConv2d: return "self.conv(x)";
    case Anchor::kMaxPool:
    case Anchor::kAvgPool:
      return std::string("F.") + (a.kind == Anchor::kMaxPool ? "max" : "avg") + "_pool" + (one_d ? "1d" : "2d") +
             "(x, kernel_size=" + std::to_string(a.kernel) + ", stride=" + std::to_string(a.stride) + ")";
    default: return "self.norm(x)";
  }
}

std::string norm_module(const Program& p) {
  const AnchorSpec& a = p.anchor;
  const std::string eps = ", eps=" + py_float(a.eps) + dtype_kw(p);
  const std::string c = std::to_string(p.input[1]);
  const std::string bn = p.input.size() == 3 ? "nn.BatchNorm1d(" : "nn.BatchNorm2d(";
  switch (a.kind) {
    case Anchor::kLayerNorm: return "nn.LayerNorm(" + std::to_string(p.input.back()) + eps + ")";
    case Anchor::kRmsNorm: return "nn.RMSNorm(" + std::to_string(p.input.back()) + eps + ")";
    case Anchor::kGroupNorm: return "nn.GroupNorm(" + std::to_string(a.groups) + ", " + c + eps + ")";
    case Anchor::kBatchNormEval: return bn + c + eps + ")";
    default: return bn + c + eps + ", track_running_stats=False)";
  }
}

bool is_norm(Anchor a) {
  return a == Anchor::kLayerNorm || a == Anchor::kRmsNorm || a == Anchor::kGroupNorm ||
         a == Anchor::kBatchNormEval || a == Anchor::kBatchNormTrain;
}

}  // namespace

std::string py_float(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string c_float(double v) {
  return py_float(v) + "f";
}

Tolerance tolerance(const Program& p) {
  switch (p.dtype) {
    case DType::kFloat32: return {1e-3, 1e-3};
    case DType::kFloat16: return {1e-2, 1e-2};
    case DType::kBFloat16: return {3e-2, 3e-2};
  }
  return {};
}

std::string describe(const Program& p) {
  return program_summary(p) + " on " + dtype_name(p.dtype) + " input (" + dims(p.input) + ") -> (" +
         dims(anchor_output(p)) + ")";
}

std::string render_init_body(const Program& p) {
  const AnchorSpec& a = p.anchor;
  std::string out;
  auto line = [&out](const std::string& s) { out += "        " + s + "\n"; };
  if (a.kind == Anchor::kLinear)
    line("self.linear = nn.Linear(" + std::to_string(p.input.back()) + ", " + std::to_string(a.out_features) +
         ", bias=" + bool_py(a.bias) + dtype_kw(p) + ")");
  if (a.kind == Anchor::kConv1d || a.kind == Anchor::kConv2d)
    line(std::string("self.conv = nn.Conv") + (a.kind == Anchor::kConv1d ? "1d(" : "2d(") +
         std::to_string(p.input[1]) + ", " + std::to_string(a.out_features) + ", " + std::to_string(a.kernel) +
         ", stride=" + std::to_string(a.stride) + ", padding=" + std::to_string(a.padding) +
         ", groups=" + std::to_string(a.groups) + ", bias=" + bool_py(a.bias) + dtype_kw(p) + ")");
  if (is_norm(a.kind)) {
    line("self.norm = " + norm_module(p));
    // Not the identity affine of a fresh module, so a kernel that ignores it fails.
    line("nn.init.normal_(self.norm.weight, 1.0, 0.1)");
    if (a.kind != Anchor::kRmsNorm) line("nn.init.normal_(self.norm.bias, 0.0, 0.1)");
    if (a.kind == Anchor::kBatchNormEval) {
      line("self.norm.running_mean.normal_(0.0, 0.5)");
      line("self.norm.running_var.uniform_(0.5, 1.5)");
    }
  }
  for (const Operand& o : p.operands)
    if (o.parameter)
      line("self." + o.name + " = nn.Parameter(torch.randn(" + dims(o.shape) + dtype_kw(p) + ") * 0.5)");
  if (out.empty()) line("pass");
  return out;
}

std::string forward_params(const Program& p) {
  std::string out = "x";
  if (p.anchor.kind == Anchor::kMatmul || p.anchor.kind == Anchor::kBmm) out += ", b";
  for (const Operand& o : p.operands)
    if (!o.parameter) out += ", " + o.name;
  return out;
}

std::string render_task_source(const Program& p) {
  std::string s = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n";
  s += "class Model(nn.Module):\n    \"\"\"" + describe(p) + "\"\"\"\n\n";
  s += "    def __init__(self):\n        super().__init__()\n";
  const std::string init = render_init_body(p);
  if (init != "        pass\n") s += init;
  s += "\n    def forward(self, " + forward_params(p) + "):\n";
  for (const EwOp& e : p.prologue) s += "        x = " + ew_line(p, e) + "\n";
  if (p.anchor.kind != Anchor::kNone) s += "        x = " + anchor_line(p) + "\n";
  for (const EwOp& e : p.epilogue) s += "        x = " + ew_line(p, e) + "\n";
  s += "        return x\n\n\ndef get_inputs():\n";
  const std::string kw = dtype_kw(p);
  s += "    x = torch.randn(" + dims(p.input) + kw + ")\n";
  std::string list = "x";
  if (p.anchor.kind == Anchor::kMatmul || p.anchor.kind == Anchor::kBmm) {
    s += "    b = torch.randn(" + dims(p.anchor.other) + kw + ")\n";
    list += ", b";
  }
  for (const Operand& o : p.operands) {
    if (o.parameter) continue;
    s += "    " + o.name + " = torch.randn(" + dims(o.shape) + kw + ")\n";
    list += ", " + o.name;
  }
  s += "    return [" + list + "]\n\n\ndef get_init_inputs():\n    return []\n";
  return s;
}

std::string render_sidecar(const Program& p) {
  const Tolerance t = tolerance(p);
  const bool heavy = p.anchor.kind == Anchor::kConv1d || p.anchor.kind == Anchor::kConv2d ||
                     p.anchor.kind == Anchor::kMatmul || p.anchor.kind == Anchor::kBmm ||
                     p.anchor.kind == Anchor::kLinear;
  nlohmann::ordered_json j = {{"difficulty", op_count(p) >= 3 || heavy ? 2 : 1},
                              {"trials", 8},
                              {"rtol", t.rtol},
                              {"atol", t.atol},
                              {"dtype", dtype_name(p.dtype)},
                              {"description", describe(p)},
                              {"category", p.category},
                              {"program", canonical_form(p)}};
  return j.dump(2) + "\n";
}

}  // namespace musacoder::data
