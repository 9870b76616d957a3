// What the CPU and CUDA generators share: arguments, element-wise chains, operand broadcast
// set-up, and the submission module around the kernel source.
#include <algorithm>
#include <string>

#include "data/rule_kernels.h"
#include "data/task_source.h"

namespace musacoder::data {
namespace rule {
namespace {

std::string ew_expr(const EwOp& e, const std::string& y) {
  const std::string a = c_float(e.a), b = c_float(e.b);
  switch (e.kind) {
    case Ew::kRelu: return "fmaxf(v, 0.0f)";
    case Ew::kLeakyRelu: return "(v > 0.0f ? v : v * " + a + ")";
    case Ew::kGelu: return "0.5f * v * (1.0f + erff(v * 0.70710678118654752f))";
    case Ew::kSilu: return "v / (1.0f + expf(-v))";
    case Ew::kSigmoid: return "1.0f / (1.0f + expf(-v))";
    case Ew::kTanh: return "tanhf(v)";
    case Ew::kClamp: return "fminf(fmaxf(v, " + a + "), " + b + ")";
    case Ew::kSoftplus: return "(v > 20.0f ? v : log1pf(expf(v)))";
    case Ew::kElu: return "(v > 0.0f ? v : " + a + " * expm1f(v))";
    case Ew::kHardswish: return "v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f";
    case Ew::kAbs: return "fabsf(v)";
    case Ew::kSquare: return "v * v";
    case Ew::kAddScalar: return "v + " + a;
    case Ew::kMulScalar: return "v * " + a;
    case Ew::kAddTensor: return "v + " + y;
    case Ew::kSubTensor: return "v - " + y;
    case Ew::kMulTensor: return "v * " + y;
    case Ew::kMaxTensor: return "fmaxf(v, " + y + ")";
    case Ew::kMinTensor: return "fminf(v, " + y + ")";
  }
  return "v";
}

bool is_norm_with_bias(Anchor a) {
  return a == Anchor::kLayerNorm || a == Anchor::kGroupNorm || a == Anchor::kBatchNormEval ||
         a == Anchor::kBatchNormTrain;
}

// The emitted broadcast helpers (struct Bcast, make_bcast on the host, bcast_offset with `qualifier`).
constexpr const char* kBroadcast = R"(// Broadcast of an operand to a shape (right-aligned, size-1 dimensions repeat).
struct Bcast {
    int rank;
    bool full;  // same number of elements: the offset is the index itself
    int64_t size[8];
    int64_t stride[8];
};

static Bcast make_bcast(const torch::Tensor& t, const std::vector<int64_t>& shape) {
    Bcast b{};
    b.rank = static_cast<int>(shape.size());
    TORCH_CHECK(b.rank <= 8 && t.dim() <= b.rank, "operand rank does not broadcast");
    int64_t n = 1, s = 1;
    for (int d = b.rank - 1; d >= 0; --d) {
        const int64_t td = d - (b.rank - t.dim());
        const int64_t len = td >= 0 ? t.size(td) : 1;
        TORCH_CHECK(len == 1 || len == shape[d], "operand shape does not broadcast");
        b.size[d] = shape[d];
        b.stride[d] = len == 1 ? 0 : s;
        s *= len;
        n *= shape[d];
    }
    b.full = t.numel() == n;
    return b;
}

@QUALIFIER@ int64_t bcast_offset(const Bcast& b, int64_t i) {
    if (b.full) return i;
    int64_t off = 0;
    for (int d = b.rank - 1; d >= 0; --d) {
        off += (i % b.size[d]) * b.stride[d];
        i /= b.size[d];
    }
    return off;
}
)";

}  // namespace

std::vector<Arg> kernel_args(const Program& p) {
  const AnchorSpec& a = p.anchor;
  std::vector<Arg> args = {{"x", "x"}};
  if (a.kind == Anchor::kMatmul || a.kind == Anchor::kBmm) args.push_back({"b", "b"});
  if (a.kind == Anchor::kLinear || a.kind == Anchor::kConv1d || a.kind == Anchor::kConv2d) {
    const std::string mod = a.kind == Anchor::kLinear ? "self.linear" : "self.conv";
    args.push_back({"w", mod + ".weight"});
    if (a.bias) args.push_back({"bias", mod + ".bias"});
  }
  if (a.kind == Anchor::kRmsNorm) args.push_back({"w", "self.norm.weight"});
  if (is_norm_with_bias(a.kind)) {
    args.push_back({"w", "self.norm.weight"});
    args.push_back({"bias", "self.norm.bias"});
  }
  if (a.kind == Anchor::kBatchNormEval) {
    args.push_back({"rmean", "self.norm.running_mean"});
    args.push_back({"rvar", "self.norm.running_var"});
  }
  for (const Operand& o : p.operands) args.push_back({o.name, o.parameter ? "self." + o.name : o.name});
  return args;
}

std::string chain(const Program& p, const std::vector<EwOp>& ops, const std::string& idx, const std::string& indent) {
  std::string out;
  for (const EwOp& e : ops) {
    std::string y;
    if (e.operand >= 0) {
      const std::string k = std::to_string(e.operand);
      y = "ld(" + p.operands[static_cast<std::size_t>(e.operand)].name + "p, bcast_offset(bc" + k + ", " + idx + "))";
    }
    out += indent + "v = rnd(" + ew_expr(e, y) + ");  // " + ew_name(e.kind) + "\n";
  }
  return out;
}

std::string operand_params(const Program& p, const std::vector<EwOp>& ops) {
  std::string out;
  for (const EwOp& e : ops)
    if (e.operand >= 0)
      out += ", const scalar_t* __restrict__ " + p.operands[static_cast<std::size_t>(e.operand)].name +
             "p, Bcast bc" + std::to_string(e.operand);
  return out;
}

std::string operand_args(const Program& p, const std::vector<EwOp>& ops) {
  std::string out;
  for (const EwOp& e : ops)
    if (e.operand >= 0)
      out += ", " + p.operands[static_cast<std::size_t>(e.operand)].name + "p, bc" + std::to_string(e.operand);
  return out;
}

std::string operand_setup(const Program& p, const std::vector<EwOp>& ops, const std::string& shape,
                          const std::string& indent) {
  std::string out;
  for (const EwOp& e : ops) {
    if (e.operand < 0) continue;
    const std::string& n = p.operands[static_cast<std::size_t>(e.operand)].name;
    const std::string k = std::to_string(e.operand);
    out += indent + "const scalar_t* " + n + "p = static_cast<const scalar_t*>(" + n + ".data_ptr());\n";
    out += indent + "const Bcast bc" + k + " = make_bcast(" + n + ", " + shape + ");\n";
  }
  return out;
}

std::string broadcast_helpers(const Program& p, const std::string& offset_qualifier) {
  const auto reads_operand = [](const EwOp& e) { return e.operand >= 0; };
  if (std::none_of(p.prologue.begin(), p.prologue.end(), reads_operand) &&
      std::none_of(p.epilogue.begin(), p.epilogue.end(), reads_operand))
    return "";
  return fill(kBroadcast, {{"QUALIFIER", offset_qualifier}});
}

std::string host_params(const Program& p) {
  std::string out;
  for (const Arg& a : kernel_args(p)) out += (out.empty() ? "" : ", ") + std::string("torch::Tensor ") + a.name + "_in";
  return out;
}

std::string host_prologue(const Program& p) {
  const char* st = p.dtype == DType::kFloat32 ? "torch::kFloat32" : p.dtype == DType::kFloat16 ? "torch::kFloat16" : "torch::kBFloat16";
  std::string out;
  for (const Arg& a : kernel_args(p)) {
    out += "    TORCH_CHECK(" + a.name + "_in.scalar_type() == " + st + ", \"" + a.name + ": expected " +
           dtype_name(p.dtype) + "\");\n";
    out += "    auto " + a.name + " = " + a.name + "_in.contiguous();\n";
  }
  return out;
}

std::string fill(std::string tpl, const std::map<std::string, std::string>& vars) {
  for (const auto& [key, value] : vars) {
    const std::string k = "@" + key + "@";
    for (std::size_t pos = tpl.find(k); pos != std::string::npos; pos = tpl.find(k, pos + value.size()))
      tpl.replace(pos, k.size(), value);
  }
  return tpl;
}

}  // namespace rule

std::string rule_solution(const Program& p, KernelTarget target, const std::string& ext_name) {
  std::string call;
  for (const rule::Arg& a : rule::kernel_args(p)) call += (call.empty() ? "" : ", ") + a.py;
  std::string s = "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n";
  if (target == KernelTarget::kCpu) {
    s += "cpp_source = r\"\"\"\n" + cpu_kernel_source(p) + "\"\"\"\n\n";
    s += "fused_ext = load_inline(\n    name=\"" + ext_name + "\",\n    cpp_sources=cpp_source,\n";
    s += "    functions=[\"fused_forward\"],\n    extra_cflags=[\"-O3\", \"-fopenmp\"],\n";
    s += "    extra_ldflags=[\"-fopenmp\"],\n    verbose=False,\n)\n";
  } else {
    s += "cuda_source = r\"\"\"\n" + cuda_kernel_source(p) + "\"\"\"\n\n";
    s += "cpp_source = \"torch::Tensor fused_forward(" + rule::host_params(p) + ");\"\n\n";
    s += "fused_ext = load_inline(\n    name=\"" + ext_name + "\",\n    cpp_sources=cpp_source,\n";
    s += "    cuda_sources=cuda_source,\n    functions=[\"fused_forward\"],\n    verbose=False,\n)\n";
  }
  s += "\n\nclass ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n";
  const std::string init = render_init_body(p);
  if (init != "        pass\n") s += "        # Built exactly as Model builds them: the same seed gives the same weights.\n" + init;
  s += "\n    def forward(self, " + forward_params(p) + "):\n";
  s += "        return fused_ext.fused_forward(" + call + ")\n";
  return s;
}

}  // namespace musacoder::data
