// Import-level legality (library_imports.h). The rules, in the order judge_import applies them:
//  1. C symbols: run-time symbol lookup and code loading, Python import/exec, vendor BLAS/DNN
//     families, THP* tensor conversion helpers; any other C symbol (libc, libm, CUDA runtime) is allowed.
//  2. at::_ops::<op>: an aten op called from C++; allowed when <op> is an allowed op (or one of its
//     overloads, "<op>_<overload>" — every aten name of that shape that is not itself an allowed op is
//     data movement or a view, never arithmetic; docs/legality.md lists them).
//  3. at::native, at::cpu, at::cuda::<op>, composite namespaces, at::meta: kernels; at::cuda's device
//     queries and streams are allowed; at::cuda::blas and the BLAS/solver/sparse handles are vendor.
//  4. c10: the core (TensorImpl, Storage, Allocator, errors, devices, streams) is allowed; the
//     dispatcher and the dispatch-key / dispatch-mode state are not.
//  5. at:: and torch:: entry points on the allowlists below; anything else of libtorch is unlisted.
#include "mooreeval/legality/library_imports.h"

#include <array>
#include <cctype>
#include <map>
#include <regex>
#include <string_view>

#include "mooreeval/legality/elf_imports.h"
#include "mooreeval/legality/legality.h"

namespace musacoder::legality {

namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

template <std::size_t N>
bool any_prefix(std::string_view s, const std::array<std::string_view, N>& prefixes) {
  for (auto p : prefixes)
    if (starts_with(s, p)) return true;
  return false;
}

template <std::size_t N>
bool one_of(std::string_view s, const std::array<std::string_view, N>& names) {
  for (auto n : names)
    if (s == n) return true;
  return false;
}

// <source-name> ::= <length> <identifier>; advances `p`. False when there is none at `p`.
bool read_source_name(const std::string& s, std::size_t& p, std::string& out) {
  std::size_t len = 0, q = p;
  while (q < s.size() && std::isdigit(static_cast<unsigned char>(s[q]))) len = len * 10 + (s[q++] - '0');
  if (q == p || len == 0 || q + len > s.size()) return false;
  out = s.substr(q, len);
  p = q + len;
  return true;
}

// Skips the special-name prefixes that wrap an entity: vtable, VTT, typeinfo (name), guard variable,
// thread-local wrappers, and this/virtual-adjusting thunks (with their offsets).
void skip_special(const std::string& s, std::size_t& p) {
  auto skip_number = [&] {
    if (p < s.size() && s[p] == 'n') ++p;
    while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p]))) ++p;
    if (p < s.size() && s[p] == '_') ++p;
  };
  while (p + 1 < s.size()) {
    const std::string_view two(s.data() + p, 2);
    if (two == "TV" || two == "TT" || two == "TI" || two == "TS" || two == "GV" || two == "TW" || two == "TH" ||
        two == "GR") {
      p += 2;
    } else if (two == "Th") {
      p += 2;
      skip_number();
    } else if (two == "Tv") {
      p += 2;
      skip_number();
      skip_number();
    } else {
      return;
    }
  }
}

}  // namespace

std::vector<std::string> name_components(const std::string& mangled) {
  std::vector<std::string> parts;
  if (!starts_with(mangled, "_Z")) return parts;
  std::size_t p = 2;
  skip_special(mangled, p);
  if (p < mangled.size() && mangled[p] == 'Z') ++p;  // a local entity: name its enclosing function
  const bool nested = p < mangled.size() && mangled[p] == 'N';
  if (nested) {
    ++p;
    while (p < mangled.size() && (mangled[p] == 'r' || mangled[p] == 'V' || mangled[p] == 'K')) ++p;
    if (p < mangled.size() && (mangled[p] == 'R' || mangled[p] == 'O')) ++p;
  }
  std::string name;
  while (p < mangled.size()) {
    if (mangled.compare(p, 2, "St") == 0) {
      parts.push_back("std");
      p += 2;
    } else if (mangled[p] == 'B' && !parts.empty()) {  // an ABI tag such as B5cxx11
      ++p;
      if (!read_source_name(mangled, p, name)) break;
    } else if (read_source_name(mangled, p, name)) {
      parts.push_back(name);
    } else {
      break;  // template arguments, a constructor, an operator, a substitution, or the end
    }
    if (!nested && !(parts.size() == 1 && parts[0] == "std")) break;
  }
  return parts;
}

const char* import_rule_name(ImportClass c) {
  switch (c) {
    case ImportClass::kAllowed:
      return "allowed";
    case ImportClass::kTorchCompute:
      return "torch_compute_symbol";
    case ImportClass::kDispatcher:
      return "dispatcher_symbol";
    case ImportClass::kVendorLibrary:
      return "vendor_library_symbol";
    case ImportClass::kRuntimeLookup:
      return "runtime_symbol_lookup";
    case ImportClass::kPythonImport:
      return "python_import_symbol";
    case ImportClass::kUnlistedTorch:
      return "unlisted_torch_symbol";
  }
  return "unknown";
}

namespace {

using Judgement = ImportJudgement;

// The vendor family of a C symbol ("" when it is none): cuBLAS, cuDNN, ... and BLAS/LAPACK routines.
std::string vendor_family(const std::string& s) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 15> kFamilies{{
      {"cublas", "cublas"}, {"cudnn", "cudnn"}, {"cusparse", "cusparse"}, {"cusolver", "cusolver"},
      {"cufft", "cufft"}, {"curand", "curand"}, {"nccl", "nccl"}, {"cutensor", "cutensor"},
      {"mkl_", "mkl"}, {"MKL_", "mkl"}, {"cblas_", "blas"}, {"openblas_", "blas"}, {"dnnl_", "onednn"},
      {"mkldnn_", "onednn"}, {"xnn_", "xnnpack"},
  }};
  for (const auto& [prefix, family] : kFamilies)
    if (starts_with(s, prefix)) return std::string(family);
  static const std::regex fortran(
      R"(^[sdczh](gemm|gemv|symm|symv|syrk|syr2k|trmm|trsm|trmv|trsv|axpy|dot|dotu|dotc|scal|copy|swap|nrm2|asum|ger|gesv|getrf|getrs|getri|potrf|potrs|geqrf|orgqr|syev|syevd|gesvd|gesdd|gels)_?$)");
  if (std::regex_match(s, fortran)) return "blas";
  return "";
}

Judgement judge_c_symbol(const std::string& s, const std::set<std::string>& libraries) {
  static constexpr std::array<std::string_view, 12> kLookup{
      "dlopen", "dlsym", "dlvsym", "dlmopen", "__libc_dlopen_mode", "__libc_dlsym", "__libc_dlvsym", "_dl_sym",
      "_dl_vsym", "cuModuleLoad", "cuLibraryLoadFromFile", "cudaLibraryLoadFromFile"};
  static constexpr std::array<std::string_view, 4> kLookupPrefix{"cuGetProcAddress", "cudaGetDriverEntryPoint",
                                                                  "nvrtc", "nvJitLink"};
  if (one_of(s, kLookup) || any_prefix(s, kLookupPrefix))
    return {ImportClass::kRuntimeLookup, "resolves symbols or loads code at run time"};
  static constexpr std::array<std::string_view, 7> kPython{"PyImport_",     "PyRun_",          "PyEval_EvalCode",
                                                            "Py_CompileString", "PyEval_GetGlobals", "PyEval_GetLocals",
                                                            "PyMarshal_"};
  if (any_prefix(s, kPython)) return {ImportClass::kPythonImport, "imports or executes Python code from C++"};
  if (const std::string family = vendor_family(s); !family.empty() && !libraries.count(family))
    return {ImportClass::kVendorLibrary, "a " + family + " routine (the task does not allow that library)"};
  static constexpr std::array<std::string_view, 8> kThp{"THPVariable_", "THPVariableClass", "THPDtype",
                                                         "THPDevice",    "THPLayout",        "THPMemoryFormat",
                                                         "THPUtils_",    "THPQScheme"};
  if (starts_with(s, "THP") && !any_prefix(s, kThp))
    return {ImportClass::kUnlistedTorch, "a torch Python-binding entry point outside the allowlist"};
  return {};
}

// "<op>" or "<op>_<overload>" for an allowed <op>.
bool op_allowed(const std::string& op, const std::set<std::string>& ops) {
  if (ops.count(op)) return true;
  for (std::size_t i = op.find('_', 1); i != std::string::npos; i = op.find('_', i + 1))
    if (ops.count(op.substr(0, i))) return true;
  return false;
}

Judgement judge_at_cuda(const std::vector<std::string>& parts, const std::set<std::string>& libraries) {
  const std::string& name = parts.size() > 2 ? parts[2] : std::string();
  static constexpr std::array<std::string_view, 14> kAllowed{
      "getCurrentDeviceProperties", "getDeviceProperties", "warp_size", "getNumGPUs", "is_available",
      "getCUDADeviceAllocator", "getCurrentCUDAStream", "getDefaultCUDAStream", "getStreamFromExternal",
      "detail", "CUDAEvent", "CUDAGeneratorImpl", "device_count", "current_device"};
  if (one_of(name, kAllowed)) return {};
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kVendor{{
      {"blas", "cublas"}, {"getCurrentCUDABlasHandle", "cublas"}, {"getCurrentCUDABlasLtHandle", "cublas"},
      {"getCUDABlasLtWorkspace", "cublas"}, {"getCurrentCUDASolverDnHandle", "cusolver"},
      {"getCurrentCUDASparseHandle", "cusparse"},
  }};
  for (const auto& [entry, family] : kVendor) {
    if (name != entry) continue;
    if (libraries.count(std::string(family))) return {};
    return {ImportClass::kVendorLibrary, "ATen's " + std::string(family) + " entry point"};
  }
  return {ImportClass::kTorchCompute, "an ATen CUDA kernel entry point"};
}

Judgement judge_aten(const std::vector<std::string>& parts, const std::set<std::string>& ops,
                     const std::set<std::string>& libraries) {
  const std::string& second = parts.size() > 1 ? parts[1] : std::string();
  if (second == "_ops") {
    const std::string op = parts.size() > 2 ? parts[2] : std::string();
    if (op_allowed(op, ops)) return {};
    return {ImportClass::kTorchCompute, "calls aten::" + op + " from C++ (PyTorch compute below the dispatcher)"};
  }
  static constexpr std::array<std::string_view, 7> kKernels{
      "native", "cpu", "compositeexplicitautograd", "compositeimplicitautograd",
      "compositeexplicitautogradnonfunctional", "meta", "sparse"};
  if (one_of(second, kKernels)) return {ImportClass::kTorchCompute, "an ATen kernel (at::" + second + ")"};
  if (second == "cuda") return judge_at_cuda(parts, libraries);
  static constexpr std::array<std::string_view, 32> kAllowed{
      "Tensor", "TensorBase", "detail", "Context", "globalContext", "get_num_threads", "set_num_threads",
      "get_thread_num", "in_parallel_region", "internal", "init_num_threads", "TensorIteratorBase",
      "TensorIteratorConfig", "TensorIterator", "OperandInfo", "print", "toString", "infer_size",
      "infer_size_dv", "TensorArg", "TensorGeometryArg", "CheckedFrom", "TensorGeometry", "RecordFunction",
      "isRecordFunctionEnabled", "DeprecatedTypeProperties", "getDeprecatedTypeProperties",
      "legacyExtractDispatchKey", "CPUGeneratorImpl", "maybe_wrap_dim", "has_internal_overlap",
      "get_overlap_status"};
  if (one_of(second, kAllowed) || starts_with(second, "check") || starts_with(second, "assert_no_") ||
      starts_with(second, "record_function"))
    return {};
  return {ImportClass::kUnlistedTorch, "an ATen entry point outside the allowlist of non-compute functions"};
}

Judgement judge_c10(const std::vector<std::string>& parts) {
  const std::string& second = parts.size() > 1 ? parts[1] : std::string();
  static constexpr std::array<std::string_view, 5> kDispatcher{"Dispatcher", "OperatorHandle", "KernelFunction",
                                                               "BoxedKernel", "RegisterOperators"};
  if (one_of(second, kDispatcher)) return {ImportClass::kDispatcher, "calls operators through the dispatcher"};
  if (second == "impl" && parts.size() > 2) {
    // ExcludeDispatchKeyGuard is not here: torch::empty/zeros/empty_like (torch/csrc/autograd/generated/
    // variable_factories.h) open an at::AutoDispatchBelowADInplaceOrView, which is one, in every honest
    // extension that allocates through torch::.
    static constexpr std::array<std::string_view, 10> kState{
        "OperatorEntry", "tls_set_dispatch_key_excluded", "tls_set_dispatch_key_included",
        "_force_tls_local_dispatch_key_set", "IncludeDispatchKeyGuard", "ForceDispatchKeyGuard",
        "TorchDispatchModeTLS", "PythonDispatcherTLS", "PythonTorchFunctionTLS", "tls_set_dispatch_key_set"};
    if (one_of(parts[2], kState))
      return {ImportClass::kDispatcher, "changes the dispatcher's state (dispatch keys or modes)"};
  }
  return {};
}

Judgement judge_torch(const std::vector<std::string>& parts) {
  const std::string& second = parts.size() > 1 ? parts[1] : std::string();
  // The pybind11 glue of load_inline's generated binding: warnings and errors crossing into Python, and
  // tensor <-> Python object conversion (torch::utils, torch::python, torch::detail).
  static constexpr std::array<std::string_view, 6> kAllowed{"PyWarningHandler", "translate_exception_to_python",
                                                            "detail", "utils", "python", "TypeError"};
  if (one_of(second, kAllowed)) return {};
  if (second == "jit") return {ImportClass::kTorchCompute, "runs TorchScript"};
  if (second == "nn") return {ImportClass::kTorchCompute, "a torch::nn module (PyTorch compute)"};
  if (second == "Library") return {ImportClass::kDispatcher, "registers operators with the dispatcher"};
  if (second == "autograd") {
    // A tensor made by torch::empty & co. is wrapped by make_variable (an AutogradMeta); C++ autograd
    // Functions need the graph's nodes and context. The autograd kernels (VariableType, generated) and
    // running the engine (backward, grad) compute.
    static constexpr std::array<std::string_view, 9> kGraph{"AutogradMeta", "make_variable", "impl", "VariableHooks",
                                                            "Node", "AutogradContext", "VariableInfo",
                                                            "SavedVariable", "CppNode"};
    if (parts.size() > 2 && one_of(parts[2], kGraph)) return {};
    return {ImportClass::kTorchCompute, "torch::autograd kernels or the autograd engine"};
  }
  return {ImportClass::kUnlistedTorch, "a torch:: entry point outside the allowlist of non-compute functions"};
}

}  // namespace

ImportJudgement judge_import(const std::string& symbol, const std::set<std::string>& allowed_ops,
                             const std::set<std::string>& allowed_libraries) {
  const std::vector<std::string> parts = name_components(symbol);
  if (parts.empty()) return judge_c_symbol(symbol, allowed_libraries);
  if (parts.size() == 1) return judge_c_symbol(parts[0], allowed_libraries);  // a global C++ function
  const std::string& ns = parts[0];
  if (ns == "at") return judge_aten(parts, allowed_ops, allowed_libraries);
  if (ns == "c10") return judge_c10(parts);
  if (ns == "torch") return judge_torch(parts);
  static constexpr std::array<std::string_view, 6> kVendorNamespaces{"fbgemm", "dnnl", "mkldnn",
                                                                     "ideep",  "cudnn_frontend", "cublasLt"};
  if (one_of(ns, kVendorNamespaces) && !allowed_libraries.count(ns))
    return {ImportClass::kVendorLibrary, "a vendor library (" + ns + ")"};
  return {};
}

}  // namespace musacoder::legality

// check_library_imports (legality.h) lives here with the rules it applies.
namespace musacoder::legality {

std::vector<Finding> check_library_imports(const std::filesystem::path& library, const LegalityOptions& options,
                                           const std::vector<std::string>& allowed_libraries) {
  if (!options.check_library_imports) return {};
  auto imports = read_elf_imports(library);
  if (!imports.ok()) return {{"library_unreadable", imports.status().message(), 0}};
  const std::set<std::string> libraries(allowed_libraries.begin(), allowed_libraries.end());
  std::map<ImportClass, std::vector<std::string>> flagged;  // class -> "symbol: why"
  for (const std::string& symbol : imports->undefined_symbols) {
    const ImportJudgement j = judge_import(symbol, options.allowed_torch_ops, libraries);
    if (j.cls == ImportClass::kAllowed) continue;
    std::string text = demangle(symbol);
    if (text.size() > 160) text = text.substr(0, 157) + "...";
    flagged[j.cls].push_back(text + " [" + j.why + "]");
  }
  std::vector<Finding> out;
  for (const auto& [cls, symbols] : flagged) {
    std::string message = library.filename().string() + " imports ";
    for (std::size_t i = 0; i < symbols.size() && i < 4; ++i) message += (i ? "; " : "") + symbols[i];
    if (symbols.size() > 4) message += "; and " + std::to_string(symbols.size() - 4) + " more";
    out.push_back({import_rule_name(cls), message, 0});
  }
  return out;
}

}  // namespace musacoder::legality
