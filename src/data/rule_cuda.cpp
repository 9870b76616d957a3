// The rule teacher's CUDA kernels: grid-stride element-wise kernels, one block per row with
// warp-shuffle block reductions (reductions, softmax, norms), one thread per output where the
// reduced elements are strided, 16x16 shared-memory tiled matmul, direct convolution and
// pooling with one thread per output. Launched on the current (default) stream, checked.
#include <string>

#include "data/rule_kernels.h"
#include "data/task_source.h"

namespace musacoder::data {
namespace {

using rule::chain;
using rule::fill;
using rule::operand_args;
using rule::operand_params;
using rule::operand_setup;

constexpr const char* kCommon = R"(#include <cstdint>
#include <vector>
@TYPE_HEADER@
@BROADCAST@@TYPE_FUNCS@@REDUCE@
static unsigned grid_for(int64_t n, int threads) {
    const int64_t blocks = (n + threads - 1) / threads;
    return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

static void check_launch() {
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "kernel launch failed: ", cudaGetErrorString(err));
}
)";

// Emitted only where a kernel calls block_reduce (reductions, softmax, norms): a shorter answer elsewhere.
constexpr const char* kBlockReduce = R"(
// Block-wide reductions for blockDim.x a multiple of 32 (<= 1024); `smem` holds 32 floats.
// Every thread gets the result; the trailing barrier lets the caller reuse `smem` at once.
__device__ __forceinline__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}
template <bool kMax>
__device__ float block_reduce(float v, float* smem) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
    v = kMax ? warp_max(v) : warp_sum(v);
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    if (warp == 0) {
        const float identity = kMax ? __int_as_float(0xff800000) : 0.0f;
        v = lane < nwarps ? smem[lane] : identity;
        v = kMax ? warp_max(v) : warp_sum(v);
        if (lane == 0) smem[0] = v;
    }
    __syncthreads();
    v = smem[0];
    __syncthreads();
    return v;
}
)";

// Loads, stores and rounding for the storage type @T@ (converted to and from float by @TO@ and
// @FROM@; float32 needs neither).
constexpr const char* kTypeFuncs = R"(
using scalar_t = @T@;
__device__ __forceinline__ float ld(const @T@* p, int64_t i) { return @TO@(p[i]); }
__device__ __forceinline__ void st(@T@* p, int64_t i, float v) { p[i] = @FROM@(v); }
__device__ __forceinline__ float rnd(float v) { return @TO@(@FROM@(v)); }
)";

std::string type_funcs(DType dtype) {
  if (dtype == DType::kFloat16)
    return fill(kTypeFuncs, {{"T", "__half"}, {"TO", "__half2float"}, {"FROM", "__float2half_rn"}});
  if (dtype == DType::kBFloat16)
    return fill(kTypeFuncs, {{"T", "__nv_bfloat16"}, {"TO", "__bfloat162float"}, {"FROM", "__float2bfloat16_rn"}});
  return fill(kTypeFuncs, {{"T", "float"}, {"TO", ""}, {"FROM", ""}});
}

std::string preamble(const Program& p, bool block_reduce) {
  const char* header = p.dtype == DType::kFloat16 ? "#include <cuda_fp16.h>\n"
                       : p.dtype == DType::kBFloat16 ? "#include <cuda_bf16.h>\n" : "";
  return fill(kCommon, {{"TYPE_HEADER", header},
                        {"BROADCAST", rule::broadcast_helpers(p, "__device__ __forceinline__")},
                        {"TYPE_FUNCS", type_funcs(p.dtype)},
                        {"REDUCE", block_reduce ? kBlockReduce : ""}});
}

std::string cptr(const std::string& n) {
  return "static_cast<const scalar_t*>(" + n + ".data_ptr())";
}

constexpr const char* kGridStride =
    "for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n; "
    "i += static_cast<int64_t>(gridDim.x) * blockDim.x)";

// The element-wise kernel `name`: out[i] = chain(x[i]) (the prologue; BatchNorm eval adds its
// per-channel affine before the epilogue).
std::string ew_kernel(const Program& p, const std::string& name, const std::vector<EwOp>& ops, bool bn_eval) {
  std::string s = "__global__ void " + name + "(const scalar_t* __restrict__ px, scalar_t* __restrict__ po, int64_t n";
  if (bn_eval) s += ", const scalar_t* __restrict__ pw, const scalar_t* __restrict__ pb, const scalar_t* __restrict__ pm, const scalar_t* __restrict__ pv, int64_t C, int64_t S";
  s += operand_params(p, ops) + (bn_eval ? operand_params(p, p.epilogue) : "") + ") {\n    " + kGridStride + " {\n";
  s += "        float v = ld(px, i);\n" + chain(p, ops, "i", "        ");
  if (bn_eval) {
    s += "        const int64_t c = (i / S) % C;\n";
    s += "        const float rstd = rsqrtf(ld(pv, c) + " + c_float(p.anchor.eps) + ");\n";
    s += "        v = rnd((v - ld(pm, c)) * (rstd * ld(pw, c)) + ld(pb, c));\n" + chain(p, p.epilogue, "i", "        ");
  }
  return s + "        st(po, i, v);\n    }\n}\n\n";
}

std::string launch_ew(const Program& p, const std::string& name, const std::string& in, const std::string& out,
                      const std::vector<EwOp>& ops, const std::string& extra = "") {
  return "    " + name + "<<<grid_for(" + in + ".numel(), 256), 256>>>(" + cptr(in) + ", static_cast<scalar_t*>(" + out +
         ".data_ptr()), " + in + ".numel()" + extra + operand_args(p, ops) + ");\n    check_launch();\n";
}

std::string elementwise(const Program& p) {
  std::string k = ew_kernel(p, "ew_kernel", p.prologue, false);
  std::string h = "    const std::vector<int64_t> xs = x.sizes().vec();\n    auto out = torch::empty_like(x);\n";
  h += operand_setup(p, p.prologue, "xs", "    ") + "    if (x.numel() == 0) return out;\n";
  h += launch_ew(p, "ew_kernel", "x", "out", p.prologue);
  return k + "@HOST@" + h + "    return out;\n}\n";
}

std::string batch_norm_eval(const Program& p) {
  std::string k = ew_kernel(p, "bn_kernel", p.prologue, true);
  std::string h = "    const std::vector<int64_t> xs = x.sizes().vec();\n    auto out = torch::empty_like(x);\n";
  h += "    const int64_t C = xs[1], S = x.numel() / (xs[0] * C);\n";
  h += operand_setup(p, p.prologue, "xs", "    ") + operand_setup(p, p.epilogue, "xs", "    ");
  h += "    if (x.numel() == 0) return out;\n";
  const std::string extra = ", " + cptr("w") + ", " + cptr("bias") + ", " + cptr("rmean") + ", " + cptr("rvar") + ", C, S";
  h += "    bn_kernel<<<grid_for(x.numel(), 256), 256>>>(" + cptr("x") + ", static_cast<scalar_t*>(out.data_ptr()), x.numel()" +
       extra + operand_args(p, p.prologue) + operand_args(p, p.epilogue) + ");\n    check_launch();\n";
  return k + "@HOST@" + h + "    return out;\n}\n";
}

std::string load_stmt(const Program& p) {
  std::string c = chain(p, p.prologue, "xi", " ");
  for (char& ch : c)
    if (ch == '\n') ch = ' ';
  return "const int64_t xi = base + r * inner; float v = ld(px, xi);" + c;
}

// Reduction over `dim` of the (outer, R, inner) view. Rows (inner == 1): one block per output,
// threads stride over R and combine with block_reduce. Columns: one thread per output.
std::string reduce_kernel(const Program& p, bool rows) {
  const Reduce red = p.anchor.reduce;
  const std::string loop = rows ? "for (int64_t r = threadIdx.x; r < R; r += blockDim.x)" : "for (int64_t r = 0; r < R; ++r)";
  auto combine = [rows](const std::string& var, bool mx) {
    return rows ? "        " + var + " = block_reduce<" + (mx ? "true" : "false") + ">(" + var + ", smem);\n" : "";
  };
  std::string s = "__global__ void reduce_" + std::string(rows ? "rows" : "cols") +
                  "(const scalar_t* __restrict__ px, scalar_t* __restrict__ po, int64_t outs, int64_t R, int64_t inner" +
                  operand_params(p, p.prologue) + operand_params(p, p.epilogue) + ") {\n";
  if (rows) s += "    __shared__ float smem[32];\n    for (int64_t o = blockIdx.x; o < outs; o += gridDim.x) {\n";
  else s += "    for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; o < outs; o += static_cast<int64_t>(gridDim.x) * blockDim.x) {\n";
  s += "        const int64_t base = (o / inner) * R * inner + o % inner;\n";
  if (red == Reduce::kSum || red == Reduce::kMean) {
    s += "        float acc = 0.0f;\n        " + loop + " { @LOAD@ acc += v; }\n" + combine("acc", false);
    s += red == Reduce::kMean ? "        const float res = acc / static_cast<float>(R);\n" : "        const float res = acc;\n";
  } else if (red == Reduce::kAmax || red == Reduce::kAmin) {
    const std::string sign = red == Reduce::kAmax ? "" : "-";
    s += "        float acc = __int_as_float(0xff800000);\n        " + loop + " { @LOAD@ acc = fmaxf(acc, " + sign + "v); }\n";
    s += combine("acc", true) + "        const float res = " + sign + "acc;\n";
  } else {
    s += "        float m = __int_as_float(0xff800000);\n        " + loop + " { @LOAD@ m = fmaxf(m, v); }\n" + combine("m", true);
    s += "        float acc = 0.0f;\n        " + loop + " { @LOAD@ acc += expf(v - m); }\n" + combine("acc", false);
    s += "        const float res = isinf(m) ? m : m + logf(acc);\n";
  }
  s += rows ? "        if (threadIdx.x == 0) {\n" : "        {\n";
  s += "            float v = rnd(res);\n" + chain(p, p.epilogue, "o", "            ") + "            st(po, o, v);\n        }\n    }\n}\n\n";
  return fill(s, {{"LOAD", load_stmt(p)}});
}

constexpr const char* kAroundDim = R"(    const std::vector<int64_t> xs = x.sizes().vec();
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < @DIM@; ++d) outer *= xs[d];
    for (int d = @DIM@ + 1; d < static_cast<int>(xs.size()); ++d) inner *= xs[d];
    const int64_t R = xs[@DIM@];
)";

std::string reduction(const Program& p) {
  std::string k = reduce_kernel(p, true) + reduce_kernel(p, false);
  std::string h = fill(kAroundDim, {{"DIM", std::to_string(p.anchor.dim)}});
  h += "    std::vector<int64_t> os = xs;\n";
  h += p.anchor.keepdim ? "    os[" + std::to_string(p.anchor.dim) + "] = 1;\n"
                        : "    os.erase(os.begin() + " + std::to_string(p.anchor.dim) + ");\n";
  h += "    auto out = torch::empty(os, x.options());\n";
  h += operand_setup(p, p.prologue, "xs", "    ") + operand_setup(p, p.epilogue, "os", "    ");
  h += "    const int64_t outs = outer * inner;\n    if (outs == 0) return out;\n";
  const std::string args = "(" + cptr("x") + ", static_cast<scalar_t*>(out.data_ptr()), outs, R, inner" +
                           operand_args(p, p.prologue) + operand_args(p, p.epilogue) + ")";
  h += "    if (inner == 1) reduce_rows<<<static_cast<unsigned>(outs < 65535 ? outs : 65535), 256>>>" + args + ";\n";
  h += "    else reduce_cols<<<grid_for(outs, 256), 256>>>" + args + ";\n    check_launch();\n";
  return k + "@HOST@" + h + "    return out;\n}\n";
}

std::string softmax_kernel(const Program& p, bool rows) {
  const bool log = p.anchor.kind == Anchor::kLogSoftmax;
  const std::string loop = rows ? "for (int64_t r = threadIdx.x; r < R; r += blockDim.x)" : "for (int64_t r = 0; r < R; ++r)";
  std::string s = "__global__ void softmax_" + std::string(rows ? "rows" : "cols") +
                  "(const scalar_t* __restrict__ px, scalar_t* __restrict__ po, int64_t outs, int64_t R, int64_t inner" +
                  operand_params(p, p.prologue) + operand_params(p, p.epilogue) + ") {\n";
  if (rows) s += "    __shared__ float smem[32];\n    for (int64_t o = blockIdx.x; o < outs; o += gridDim.x) {\n";
  else s += "    for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; o < outs; o += static_cast<int64_t>(gridDim.x) * blockDim.x) {\n";
  s += "        const int64_t base = (o / inner) * R * inner + o % inner;\n";
  s += "        float m = __int_as_float(0xff800000);\n        " + loop + " { @LOAD@ m = fmaxf(m, v); }\n";
  if (rows) s += "        m = block_reduce<true>(m, smem);\n";
  s += "        float acc = 0.0f;\n        " + loop + " { @LOAD@ acc += expf(v - m); }\n";
  if (rows) s += "        acc = block_reduce<false>(acc, smem);\n";
  s += log ? "        const float lse = logf(acc);\n" : "        const float inv = 1.0f / acc;\n";
  s += "        " + loop + " {\n            @LOAD@\n";
  s += log ? "            v = rnd(v - m - lse);\n" : "            v = rnd(expf(v - m) * inv);\n";
  s += chain(p, p.epilogue, "xi", "            ") + "            st(po, xi, v);\n        }\n    }\n}\n\n";
  return fill(s, {{"LOAD", load_stmt(p)}});
}

std::string softmax(const Program& p) {
  std::string k = softmax_kernel(p, true) + softmax_kernel(p, false);
  std::string h = fill(kAroundDim, {{"DIM", std::to_string(p.anchor.dim)}});
  h += "    auto out = torch::empty_like(x);\n";
  h += operand_setup(p, p.prologue, "xs", "    ") + operand_setup(p, p.epilogue, "xs", "    ");
  h += "    const int64_t outs = outer * inner;\n    if (outs == 0 || R == 0) return out;\n";
  const std::string args = "(" + cptr("x") + ", static_cast<scalar_t*>(out.data_ptr()), outs, R, inner" +
                           operand_args(p, p.prologue) + operand_args(p, p.epilogue) + ")";
  h += "    if (inner == 1) softmax_rows<<<static_cast<unsigned>(outs < 65535 ? outs : 65535), 256>>>" + args + ";\n";
  h += "    else softmax_cols<<<grid_for(outs, 256), 256>>>" + args + ";\n    check_launch();\n";
  return k + "@HOST@" + h + "    return out;\n}\n";
}

// Layer/RMS/group norm, one block per row of L contiguous elements; BatchNorm (train), one
// block per channel over its N*S elements. The prologue's (rounded) values are stashed in the
// output, and each thread re-reads only what it wrote.
std::string norm_kernel(const Program& p) {
  const AnchorSpec& a = p.anchor;
  const bool rms = a.kind == Anchor::kRmsNorm, bn = a.kind == Anchor::kBatchNormTrain, group = a.kind == Anchor::kGroupNorm;
  std::string s = "__global__ void norm_kernel(const scalar_t* __restrict__ px, const scalar_t* __restrict__ pw, ";
  s += rms ? "" : "const scalar_t* __restrict__ pb, ";
  s += "scalar_t* __restrict__ po, int64_t rows, int64_t L, int64_t C, int64_t S, int64_t G" + operand_params(p, p.prologue) +
       operand_params(p, p.epilogue) + ") {\n    __shared__ float smem[32];\n";
  s += "    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {\n";
  // Element j of the row: its flat index (BatchNorm: row = channel, j over (n, s)).
  const std::string idx = bn ? "((j / S) * C + row) * S + j % S" : "row * L + j";
  s += "        float sum = 0.0f;\n        for (int64_t j = threadIdx.x; j < L; j += blockDim.x) {\n";
  s += "            const int64_t xi = " + idx + ";\n            float v = ld(px, xi);\n" + chain(p, p.prologue, "xi", "            ");
  s += "            st(po, xi, v);\n";
  s += rms ? "            const float q = ld(po, xi);\n            sum += q * q;\n        }\n"
           : "            sum += ld(po, xi);\n        }\n";
  s += "        sum = block_reduce<false>(sum, smem);\n";
  if (rms) {
    s += "        const float mean = 0.0f, var = sum / static_cast<float>(L);\n";
  } else {
    s += "        const float mean = sum / static_cast<float>(L);\n        float var = 0.0f;\n";
    s += "        for (int64_t j = threadIdx.x; j < L; j += blockDim.x) {\n            const float c = ld(po, " + idx + ") - mean;\n";
    s += "            var += c * c;\n        }\n        var = block_reduce<false>(var, smem) / static_cast<float>(L);\n";
  }
  s += "        const float rstd = rsqrtf(var + " + c_float(a.eps) + ");\n";
  s += "        for (int64_t j = threadIdx.x; j < L; j += blockDim.x) {\n            const int64_t xi = " + idx + ";\n";
  s += bn ? "            const int64_t ch = row;\n" : group ? "            const int64_t ch = (row % G) * (C / G) + j / S;\n" : "            const int64_t ch = j;\n";
  s += rms ? "            float v = rnd(rnd((ld(po, xi) - mean) * rstd) * ld(pw, ch));\n"
           : "            float v = rnd((ld(po, xi) - mean) * rstd * ld(pw, ch) + ld(pb, ch));\n";
  return s + chain(p, p.epilogue, "xi", "            ") + "            st(po, xi, v);\n        }\n    }\n}\n\n";
}

std::string norm(const Program& p) {
  const AnchorSpec& a = p.anchor;
  std::string h = "    const std::vector<int64_t> xs = x.sizes().vec();\n    auto out = torch::empty_like(x);\n";
  if (a.kind == Anchor::kGroupNorm) {
    h += "    const int64_t G = " + std::to_string(a.groups) + ", C = xs[1], S = x.numel() / (xs[0] * C);\n";
    h += "    const int64_t L = (C / G) * S, rows = xs[0] * G;\n";
  } else if (a.kind == Anchor::kBatchNormTrain) {
    h += "    const int64_t G = 1, C = xs[1], S = x.numel() / (xs[0] * C), L = xs[0] * S, rows = C;\n";
  } else {
    h += "    const int64_t G = 1, C = 1, S = 1, L = xs.back(), rows = x.numel() / L;\n";
  }
  h += operand_setup(p, p.prologue, "xs", "    ") + operand_setup(p, p.epilogue, "xs", "    ");
  h += "    if (rows == 0 || L == 0) return out;\n";
  h += "    norm_kernel<<<static_cast<unsigned>(rows < 65535 ? rows : 65535), 256>>>(" + cptr("x") + ", " + cptr("w") + ", ";
  h += a.kind == Anchor::kRmsNorm ? "" : cptr("bias") + ", ";
  h += "static_cast<scalar_t*>(out.data_ptr()), rows, L, C, S, G" + operand_args(p, p.prologue) + operand_args(p, p.epilogue) +
       ");\n    check_launch();\n";
  return norm_kernel(p) + "@HOST@" + h + "    return out;\n}\n";
}

// The prologue of a matmul or convolution, applied once into `xin` (its input is read many
// times); `px` then points at it.
std::string materialise_prologue(const Program& p) {
  std::string h = "    const std::vector<int64_t> xs = x.sizes().vec();\n";
  if (p.prologue.empty()) return h + "    const scalar_t* px = " + cptr("x") + ";\n";
  h += "    auto xin = torch::empty_like(x);\n" + operand_setup(p, p.prologue, "xs", "    ");
  h += "    if (x.numel() > 0) {\n    " + launch_ew(p, "prologue_kernel", "x", "xin", p.prologue) + "    }\n";
  return h + "    const scalar_t* px = " + cptr("xin") + ";\n";
}

std::string matmul(const Program& p) {
  const AnchorSpec& a = p.anchor;
  const bool linear = a.kind == Anchor::kLinear, bias = linear && a.bias;
  std::string k = p.prologue.empty() ? "" : ew_kernel(p, "prologue_kernel", p.prologue, false);
  k += "constexpr int kTile = 16;\n\n// out[b] = A[b] (M x K) * B[b] (K x N); for Linear, B(k, n) = W[n][k].\n";
  k += "__global__ void matmul_kernel(const scalar_t* __restrict__ A, const scalar_t* __restrict__ B, ";
  k += bias ? "const scalar_t* __restrict__ pbias, " : "";
  k += "scalar_t* __restrict__ po, int64_t M, int64_t N, int64_t K, int64_t b_stride" + operand_params(p, p.epilogue) + ") {\n";
  k += "    __shared__ float As[kTile][kTile];\n    __shared__ float Bs[kTile][kTile + 1];\n";
  k += "    const int tx = threadIdx.x, ty = threadIdx.y;\n    const int64_t bi = blockIdx.z;\n";
  k += "    const int64_t row = blockIdx.y * kTile + ty, col = blockIdx.x * kTile + tx;\n";
  k += "    A += bi * M * K;\n    B += bi * b_stride;\n    float acc = 0.0f;\n";
  k += "    for (int64_t k0 = 0; k0 < K; k0 += kTile) {\n";
  k += "        As[ty][tx] = (row < M && k0 + tx < K) ? ld(A, row * K + k0 + tx) : 0.0f;\n";
  k += linear ? "        const int64_t wn = blockIdx.x * kTile + ty;  // W row, read along k (coalesced)\n"
                "        Bs[tx][ty] = (wn < N && k0 + tx < K) ? ld(B, wn * K + k0 + tx) : 0.0f;\n"
              : "        Bs[ty][tx] = (k0 + ty < K && col < N) ? ld(B, (k0 + ty) * N + col) : 0.0f;\n";
  k += "        __syncthreads();\n#pragma unroll\n        for (int kk = 0; kk < kTile; ++kk) acc += As[ty][kk] * Bs[kk][tx];\n";
  k += "        __syncthreads();\n    }\n    if (row < M && col < N) {\n";
  if (bias) k += "        acc += ld(pbias, col);\n";
  k += "        const int64_t oi = (bi * M + row) * N + col;\n        float v = rnd(acc);\n";
  k += chain(p, p.epilogue, "oi", "        ") + "        st(po, oi, v);\n    }\n}\n\n";
  std::string h = materialise_prologue(p);
  if (linear) h += "    const int64_t K = xs.back(), M = x.numel() / K, N = w.size(0), batch = 1, b_stride = 0;\n    std::vector<int64_t> os = xs;\n    os.back() = N;\n";
  else if (a.kind == Anchor::kBmm) h += "    const int64_t batch = xs[0], M = xs[1], K = xs[2], N = b.size(2), b_stride = K * N;\n    const std::vector<int64_t> os = {batch, M, N};\n";
  else h += "    const int64_t batch = 1, M = xs[0], K = xs[1], N = b.size(1), b_stride = 0;\n    const std::vector<int64_t> os = {M, N};\n";
  h += "    auto out = torch::empty(os, x.options());\n" + operand_setup(p, p.epilogue, "os", "    ");
  h += "    if (out.numel() == 0) return out;\n";
  h += "    const dim3 block(kTile, kTile), grid(static_cast<unsigned>((N + kTile - 1) / kTile), static_cast<unsigned>((M + kTile - 1) / kTile), static_cast<unsigned>(batch));\n";
  h += "    matmul_kernel<<<grid, block>>>(px, " + cptr(linear ? "w" : "b") + ", " + (bias ? cptr("bias") + ", " : "") +
       "static_cast<scalar_t*>(out.data_ptr()), M, N, K, b_stride" + operand_args(p, p.epilogue) + ");\n    check_launch();\n";
  return k + "@HOST@" + h + "    return out;\n}\n";
}

// Direct convolution, one thread per output; conv1d is conv2d with H = 1.
std::string conv(const Program& p) {
  const AnchorSpec& a = p.anchor;
  const bool one_d = a.kind == Anchor::kConv1d;
  std::string k = p.prologue.empty() ? "" : ew_kernel(p, "prologue_kernel", p.prologue, false);
  k += "__global__ void conv_kernel(const scalar_t* __restrict__ px, const scalar_t* __restrict__ pw, ";
  k += a.bias ? "const scalar_t* __restrict__ pbias, " : "";
  k += "scalar_t* __restrict__ po, int64_t n, int64_t C, int64_t H, int64_t W, int64_t O, int64_t OH, int64_t OW" +
       operand_params(p, p.epilogue) + ") {\n";
  k += "    const int64_t G = " + std::to_string(a.groups) + ", CG = C / G, OG = O / G;\n";
  k += "    const int KH = " + std::string(one_d ? "1" : std::to_string(a.kernel)) + ", KW = " + std::to_string(a.kernel) + ";\n";
  k += "    const int SH = " + std::string(one_d ? "1" : std::to_string(a.stride)) + ", SW = " + std::to_string(a.stride) + ";\n";
  k += "    const int PH = " + std::string(one_d ? "0" : std::to_string(a.padding)) + ", PW = " + std::to_string(a.padding) + ";\n";
  k += std::string("    ") + kGridStride + " {\n";
  k += "        const int64_t ow = i % OW, oh = (i / OW) % OH, o = (i / (OW * OH)) % O, b = i / (OW * OH * O);\n";
  k += "        const int64_t g = o / OG;\n        float acc = 0.0f;\n";
  k += "        for (int64_t cl = 0; cl < CG; ++cl) {\n            const scalar_t* plane = px + (b * C + g * CG + cl) * H * W;\n";
  k += "            const scalar_t* wk = pw + (o * CG + cl) * KH * KW;\n";
  k += "            for (int kh = 0; kh < KH; ++kh) {\n                const int64_t ih = oh * SH - PH + kh;\n";
  k += "                if (ih < 0 || ih >= H) continue;\n                for (int kw = 0; kw < KW; ++kw) {\n";
  k += "                    const int64_t iw = ow * SW - PW + kw;\n";
  k += "                    if (iw >= 0 && iw < W) acc += ld(plane, ih * W + iw) * ld(wk, kh * KW + kw);\n";
  k += "                }\n            }\n        }\n";
  if (a.bias) k += "        acc += ld(pbias, o);\n";
  k += "        float v = rnd(acc);\n" + chain(p, p.epilogue, "i", "        ") + "        st(po, i, v);\n    }\n}\n\n";
  std::string h = materialise_prologue(p);
  h += one_d ? "    const int64_t N = xs[0], C = xs[1], H = 1, W = xs[2];\n" : "    const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];\n";
  h += "    const int64_t O = w.size(0);\n";
  h += "    const int64_t OH = (H + 2 * " + std::string(one_d ? "0" : std::to_string(a.padding)) + " - " +
       (one_d ? "1" : std::to_string(a.kernel)) + ") / " + (one_d ? "1" : std::to_string(a.stride)) + " + 1;\n";
  h += "    const int64_t OW = (W + 2 * " + std::to_string(a.padding) + " - " + std::to_string(a.kernel) + ") / " +
       std::to_string(a.stride) + " + 1;\n";
  h += one_d ? "    const std::vector<int64_t> os = {N, O, OW};\n" : "    const std::vector<int64_t> os = {N, O, OH, OW};\n";
  h += "    auto out = torch::empty(os, x.options());\n" + operand_setup(p, p.epilogue, "os", "    ");
  h += "    if (out.numel() == 0) return out;\n";
  h += "    conv_kernel<<<grid_for(out.numel(), 256), 256>>>(px, " + cptr("w") + ", " + (a.bias ? cptr("bias") + ", " : "") +
       "static_cast<scalar_t*>(out.data_ptr()), out.numel(), C, H, W, O, OH, OW" + operand_args(p, p.epilogue) +
       ");\n    check_launch();\n";
  return k + "@HOST@" + h + "    return out;\n}\n";
}

std::string pool(const Program& p) {
  const AnchorSpec& a = p.anchor;
  const bool one_d = p.input.size() == 3, max = a.kind == Anchor::kMaxPool;
  const std::string kh = one_d ? "1" : std::to_string(a.kernel), sh = one_d ? "1" : std::to_string(a.stride);
  std::string k = "__global__ void pool_kernel(const scalar_t* __restrict__ px, scalar_t* __restrict__ po, int64_t n, int64_t H, int64_t W, int64_t OH, int64_t OW" +
                  operand_params(p, p.prologue) + operand_params(p, p.epilogue) + ") {\n";
  k += "    const int KH = " + kh + ", KW = " + std::to_string(a.kernel) + ", SH = " + sh + ", SW = " + std::to_string(a.stride) + ";\n";
  k += std::string("    ") + kGridStride + " {\n";
  k += "        const int64_t ow = i % OW, oh = (i / OW) % OH, nc = i / (OW * OH);\n";
  k += max ? "        float acc = __int_as_float(0xff800000);\n" : "        float acc = 0.0f;\n";
  k += "        for (int kh = 0; kh < KH; ++kh)\n            for (int kw = 0; kw < KW; ++kw) {\n";
  k += "                const int64_t xi = (nc * H + oh * SH + kh) * W + ow * SW + kw;\n                float v = ld(px, xi);\n";
  k += chain(p, p.prologue, "xi", "                ");
  k += max ? "                acc = fmaxf(acc, v);\n            }\n        float v = rnd(acc);\n"
           : "                acc += v;\n            }\n        float v = rnd(acc / static_cast<float>(KH * KW));\n";
  k += chain(p, p.epilogue, "i", "        ") + "        st(po, i, v);\n    }\n}\n\n";
  std::string h = "    const std::vector<int64_t> xs = x.sizes().vec();\n";
  h += one_d ? "    const int64_t H = 1, W = xs[2];\n" : "    const int64_t H = xs[2], W = xs[3];\n";
  h += "    const int64_t OH = (H - " + kh + ") / " + sh + " + 1, OW = (W - " + std::to_string(a.kernel) + ") / " +
       std::to_string(a.stride) + " + 1;\n";
  h += one_d ? "    const std::vector<int64_t> os = {xs[0], xs[1], OW};\n" : "    const std::vector<int64_t> os = {xs[0], xs[1], OH, OW};\n";
  h += "    auto out = torch::empty(os, x.options());\n";
  h += operand_setup(p, p.prologue, "xs", "    ") + operand_setup(p, p.epilogue, "os", "    ");
  h += "    if (out.numel() == 0) return out;\n";
  h += "    pool_kernel<<<grid_for(out.numel(), 256), 256>>>(" + cptr("x") + ", static_cast<scalar_t*>(out.data_ptr()), out.numel(), H, W, OH, OW" +
       operand_args(p, p.prologue) + operand_args(p, p.epilogue) + ");\n    check_launch();\n";
  return k + "@HOST@" + h + "    return out;\n}\n";
}

// Kernels, then "@HOST@", then the host function's body.
std::string kernels_and_host(const Program& p) {
  switch (p.anchor.kind) {
    case Anchor::kNone: return elementwise(p);
    case Anchor::kReduce: return reduction(p);
    case Anchor::kSoftmax:
    case Anchor::kLogSoftmax: return softmax(p);
    case Anchor::kLayerNorm:
    case Anchor::kRmsNorm:
    case Anchor::kGroupNorm:
    case Anchor::kBatchNormTrain: return norm(p);
    case Anchor::kBatchNormEval: return batch_norm_eval(p);
    case Anchor::kMatmul:
    case Anchor::kBmm:
    case Anchor::kLinear: return matmul(p);
    case Anchor::kConv1d:
    case Anchor::kConv2d: return conv(p);
    case Anchor::kMaxPool:
    case Anchor::kAvgPool: return pool(p);
  }
  return "@HOST@";
}

}  // namespace

std::string cuda_kernel_source(const Program& p) {
  const std::string host = "// " + describe(p) + "\ntorch::Tensor fused_forward(" + rule::host_params(p) + ") {\n" +
                           rule::host_prologue(p);
  const std::string body = kernels_and_host(p);
  return preamble(p, body.find("block_reduce<") != std::string::npos) + "\n" + fill(body, {{"HOST", host}});
}

}  // namespace musacoder::data
