// The sampler. Each category has a function that draws its anchor and ops; fusions draw an
// anchor of another category and add one to three element-wise ops around it.
#include "data/grammar.h"

#include <algorithm>
#include <initializer_list>

#include "core/check.h"
#include "core/splitmix.h"

namespace musacoder::data {
namespace {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() { return splitmix64_next(state_); }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
  bool chance(int percent) { return below(100) < percent; }
  template <typename T>
  T pick(std::initializer_list<T> items) {
    return *(items.begin() + below(static_cast<int>(items.size())));
  }
  template <typename T>
  T pick(const std::vector<T>& items) {
    return items[static_cast<std::size_t>(below(static_cast<int>(items.size())))];
  }

 private:
  uint64_t state_;
};

// Halves the leading dimensions until the shape fits the element budget.
Shape fit(Shape s, int64_t max_elements) {
  for (std::size_t d = 0; d < s.size() && numel(s) > max_elements;) {
    if (s[d] > 2) s[d] /= 2;
    else ++d;
  }
  return s;
}

Shape sample_shape(Rng& r, int rank, int64_t max_elements) {
  Shape s;
  if (rank == 1) s = {r.pick<int64_t>({1024, 4096, 16384, 65536})};
  if (rank == 2) s = {r.pick<int64_t>({16, 32, 64, 128}), r.pick<int64_t>({256, 512, 1000, 1024, 2048, 4096})};
  if (rank == 3)
    s = {r.pick<int64_t>({4, 8, 16}), r.pick<int64_t>({16, 32, 64, 100}), r.pick<int64_t>({64, 128, 256, 500})};
  if (rank == 4)
    s = {r.pick<int64_t>({2, 4, 8}), r.pick<int64_t>({8, 16, 32}), r.pick<int64_t>({8, 16, 32}),
         r.pick<int64_t>({16, 32, 64})};
  return fit(s, max_elements);
}

int add_operand(Program& p, Shape shape, bool parameter) {
  int k = static_cast<int>(p.operands.size());
  p.operands.push_back({(parameter ? "p" : "y") + std::to_string(k), std::move(shape), parameter});
  return k;
}

// A tensor operand broadcastable to `s`: same shape, last dimension, per channel, per row.
int sample_operand(Rng& r, Program& p, const Shape& s) {
  const std::size_t rank = s.size();
  int form = r.below(rank >= 3 ? 4 : rank == 2 ? 3 : 2);
  if (form == 0) return add_operand(p, s, false);
  if (form == 1) return add_operand(p, {s.back()}, true);
  if (form == 2) {
    Shape row = s;
    row.back() = 1;
    return add_operand(p, row, false);
  }
  Shape channel(rank - 1, 1);
  channel[0] = s[1];
  return add_operand(p, channel, true);
}

EwOp sample_activation(Rng& r) {
  EwOp e;
  e.kind = r.pick({Ew::kRelu, Ew::kLeakyRelu, Ew::kGelu, Ew::kSilu, Ew::kSigmoid, Ew::kTanh, Ew::kClamp,
                   Ew::kSoftplus, Ew::kElu, Ew::kHardswish});
  if (e.kind == Ew::kLeakyRelu) e.a = r.pick({0.01, 0.1, 0.2});
  if (e.kind == Ew::kElu) e.a = r.pick({1.0, 0.5});
  if (e.kind == Ew::kClamp) {
    int k = r.below(3);
    e.a = k == 0 ? -1.0 : k == 1 ? -0.5 : 0.0;
    e.b = k == 0 ? 1.0 : k == 1 ? 0.5 : 6.0;
  }
  return e;
}

// Any element-wise op on a value of shape `s`; `squared` keeps chains from squaring twice
// (fp16 would overflow to inf, and inf - inf fails every comparison).
EwOp sample_ew(Rng& r, Program& p, const Shape& s, bool& squared) {
  int kind = r.below(10);
  if (kind < 4) return sample_activation(r);
  EwOp e;
  if (kind < 6) {
    e.kind = r.pick({Ew::kAddScalar, Ew::kMulScalar});
    e.a = e.kind == Ew::kAddScalar ? r.pick({0.5, -0.25, 1.0, 2.0, -1.5}) : r.pick({0.5, 2.0, -1.0, 0.125, 1.5});
    return e;
  }
  if (kind == 6) {
    e.kind = squared ? Ew::kAbs : r.pick({Ew::kAbs, Ew::kSquare});
    squared = squared || e.kind == Ew::kSquare;
    return e;
  }
  e.kind = r.pick({Ew::kAddTensor, Ew::kSubTensor, Ew::kMulTensor, Ew::kMaxTensor, Ew::kMinTensor});
  e.operand = sample_operand(r, p, s);
  return e;
}

void sample_elementwise(Rng& r, Program& p, int64_t max_elements) {
  p.input = sample_shape(r, 2 + r.below(3), max_elements);
  int n = 2 + r.below(3);
  bool squared = false;
  for (int i = 0; i < n; ++i) p.prologue.push_back(sample_ew(r, p, p.input, squared));
}

void sample_reduction(Rng& r, Program& p, int64_t max_elements) {
  p.anchor.kind = Anchor::kReduce;
  p.input = sample_shape(r, 2 + r.below(3), max_elements);
  p.anchor.reduce = r.pick({Reduce::kSum, Reduce::kMean, Reduce::kAmax, Reduce::kAmin, Reduce::kLogSumExp});
  p.anchor.dim = r.below(static_cast<int>(p.input.size()));
  p.anchor.keepdim = r.chance(40);
}

void sample_softmax(Rng& r, Program& p, int64_t max_elements) {
  p.anchor.kind = r.chance(60) ? Anchor::kSoftmax : Anchor::kLogSoftmax;
  p.input = sample_shape(r, 2 + r.below(2), max_elements);
  p.anchor.dim = r.chance(70) ? static_cast<int>(p.input.size()) - 1 : 1;
}

void sample_norm(Rng& r, Program& p, int64_t max_elements) {
  AnchorSpec& a = p.anchor;
  a.kind = r.pick({Anchor::kLayerNorm, Anchor::kRmsNorm, Anchor::kGroupNorm, Anchor::kBatchNormEval,
                   Anchor::kBatchNormTrain});
  a.eps = r.pick({1e-5, 1e-6});
  if (a.kind == Anchor::kLayerNorm || a.kind == Anchor::kRmsNorm) {
    p.input = sample_shape(r, 2 + r.below(2), max_elements);
    p.input.back() = r.pick<int64_t>({64, 128, 256, 512, 768, 1024, 2048});
    p.input = fit(p.input, max_elements);
    return;
  }
  const int64_t c = r.pick<int64_t>({8, 16, 32, 64});
  if (r.chance(60)) p.input = {r.pick<int64_t>({2, 4, 8}), c, r.pick<int64_t>({8, 16, 32}), r.pick<int64_t>({8, 16, 32})};
  else p.input = {r.pick<int64_t>({2, 4, 8, 16}), c, r.pick<int64_t>({64, 128, 256})};
  p.input = fit(p.input, max_elements);
  if (a.kind == Anchor::kGroupNorm) a.groups = static_cast<int>(r.pick<int64_t>({2, 4, 8}));
}

void sample_matmul(Rng& r, Program& p, int64_t) {
  AnchorSpec& a = p.anchor;
  a.kind = r.pick({Anchor::kMatmul, Anchor::kBmm, Anchor::kLinear});
  auto dim = [&r] { return r.pick<int64_t>({32, 64, 96, 128, 192, 256}); };
  if (a.kind == Anchor::kMatmul) {
    p.input = {dim(), dim()};
    a.other = {p.input[1], dim()};
  } else if (a.kind == Anchor::kBmm) {
    p.input = {r.pick<int64_t>({2, 4, 8}), r.pick<int64_t>({32, 64, 128}), r.pick<int64_t>({32, 64, 128})};
    a.other = {p.input[0], p.input[2], r.pick<int64_t>({32, 64, 128})};
  } else {
    p.input = r.chance(50) ? Shape{r.pick<int64_t>({32, 64, 128, 256}), dim() * 2}
                           : Shape{r.pick<int64_t>({4, 8}), r.pick<int64_t>({16, 32, 64}), dim() * 2};
    a.out_features = dim();
    a.bias = r.chance(75);
  }
  // At most 2^21 multiply-adds (see sample_conv); every shape here is under max_elements.
  while (numel(anchor_output(p)) * p.input.back() > (int64_t{1} << 21) && p.input[0] > 2) {
    p.input[0] /= 2;
    if (a.kind == Anchor::kBmm) a.other[0] = p.input[0];
  }
}

void sample_conv(Rng& r, Program& p, int64_t) {
  AnchorSpec& a = p.anchor;
  int form = r.below(3);  // conv1d, conv2d, depthwise conv2d
  a.kind = form == 0 ? Anchor::kConv1d : Anchor::kConv2d;
  a.kernel = r.pick({1, 3, 5});
  a.stride = r.pick({1, 1, 2});
  a.padding = r.chance(50) ? a.kernel / 2 : 0;
  a.bias = r.chance(75);
  const int64_t c = r.pick<int64_t>({3, 4, 8, 16});
  if (form == 0) {
    p.input = {r.pick<int64_t>({2, 4}), c, r.pick<int64_t>({64, 128, 256})};
    a.out_features = r.pick<int64_t>({8, 16, 32});
  } else {
    const int64_t hw = r.pick<int64_t>({16, 24, 32});
    p.input = {r.pick<int64_t>({1, 2, 4}), form == 2 ? c * 2 : c, hw, hw};
    a.out_features = form == 2 ? p.input[1] * r.pick<int64_t>({1, 2}) : r.pick<int64_t>({8, 16, 32});
    if (form == 2) a.groups = static_cast<int>(p.input[1]);
  }
  // At most 2^21 multiply-adds: the rule teacher's direct CPU loops stay in the milliseconds.
  auto macs = [&] { return numel(anchor_output(p)) * (p.input[1] / a.groups) * a.kernel * (form == 0 ? 1 : a.kernel); };
  while (macs() > (int64_t{1} << 21)) {
    if (p.input[0] > 1) p.input[0] /= 2;
    else if (p.input.back() > 16) p.input.back() /= 2, p.input[p.input.size() - 2] /= (form == 0 ? 1 : 2);
    else break;
  }
}

void sample_pool(Rng& r, Program& p, int64_t max_elements) {
  AnchorSpec& a = p.anchor;
  a.kind = r.chance(50) ? Anchor::kMaxPool : Anchor::kAvgPool;
  a.kernel = r.pick({2, 3});
  a.stride = r.pick({1, 2, a.kernel});
  if (r.chance(50)) p.input = {r.pick<int64_t>({2, 4, 8}), r.pick<int64_t>({8, 16, 32}), r.pick<int64_t>({64, 128, 256})};
  else p.input = {r.pick<int64_t>({2, 4}), r.pick<int64_t>({8, 16}), r.pick<int64_t>({16, 32, 64}), r.pick<int64_t>({16, 32, 64})};
  p.input = fit(p.input, max_elements);
}

using Sampler = void (*)(Rng&, Program&, int64_t);

struct CategoryInfo {
  const char* name;
  int weight;  // relative share of draws
};

constexpr CategoryInfo kCategories[] = {
    {"elementwise", 14}, {"activation", 6}, {"reduction", 10}, {"softmax", 7}, {"norm", 12},
    {"matmul", 10},      {"conv", 10},      {"pool", 6},       {"fusion", 25},
};

void sample_fusion(Rng& r, Program& p, int64_t max_elements) {
  Sampler anchors[] = {sample_reduction, sample_softmax, sample_norm, sample_norm, sample_matmul,
                       sample_matmul,    sample_conv,    sample_conv, sample_pool};
  anchors[r.below(9)](r, p, max_elements);
  int extra = 1 + r.below(3);
  bool squared = false;
  for (int i = 0; i < extra; ++i) {
    if (r.chance(30)) p.prologue.push_back(sample_ew(r, p, p.input, squared));
    else p.epilogue.push_back(sample_ew(r, p, anchor_output(p), squared));
  }
}

void sample_category(Rng& r, Program& p, const std::string& category, int64_t max_elements) {
  if (category == "elementwise") return sample_elementwise(r, p, max_elements);
  if (category == "activation") {
    p.input = sample_shape(r, 2 + r.below(2), max_elements);
    p.prologue.push_back(sample_activation(r));
    return;
  }
  if (category == "reduction") return sample_reduction(r, p, max_elements);
  if (category == "softmax") return sample_softmax(r, p, max_elements);
  if (category == "norm") return sample_norm(r, p, max_elements);
  if (category == "matmul") return sample_matmul(r, p, max_elements);
  if (category == "conv") return sample_conv(r, p, max_elements);
  if (category == "pool") return sample_pool(r, p, max_elements);
  MC_CHECK(category == "fusion");
  sample_fusion(r, p, max_elements);
}

}  // namespace

const std::vector<std::string>& all_categories() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const CategoryInfo& c : kCategories) v.emplace_back(c.name);
    return v;
  }();
  return names;
}

Status validate(const GrammarOptions& options) {
  for (const std::string& c : options.categories)
    if (std::find(all_categories().begin(), all_categories().end(), c) == all_categories().end())
      return invalid_argument("unknown category '" + c +
                              "' (elementwise, activation, reduction, softmax, norm, matmul, conv, pool, fusion)");
  if (options.max_elements < 1024) return invalid_argument("max_elements must be at least 1024");
  return Status::ok_status();
}

uint64_t mix_seed(uint64_t seed, uint64_t index) {
  Rng r(seed ^ (index * 0xd1b54a32d192ed03ULL));
  r.next();
  return r.next();
}

Program sample_program(uint64_t seed, const GrammarOptions& options) {
  Rng r(seed);
  std::vector<std::string> names;
  std::vector<int> weights;
  for (const CategoryInfo& c : kCategories) {
    bool on = options.categories.empty() ||
              std::find(options.categories.begin(), options.categories.end(), c.name) != options.categories.end();
    if (on) names.emplace_back(c.name), weights.push_back(c.weight);
  }
  int total = 0;
  for (int w : weights) total += w;
  int draw = r.below(total);
  std::size_t k = 0;
  while (draw >= weights[k]) draw -= weights[k++];
  Program p;
  p.category = names[k];
  if (options.dtypes.empty()) {
    int d = r.below(10);
    p.dtype = d < 6 ? DType::kFloat32 : d < 8 ? DType::kFloat16 : DType::kBFloat16;
  } else {
    p.dtype = r.pick(options.dtypes);
  }
  sample_category(r, p, p.category, options.max_elements);
  return p;
}

}  // namespace musacoder::data
