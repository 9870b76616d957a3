// The rule teacher's CPU kernels: C++ loops parallelised with OpenMP (docs/tasks.md, CPU
// backend). Float math; double accumulation for sums; float16/bfloat16 are stored as uint16_t
// and converted with round-to-nearest-even, as PyTorch does.
#include <string>

#include "data/rule_kernels.h"
#include "data/task_source.h"

namespace musacoder::data {
namespace {

using rule::chain;
using rule::fill;
using rule::operand_setup;

constexpr const char* kCommon = R"(#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

@BROADCAST@)";

constexpr const char* kFloat32 = R"(
using scalar_t = float;
static inline float ld(const float* p, int64_t i) { return p[i]; }
static inline void st(float* p, int64_t i, float v) { p[i] = v; }
static inline float rnd(float v) { return v; }
)";

constexpr const char* kFloat16 = R"(
// float16 stored as its bits; conversions round to nearest even like the hardware's.
using scalar_t = uint16_t;
static inline float half_to_float(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    if (exp == 0x1fu) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {  // subnormal: normalise
        exp = 113u;
        while ((man & 0x400u) == 0) man <<= 1, --exp;
        bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}
static inline uint16_t float_to_half(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    const uint32_t sign = u & 0x80000000u;
    u ^= sign;
    uint32_t o;
    if (u >= 0x47800000u) {  // inf or nan, or too large
        o = u > 0x7f800000u ? 0x7e00u : 0x7c00u;
    } else if (u < 0x38800000u) {  // subnormal or zero: let the FPU round
        float g;
        std::memcpy(&g, &u, 4);
        g += 0.5f;
        std::memcpy(&o, &g, 4);
        o -= 0x3f000000u;
    } else {
        const uint32_t odd = (u >> 13) & 1u;
        u += 0xc8000fffu + odd;
        o = u >> 13;
    }
    return static_cast<uint16_t>(o | (sign >> 16));
}
static inline float ld(const uint16_t* p, int64_t i) { return half_to_float(p[i]); }
static inline void st(uint16_t* p, int64_t i, float v) { p[i] = float_to_half(v); }
static inline float rnd(float v) { return half_to_float(float_to_half(v)); }
)";

constexpr const char* kBFloat16 = R"(
// bfloat16 stored as its bits: the high half of a float, rounded to nearest even.
using scalar_t = uint16_t;
static inline float bf16_to_float(uint16_t h) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}
static inline uint16_t float_to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet nan
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}
static inline float ld(const uint16_t* p, int64_t i) { return bf16_to_float(p[i]); }
static inline void st(uint16_t* p, int64_t i, float v) { p[i] = float_to_bf16(v); }
static inline float rnd(float v) { return bf16_to_float(float_to_bf16(v)); }
)";

std::string preamble(const Program& p) {
  std::string s = fill(kCommon, {{"BROADCAST", rule::broadcast_helpers(p, "static inline")}});
  s += p.dtype == DType::kFloat32 ? kFloat32 : p.dtype == DType::kFloat16 ? kFloat16 : kBFloat16;
  return s;
}

std::string ptr(const std::string& n) {
  return "static_cast<const scalar_t*>(" + n + ".data_ptr())";
}

// x's sizes as a vector, and the (outer, R, inner) view around `dim`.
constexpr const char* kAroundDim = R"(    const std::vector<int64_t> xs = x.sizes().vec();
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < @DIM@; ++d) outer *= xs[d];
    for (int d = @DIM@ + 1; d < static_cast<int>(xs.size()); ++d) inner *= xs[d];
    const int64_t R = xs[@DIM@];
)";

std::string elementwise(const Program& p) {
  std::string s = "    const std::vector<int64_t> xs = x.sizes().vec();\n";
  s += "    auto out = torch::empty_like(x);\n    const scalar_t* px = " + ptr("x") + ";\n";
  s += "    scalar_t* po = static_cast<scalar_t*>(out.data_ptr());\n" + operand_setup(p, p.prologue, "xs", "    ");
  s += "    const int64_t n = x.numel();\n    #pragma omp parallel for schedule(static)\n";
  s += "    for (int64_t i = 0; i < n; ++i) {\n        float v = ld(px, i);\n" + chain(p, p.prologue, "i", "        ");
  return s + "        st(po, i, v);\n    }\n    return out;\n";
}

std::string reduce_body(const Program& p) {
  switch (p.anchor.reduce) {
    case Reduce::kSum:
    case Reduce::kMean:
      return std::string("            double acc = 0.0;\n            for (int64_t r = 0; r < R; ++r) { @LOAD@ acc += v; }\n") +
             (p.anchor.reduce == Reduce::kMean ? "            float res = static_cast<float>(acc / static_cast<double>(R));\n"
                                               : "            float res = static_cast<float>(acc);\n");
    case Reduce::kAmax:
    case Reduce::kAmin: {
      const std::string f = p.anchor.reduce == Reduce::kAmax ? "fmaxf" : "fminf";
      return "            float res = 0.0f;\n            for (int64_t r = 0; r < R; ++r) { @LOAD@ res = r == 0 ? v : " + f +
             "(res, v); }\n";
    }
    case Reduce::kLogSumExp:
      return "            float m = -INFINITY;\n            for (int64_t r = 0; r < R; ++r) { @LOAD@ m = fmaxf(m, v); }\n"
             "            double acc = 0.0;\n            for (int64_t r = 0; r < R; ++r) { @LOAD@ acc += std::exp(static_cast<double>(v - m)); }\n"
             "            float res = std::isinf(m) ? m : m + static_cast<float>(std::log(acc));\n";
  }
  return "";
}

std::string load_stmt(const Program& p) {
  std::string c = chain(p, p.prologue, "xi", " ");
  for (char& ch : c)
    if (ch == '\n') ch = ' ';
  return "const int64_t xi = base + r * inner; float v = ld(px, xi);" + c;
}

std::string reduction(const Program& p) {
  std::string s = fill(kAroundDim, {{"DIM", std::to_string(p.anchor.dim)}});
  s += "    std::vector<int64_t> os = xs;\n";
  s += p.anchor.keepdim ? "    os[" + std::to_string(p.anchor.dim) + "] = 1;\n"
                        : "    os.erase(os.begin() + " + std::to_string(p.anchor.dim) + ");\n";
  s += "    auto out = torch::empty(os, x.options());\n    const scalar_t* px = " + ptr("x") + ";\n";
  s += "    scalar_t* po = static_cast<scalar_t*>(out.data_ptr());\n";
  s += operand_setup(p, p.prologue, "xs", "    ") + operand_setup(p, p.epilogue, "os", "    ");
  s += "    #pragma omp parallel for schedule(static)\n    for (int64_t o = 0; o < outer * inner; ++o) {\n";
  s += "            const int64_t base = (o / inner) * R * inner + o % inner;\n";
  s += fill(reduce_body(p), {{"LOAD", load_stmt(p)}});
  s += "            float v = rnd(res);\n" + chain(p, p.epilogue, "o", "            ");
  return s + "            st(po, o, v);\n    }\n    return out;\n";
}

std::string softmax(const Program& p) {
  const bool log = p.anchor.kind == Anchor::kLogSoftmax;
  std::string s = fill(kAroundDim, {{"DIM", std::to_string(p.anchor.dim)}});
  s += "    auto out = torch::empty_like(x);\n    const scalar_t* px = " + ptr("x") + ";\n";
  s += "    scalar_t* po = static_cast<scalar_t*>(out.data_ptr());\n";
  s += operand_setup(p, p.prologue, "xs", "    ") + operand_setup(p, p.epilogue, "xs", "    ");
  s += "    #pragma omp parallel for schedule(static)\n    for (int64_t o = 0; o < outer * inner; ++o) {\n";
  s += "            const int64_t base = (o / inner) * R * inner + o % inner;\n";
  s += "            float m = -INFINITY;\n            for (int64_t r = 0; r < R; ++r) { @LOAD@ m = fmaxf(m, v); }\n";
  s += "            double acc = 0.0;\n            for (int64_t r = 0; r < R; ++r) { @LOAD@ acc += std::exp(static_cast<double>(v - m)); }\n";
  s += log ? "            const float lse = static_cast<float>(std::log(acc));\n"
           : "            const double inv = 1.0 / acc;\n";
  s += "            for (int64_t r = 0; r < R; ++r) {\n                @LOAD@\n";
  s += log ? "                v = rnd(v - m - lse);\n"
           : "                v = rnd(static_cast<float>(std::exp(static_cast<double>(v - m)) * inv));\n";
  s += chain(p, p.epilogue, "xi", "                ") + "                st(po, xi, v);\n            }\n    }\n    return out;\n";
  return fill(s, {{"LOAD", load_stmt(p)}});
}

// Layer/RMS/group norm: rows of L contiguous elements; the affine parameter of element j of
// row `row` is at @CH@.
std::string row_norm(const Program& p) {
  const AnchorSpec& a = p.anchor;
  const bool rms = a.kind == Anchor::kRmsNorm, group = a.kind == Anchor::kGroupNorm;
  std::string s = "    const std::vector<int64_t> xs = x.sizes().vec();\n";
  if (group) {
    s += "    const int64_t G = " + std::to_string(a.groups) + ", C = xs[1], S = x.numel() / (xs[0] * C);\n";
    s += "    const int64_t L = (C / G) * S, rows = xs[0] * G;\n";
  } else {
    s += "    const int64_t L = xs.back(), rows = x.numel() / L;\n";
  }
  s += "    auto out = torch::empty_like(x);\n    const scalar_t* px = " + ptr("x") + ";\n";
  s += "    const scalar_t* pw = " + ptr("w") + ";\n";
  if (!rms) s += "    const scalar_t* pb = " + ptr("bias") + ";\n";
  s += "    scalar_t* po = static_cast<scalar_t*>(out.data_ptr());\n";
  s += operand_setup(p, p.prologue, "xs", "    ") + operand_setup(p, p.epilogue, "xs", "    ");
  s += "    #pragma omp parallel for schedule(static)\n    for (int64_t row = 0; row < rows; ++row) {\n";
  s += "        const int64_t base = row * L;\n        double sum = 0.0;\n";
  s += "        for (int64_t j = 0; j < L; ++j) {\n            const int64_t xi = base + j;\n            float v = ld(px, xi);\n";
  s += chain(p, p.prologue, "xi", "            ");
  s += "            st(po, xi, v);  // the normalised input, as the reference rounds it\n";
  s += rms ? "            const double q = ld(po, xi);\n            sum += q * q;\n        }\n        const double mean = 0.0;\n"
               "        const double var = sum / static_cast<double>(L);\n"
           : "            sum += ld(po, xi);\n        }\n        const double mean = sum / static_cast<double>(L);\n"
             "        double var = 0.0;\n        for (int64_t j = 0; j < L; ++j) {\n"
             "            const double c = ld(po, base + j) - mean;\n            var += c * c;\n        }\n"
             "        var /= static_cast<double>(L);\n";
  s += "        const float rstd = static_cast<float>(1.0 / std::sqrt(var + " + py_float(a.eps) + "));\n";
  s += "        const float meanf = static_cast<float>(mean);\n";
  s += "        for (int64_t j = 0; j < L; ++j) {\n            const int64_t xi = base + j;\n";
  s += group ? "            const int64_t ch = (row % G) * (C / G) + j / S;\n" : "            const int64_t ch = j;\n";
  // RMSNorm rounds the normalised value before the weight multiplies it, as torch's rms_norm does.
  s += rms ? "            float v = rnd(rnd(ld(po, xi) * rstd) * ld(pw, ch));\n"
           : "            float v = rnd((ld(po, xi) - meanf) * rstd * ld(pw, ch) + ld(pb, ch));\n";
  return s + chain(p, p.epilogue, "xi", "            ") + "            st(po, xi, v);\n        }\n    }\n    return out;\n";
}

std::string batch_norm(const Program& p) {
  const bool train = p.anchor.kind == Anchor::kBatchNormTrain;
  std::string s = "    const std::vector<int64_t> xs = x.sizes().vec();\n";
  s += "    const int64_t N = xs[0], C = xs[1], S = x.numel() / (N * C);\n";
  s += "    auto out = torch::empty_like(x);\n    const scalar_t* px = " + ptr("x") + ";\n";
  s += "    const scalar_t* pw = " + ptr("w") + ";\n    const scalar_t* pb = " + ptr("bias") + ";\n";
  if (!train) s += "    const scalar_t* pm = " + ptr("rmean") + ";\n    const scalar_t* pv = " + ptr("rvar") + ";\n";
  s += "    scalar_t* po = static_cast<scalar_t*>(out.data_ptr());\n";
  s += operand_setup(p, p.prologue, "xs", "    ") + operand_setup(p, p.epilogue, "xs", "    ");
  s += "    #pragma omp parallel for schedule(static)\n    for (int64_t c = 0; c < C; ++c) {\n";
  if (train) {
    s += "        double sum = 0.0;\n        for (int64_t n = 0; n < N; ++n)\n";
    s += "            for (int64_t s = 0; s < S; ++s) {\n                const int64_t xi = (n * C + c) * S + s;\n";
    s += "                float v = ld(px, xi);\n" + chain(p, p.prologue, "xi", "                ");
    s += "                st(po, xi, v);\n                sum += ld(po, xi);\n            }\n";
    s += "        const double cnt = static_cast<double>(N * S), mean = sum / cnt;\n        double var = 0.0;\n";
    s += "        for (int64_t n = 0; n < N; ++n)\n            for (int64_t s = 0; s < S; ++s) {\n";
    s += "                const double d = ld(po, (n * C + c) * S + s) - mean;\n                var += d * d;\n            }\n";
    s += "        const float meanf = static_cast<float>(mean);\n";
    s += "        const float rstd = static_cast<float>(1.0 / std::sqrt(var / cnt + " + py_float(p.anchor.eps) + "));\n";
  } else {
    s += "        const float meanf = ld(pm, c);\n";
    s += "        const float rstd = 1.0f / std::sqrt(ld(pv, c) + " + c_float(p.anchor.eps) + ");\n";
  }
  s += "        const float scale = rstd * ld(pw, c), shift = ld(pb, c);\n";
  s += "        for (int64_t n = 0; n < N; ++n)\n            for (int64_t s = 0; s < S; ++s) {\n";
  s += "                const int64_t xi = (n * C + c) * S + s;\n";
  s += train ? "                float v = ld(po, xi);\n" : "                float v = ld(px, xi);\n" + chain(p, p.prologue, "xi", "                ");
  s += "                v = rnd((v - meanf) * scale + shift);\n" + chain(p, p.epilogue, "xi", "                ");
  return s + "                st(po, xi, v);\n            }\n    }\n    return out;\n";
}

// Programs whose anchor reads each input element many times (matmul, conv) apply their
// prologue once, into a temporary `xin`, rounded as the reference rounds it.
std::string materialise_prologue(const Program& p) {
  std::string s = "    const std::vector<int64_t> xs = x.sizes().vec();\n";
  if (p.prologue.empty()) return s + "    const scalar_t* px = " + ptr("x") + ";\n";
  s += "    auto xin = torch::empty_like(x);\n    {\n        const scalar_t* praw = " + ptr("x") + ";\n";
  s += "        scalar_t* pt = static_cast<scalar_t*>(xin.data_ptr());\n" + operand_setup(p, p.prologue, "xs", "        ");
  s += "        const int64_t n = x.numel();\n        #pragma omp parallel for schedule(static)\n";
  s += "        for (int64_t i = 0; i < n; ++i) {\n            float v = ld(praw, i);\n" + chain(p, p.prologue, "i", "            ");
  return s + "            st(pt, i, v);\n        }\n    }\n    const scalar_t* px = " + ptr("xin") + ";\n";
}

std::string matmul(const Program& p) {
  const AnchorSpec& a = p.anchor;
  const bool linear = a.kind == Anchor::kLinear;
  std::string s = materialise_prologue(p);
  if (linear) {
    s += "    const int64_t K = xs.back(), M = x.numel() / K, N = w.size(0), batch = 1;\n";
    s += "    std::vector<int64_t> os = xs;\n    os.back() = N;\n";
  } else if (a.kind == Anchor::kBmm) {
    s += "    const int64_t batch = xs[0], M = xs[1], K = xs[2], N = b.size(2);\n    const std::vector<int64_t> os = {batch, M, N};\n";
  } else {
    s += "    const int64_t batch = 1, M = xs[0], K = xs[1], N = b.size(1);\n    const std::vector<int64_t> os = {M, N};\n";
  }
  s += "    auto out = torch::empty(os, x.options());\n    scalar_t* po = static_cast<scalar_t*>(out.data_ptr());\n";
  s += linear ? "    const scalar_t* pw = " + ptr("w") + ";\n" : "    const scalar_t* pb2 = " + ptr("b") + ";\n";
  if (linear && a.bias) s += "    const scalar_t* pbias = " + ptr("bias") + ";\n";
  s += operand_setup(p, p.epilogue, "os", "    ");
  s += "    #pragma omp parallel for schedule(static)\n    for (int64_t row = 0; row < batch * M; ++row) {\n";
  s += "        const scalar_t* arow = px + row * K;\n";
  s += "        std::vector<float> acc(static_cast<size_t>(N), 0.0f);\n";
  if (linear) {
    s += "        std::vector<float> av(static_cast<size_t>(K));\n        for (int64_t k = 0; k < K; ++k) av[k] = ld(arow, k);\n";
    s += "        for (int64_t j = 0; j < N; ++j) {\n            float sum = 0.0f;\n";
    s += "            for (int64_t k = 0; k < K; ++k) sum += av[k] * ld(pw, j * K + k);\n";
    s += std::string("            acc[j] = sum") + (a.bias ? " + ld(pbias, j)" : "") + ";\n        }\n";
  } else {
    s += "        const scalar_t* bmat = pb2 + (row / M) * K * N;\n";
    s += "        for (int64_t k = 0; k < K; ++k) {\n            const float av = ld(arow, k);\n";
    s += "            for (int64_t j = 0; j < N; ++j) acc[j] += av * ld(bmat, k * N + j);\n        }\n";
  }
  s += "        for (int64_t j = 0; j < N; ++j) {\n            const int64_t oi = row * N + j;\n            float v = rnd(acc[j]);\n";
  return s + chain(p, p.epilogue, "oi", "            ") + "            st(po, oi, v);\n        }\n    }\n    return out;\n";
}

// conv1d is conv2d with H = 1 (weights (O, C/G, K) are (O, C/G, 1, K) in memory).
std::string conv(const Program& p) {
  const AnchorSpec& a = p.anchor;
  const bool one_d = a.kind == Anchor::kConv1d;
  std::string s = materialise_prologue(p);
  s += one_d ? "    const int64_t N = xs[0], C = xs[1], H = 1, W = xs[2];\n"
             : "    const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];\n";
  s += "    const int64_t O = w.size(0), G = " + std::to_string(a.groups) + ", CG = C / G, OG = O / G;\n";
  s += "    const int64_t KH = " + std::string(one_d ? "1" : std::to_string(a.kernel)) + ", KW = " + std::to_string(a.kernel) + ";\n";
  s += "    const int64_t SH = " + std::string(one_d ? "1" : std::to_string(a.stride)) + ", SW = " + std::to_string(a.stride) + ";\n";
  s += "    const int64_t PH = " + std::string(one_d ? "0" : std::to_string(a.padding)) + ", PW = " + std::to_string(a.padding) + ";\n";
  s += "    const int64_t OH = (H + 2 * PH - KH) / SH + 1, OW = (W + 2 * PW - KW) / SW + 1;\n";
  s += one_d ? "    const std::vector<int64_t> os = {N, O, OW};\n" : "    const std::vector<int64_t> os = {N, O, OH, OW};\n";
  s += "    auto out = torch::empty(os, x.options());\n    scalar_t* po = static_cast<scalar_t*>(out.data_ptr());\n";
  s += "    const scalar_t* pw = " + ptr("w") + ";\n";
  if (a.bias) s += "    const scalar_t* pbias = " + ptr("bias") + ";\n";
  s += operand_setup(p, p.epilogue, "os", "    ");
  s += "    #pragma omp parallel for schedule(static)\n    for (int64_t no = 0; no < N * O; ++no) {\n";
  s += "        const int64_t n = no / O, o = no % O, g = o / OG;\n";
  s += "        for (int64_t oh = 0; oh < OH; ++oh)\n            for (int64_t ow = 0; ow < OW; ++ow) {\n";
  s += "                float acc = 0.0f;\n                for (int64_t cl = 0; cl < CG; ++cl) {\n";
  s += "                    const scalar_t* plane = px + (n * C + g * CG + cl) * H * W;\n";
  s += "                    const scalar_t* wk = pw + (o * CG + cl) * KH * KW;\n";
  s += "                    for (int64_t kh = 0; kh < KH; ++kh) {\n                        const int64_t ih = oh * SH - PH + kh;\n";
  s += "                        if (ih < 0 || ih >= H) continue;\n                        for (int64_t kw = 0; kw < KW; ++kw) {\n";
  s += "                            const int64_t iw = ow * SW - PW + kw;\n";
  s += "                            if (iw >= 0 && iw < W) acc += ld(plane, ih * W + iw) * ld(wk, kh * KW + kw);\n";
  s += "                        }\n                    }\n                }\n";
  if (a.bias) s += "                acc += ld(pbias, o);\n";
  s += "                const int64_t oi = (no * OH + oh) * OW + ow;\n                float v = rnd(acc);\n";
  return s + chain(p, p.epilogue, "oi", "                ") + "                st(po, oi, v);\n            }\n    }\n    return out;\n";
}

std::string pool(const Program& p) {
  const AnchorSpec& a = p.anchor;
  const bool one_d = p.input.size() == 3, max = a.kind == Anchor::kMaxPool;
  std::string s = "    const std::vector<int64_t> xs = x.sizes().vec();\n";
  s += one_d ? "    const int64_t NC = xs[0] * xs[1], H = 1, W = xs[2];\n"
             : "    const int64_t NC = xs[0] * xs[1], H = xs[2], W = xs[3];\n";
  s += "    const int64_t KH = " + std::string(one_d ? "1" : std::to_string(a.kernel)) + ", KW = " + std::to_string(a.kernel) + ";\n";
  s += "    const int64_t SH = " + std::string(one_d ? "1" : std::to_string(a.stride)) + ", SW = " + std::to_string(a.stride) + ";\n";
  s += "    const int64_t OH = (H - KH) / SH + 1, OW = (W - KW) / SW + 1;\n";
  s += one_d ? "    const std::vector<int64_t> os = {xs[0], xs[1], OW};\n"
             : "    const std::vector<int64_t> os = {xs[0], xs[1], OH, OW};\n";
  s += "    auto out = torch::empty(os, x.options());\n    const scalar_t* px = " + ptr("x") + ";\n";
  s += "    scalar_t* po = static_cast<scalar_t*>(out.data_ptr());\n";
  s += operand_setup(p, p.prologue, "xs", "    ") + operand_setup(p, p.epilogue, "os", "    ");
  s += "    #pragma omp parallel for schedule(static)\n    for (int64_t oi = 0; oi < NC * OH * OW; ++oi) {\n";
  s += "        const int64_t ow = oi % OW, oh = (oi / OW) % OH, nc = oi / (OW * OH);\n";
  s += max ? "        float acc = -INFINITY;\n" : "        float acc = 0.0f;\n";
  s += "        for (int64_t kh = 0; kh < KH; ++kh)\n            for (int64_t kw = 0; kw < KW; ++kw) {\n";
  s += "                const int64_t xi = (nc * H + oh * SH + kh) * W + ow * SW + kw;\n                float v = ld(px, xi);\n";
  s += chain(p, p.prologue, "xi", "                ");
  s += max ? "                acc = fmaxf(acc, v);\n            }\n        float v = rnd(acc);\n"
           : "                acc += v;\n            }\n        float v = rnd(acc / static_cast<float>(KH * KW));\n";
  return s + chain(p, p.epilogue, "oi", "        ") + "        st(po, oi, v);\n    }\n    return out;\n";
}

std::string body(const Program& p) {
  switch (p.anchor.kind) {
    case Anchor::kNone: return elementwise(p);
    case Anchor::kReduce: return reduction(p);
    case Anchor::kSoftmax:
    case Anchor::kLogSoftmax: return softmax(p);
    case Anchor::kLayerNorm:
    case Anchor::kRmsNorm:
    case Anchor::kGroupNorm: return row_norm(p);
    case Anchor::kBatchNormEval:
    case Anchor::kBatchNormTrain: return batch_norm(p);
    case Anchor::kMatmul:
    case Anchor::kBmm:
    case Anchor::kLinear: return matmul(p);
    case Anchor::kConv1d:
    case Anchor::kConv2d: return conv(p);
    case Anchor::kMaxPool:
    case Anchor::kAvgPool: return pool(p);
  }
  return "";
}

}  // namespace

std::string cpu_kernel_source(const Program& p) {
  std::string s = preamble(p);
  s += "\n// " + describe(p) + "\ntorch::Tensor fused_forward(" + rule::host_params(p) + ") {\n";
  s += rule::host_prologue(p) + body(p) + "}\n";
  return s;
}

}  // namespace musacoder::data
