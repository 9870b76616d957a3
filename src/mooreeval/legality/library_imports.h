// Import-level legality (legality.h: check_library_imports): what a built extension may call from the
// process it is loaded into, judged from its undefined dynamic symbols rather than from source text —
// so every spelling of a call (a macro, a `using namespace`, an own declaration of a libtorch function)
// is seen the same way. Internal to src/mooreeval/legality; docs/legality.md lists the allowlist and why each
// entry is safe.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace musacoder::legality {

enum class ImportClass {
  kAllowed,          // not libtorch, or a non-compute libtorch entry point (allocation, views, metadata...)
  kTorchCompute,     // an aten op outside the allowed ops, at::native / at::cpu / at::cuda kernels ...
  kDispatcher,       // calling operators through c10::Dispatcher, or changing the dispatch key state
  kVendorLibrary,    // cuBLAS, cuDNN, MKL, oneDNN, BLAS/LAPACK ... (unless the task allows the family)
  kRuntimeLookup,    // dlopen/dlsym, driver entry points, code loaded or compiled at run time
  kPythonImport,     // importing or executing Python from C++
  kUnlistedTorch,    // a libtorch (at::, c10::, torch::, THP) entry point not on the allowlist
};

const char* import_rule_name(ImportClass c);  // the legality rule a class reports under

// The leading components of a mangled C++ name's qualified entity name ("_ZN2at4_ops3mm4callE..." ->
// {"at", "_ops", "mm", "call"}); vtables, typeinfo, guard variables and thunks name their entity.
// Empty for a name that is not a mangled C++ name (a C symbol).
std::vector<std::string> name_components(const std::string& mangled);

struct ImportJudgement {
  ImportClass cls = ImportClass::kAllowed;
  std::string why;  // for a class other than kAllowed: what the symbol is
};

// Judges one undefined symbol. `allowed_ops`: aten overload packet names a forward may dispatch
// (LegalityOptions::allowed_torch_ops); `allowed_libraries`: vendor families the task allows
// ("cublas", "cudnn", "mkl", ...). Pure and thread-safe.
ImportJudgement judge_import(const std::string& symbol, const std::set<std::string>& allowed_ops,
                             const std::set<std::string>& allowed_libraries);

}  // namespace musacoder::legality
