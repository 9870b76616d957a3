// The unmapped-name scan and the semantic warnings on ported text.
#include <regex>

#include "rules_internal.h"

namespace musacoder::musa {

namespace {

struct Pattern {
  std::regex re;
  bool python_only;
  const char* what;
};

std::regex re(const char* p) { return std::regex(p, std::regex::ECMAScript); }

// CUDA names a MUSA port must not keep. Include lines into torch_musa (whose paths keep CUDA file names,
// e.g. torch_musa/csrc/aten/musa/CUDAGeneratorImpl.h) are not scanned.
const std::vector<Pattern>& cuda_patterns() {
  static const std::vector<Pattern> p = {
      {re(R"(\bcuda[A-Z]\w*)"), false, "CUDA runtime API name"},
      {re(R"(\bcu[A-Z][a-z]\w*)"), false, "CUDA driver API name"},
      {re(R"(\bCU(DA)?_[A-Z0-9_]+\b)"), false, "CUDA constant"},
      {re(R"(\bCUDA[A-Z][A-Za-z]\w*)"), false, "CUDA-named type or macro"},
      {re(R"(\b__CUDA\w*__)"), false, "CUDA predefined macro"},
      {re(R"(\b__nv_\w+|\bnv_(bfloat16|half)\w*|\bnvcuda::)"), false, "NVIDIA type or namespace"},
      {re(R"(\b(c10|at|torch|thrust)::cuda\b)"), false, "CUDA namespace"},
      {re(R"(\b(cublas|cudnn|curand|cufft|cusparse|cusolver|cutensor|nccl|nvtx|nvjpeg)\w*)"), false, "CUDA library name"},
      {re(R"(#\s*include\s*[<"](cuda|cub/|cute/|cutlass|nvtx|nv/|cooperative_groups)[^>"]*[>"])"), false,
       "CUDA header"},
      {re(R"(\btorch\.cuda\b|\btorch\.backends\.cud(a|nn)\b)"), true, "torch.cuda API"},
      {re(R"(\.cuda\(|\.is_cuda\b)"), true, "CUDA tensor method"},
      {re(R"(["']cuda(:\d*)?["'])"), true, "CUDA device string"},
      {re(R"(\btorch\.utils\.cpp_extension\b|\b(cuda_sources|extra_cuda_cflags|with_cuda)\s*=)"), true,
       "CUDA extension build API"},
  };
  return p;
}

// MUSA names a port back to CUDA must not keep.
const std::vector<Pattern>& musa_patterns() {
  static const std::vector<Pattern> p = {
      {re(R"(\bmusa[A-Z]\w*)"), false, "MUSA runtime API name"},
      {re(R"(\bmu[A-Z][a-z]\w*)"), false, "MUSA driver API name"},
      {re(R"(\bMU(SA)?_[A-Z0-9_]+\b)"), false, "MUSA constant"},
      {re(R"(\bMUSA[A-Z][A-Za-z]\w*)"), false, "MUSA-named type or macro"},
      {re(R"(\b__MUSA\w*__|\b__mt_\w+)"), false, "MUSA macro or type"},
      {re(R"(\b(c10|at|torch|thrust)::musa\b)"), false, "MUSA namespace"},
      {re(R"(\b(mublas|mudnn|murand|mufft|musparse|musolver|mccl)\w*)"), false, "MUSA library name"},
      {re(R"(#\s*include\s*[<"](musa|torch_musa|mutlass)[^>"]*[>"])"), false, "MUSA header"},
      {re(R"(\btorch\.musa\b|\btorch_musa\b)"), true, "torch_musa API"},
      {re(R"(\.musa\(|\.is_musa\b)"), true, "MUSA tensor method"},
      {re(R"(["']musa(:\d*)?["'])"), true, "MUSA device string"},
      {re(R"(\b(musa_sources|extra_musa_cflags|with_musa)\s*=)"), true, "MUSA extension build API"},
  };
  return p;
}

bool torch_musa_include(const std::string& line) {
  static const std::regex inc(R"(^\s*#\s*include\s*[<"]torch_musa/)");
  return std::regex_search(line, inc);
}

std::vector<Finding> find_all(std::string_view text, SourceKind kind, const std::vector<Pattern>& patterns,
                              bool skip_torch_musa_includes) {
  std::vector<Finding> out;
  int line_no = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    ++line_no;
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string line(text.substr(start, end - start));
    start = end + 1;
    if (skip_torch_musa_includes && torch_musa_include(line)) continue;
    for (const Pattern& p : patterns) {
      if (p.python_only && kind != SourceKind::kPython) continue;
      for (auto it = std::sregex_iterator(line.begin(), line.end(), p.re); it != std::sregex_iterator(); ++it)
        out.push_back({line_no, it->str(), std::string(p.what) + " left unmapped"});
    }
  }
  return out;
}

struct Warning {
  std::regex re;
  const char* message;
};

const std::vector<Warning>& warnings() {
  static const std::vector<Warning> w = {
      {re(R"(\bwarpSize\b|__shfl\w*|__ballot_sync|__activemask|__syncwarp|\b0xffffffff\b|\bWARP_SIZE\b|\bkWarpSize\b)"),
       "warp-level code: CUDA warps are 32 lanes, MUSA's warp width depends on the arch (torch_musa's own "
       "extensions assume 128); use warpSize / at::musa::warp_size() and full-warp masks of that width"},
      {re(R"(\basm\b|\b__asm__\b)"),
       "inline assembly is PTX and cannot run on MUSA (torchada turns `asm volatile` into `if(0) asm volatile`, "
       "a statement that does nothing)"},
      {re(R"(__MUSA_ARCH__\s*(<|<=|>|>=|==|!=)\s*([5-9]\d\d|1\d\d\d)\b)"),
       "arch comparison against an NVIDIA number: MUSA archs are 10/21/22/31/32 (mp_XX, x10 in "
       "__MUSA_ARCH__), not sm_XX; torchada maps only 800 -> 220 and 900 -> 310"},
      {re(R"(\bwmma::|\bmma\.sync|\bnvcuda::|\bldmatrix\b|\bcp\.async\b)"),
       "tensor-core / async-copy intrinsics have no text mapping: MUSA's matrix units are programmed "
       "through mutlass or muDNN"},
      {re(R"(\ballow_tf32\b)"),
       "TF32: torch_musa switches it for matmul and convolution together (torch.backends.mudnn.allow_tf32)"},
      {re(R"(\bcooperative_groups\b)"), "cooperative groups: check MUSA's support for the groups used"},
  };
  return w;
}

}  // namespace

std::vector<Finding> scan_unmapped(std::string_view text, SourceKind kind, Direction d) {
  return d == Direction::kToMusa ? find_all(text, kind, cuda_patterns(), true)
                                 : find_all(text, kind, musa_patterns(), false);
}

std::vector<Finding> semantic_warnings(std::string_view musa_text, SourceKind kind) {
  (void)kind;
  std::vector<Finding> out;
  const std::string s(musa_text);
  for (const Warning& w : warnings()) {
    auto it = std::sregex_iterator(s.begin(), s.end(), w.re);
    if (it == std::sregex_iterator()) continue;
    // One finding per kind of difference, at its first occurrence, naming how often it occurs.
    const int count = static_cast<int>(std::distance(it, std::sregex_iterator()));
    out.push_back({detail::line_of(musa_text, static_cast<std::size_t>(it->position())), it->str(),
                   std::string(w.message) + (count > 1 ? " (" + std::to_string(count) + " places)" : "")});
  }
  return out;
}

}  // namespace musacoder::musa
