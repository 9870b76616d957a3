// Import-level legality: mangled-name parsing, the judgement of each symbol class, and the ELF reader.
#include <gtest/gtest.h>

#include <fstream>

#include "core/files.h"
#include "mooreeval/legality/elf_imports.h"
#include "mooreeval/legality/legality.h"
#include "mooreeval/legality/library_imports.h"

namespace musacoder::legality {
namespace {

using Parts = std::vector<std::string>;

TEST(NameComponents, NestedNamesSpecialNamesAndCSymbols) {
  EXPECT_EQ(name_components("_ZN2at4_ops4relu4callERKNS_6TensorE"), (Parts{"at", "_ops", "relu", "call"}));
  EXPECT_EQ(name_components("_ZNK2at10TensorBase8data_ptrIfEEPT_v"), (Parts{"at", "TensorBase", "data_ptr"}));
  EXPECT_EQ(name_components("_ZTVN3c105ErrorE"), (Parts{"c10", "Error"}));                   // vtable
  EXPECT_EQ(name_components("_ZZN2at6native4reluERKNS_6TensorEE1x"), (Parts{"at", "native", "relu"}));  // local
  EXPECT_EQ(name_components("_ZThn16_N2at6native3FooD1Ev"), (Parts{"at", "native", "Foo"}));  // thunk
  EXPECT_EQ(name_components("_ZGVZN2at4_ops2mm4callEvE3tmp"), (Parts{"at", "_ops", "mm", "call"}));  // guard
  EXPECT_EQ(name_components("_Z16THPVariable_WrapRKN2at10TensorBaseE"), (Parts{"THPVariable_Wrap"}));
  EXPECT_EQ(name_components("_ZNSt6thread6_StateD2Ev"), (Parts{"std", "thread", "_State"}));
  EXPECT_TRUE(name_components("dlsym").empty());
  EXPECT_TRUE(name_components("_ZdlPv").empty());  // operator delete
  EXPECT_TRUE(name_components("_Z").empty());
  EXPECT_TRUE(name_components("_ZN99").empty());   // length past the end: no component, no crash
}

class JudgeImport : public ::testing::Test {
 protected:
  ImportClass judge(const std::string& symbol, const std::set<std::string>& libraries = {}) {
    return judge_import(symbol, LegalityOptions::default_allowed_ops(), libraries).cls;
  }
};

TEST_F(JudgeImport, AtenComputeCalledFromCppIsCompute) {
  EXPECT_EQ(judge("_ZN2at4_ops4relu4callERKNS_6TensorE"), ImportClass::kTorchCompute);
  EXPECT_EQ(judge("_ZN2at4_ops4relu10redispatchEN3c1014DispatchKeySetERKNS_6TensorE"), ImportClass::kTorchCompute);
  EXPECT_EQ(judge("_ZN2at4_ops10add_Tensor4callEv"), ImportClass::kTorchCompute);
  EXPECT_EQ(judge("_ZN2at3cpu3addERKNS_6TensorES3_RKN3c106ScalarE"), ImportClass::kTorchCompute);
  EXPECT_EQ(judge("_ZN2at6native4reluERKNS_6TensorE"), ImportClass::kTorchCompute);
  EXPECT_EQ(judge("_ZZN2at6native4reluERKNS_6TensorEE1x"), ImportClass::kTorchCompute);
  EXPECT_EQ(judge("_ZN2at4cuda2mmERKNS_6TensorES3_"), ImportClass::kTorchCompute);
  EXPECT_EQ(judge("_ZN5torch3jit6Module7forwardEv"), ImportClass::kTorchCompute);
  EXPECT_EQ(judge("_ZN5torch2nn10LinearImpl7forwardERKN2at6TensorE"), ImportClass::kTorchCompute);
}

TEST_F(JudgeImport, AllocationViewsMetadataAndErrorsAreAllowed) {
  EXPECT_EQ(judge("_ZN2at4_ops19empty_memory_format4callEv"), ImportClass::kAllowed);  // overload of empty
  EXPECT_EQ(judge("_ZN2at4_ops8to_dtype4callEv"), ImportClass::kAllowed);
  EXPECT_EQ(judge("_ZN2at4_ops10contiguous4callEv"), ImportClass::kAllowed);
  EXPECT_EQ(judge("_ZN2at4_ops4view4callEv"), ImportClass::kAllowed);
  EXPECT_EQ(judge("_ZNK2at10TensorBase8data_ptrIfEEPT_v"), ImportClass::kAllowed);
  EXPECT_EQ(judge("_ZTVN3c105ErrorE"), ImportClass::kAllowed);
  EXPECT_EQ(judge("_ZN3c106detail14torchCheckFailEPKcS2_jPKc"), ImportClass::kAllowed);
  EXPECT_EQ(judge("_ZN2at4cuda26getCurrentDevicePropertiesEv"), ImportClass::kAllowed);
  EXPECT_EQ(judge("_Z16THPVariable_WrapRKN2at10TensorBaseE"), ImportClass::kAllowed);
  EXPECT_EQ(judge("_ZN2at8internal15invoke_parallelElllRKSt8functionIFvllEE"), ImportClass::kAllowed);
  EXPECT_EQ(judge("cudaLaunchKernel"), ImportClass::kAllowed);
  EXPECT_EQ(judge("memcpy"), ImportClass::kAllowed);
  EXPECT_EQ(judge("PyObject_GetAttrString"), ImportClass::kAllowed);
  EXPECT_EQ(judge("_ZNSt6thread6_StateD2Ev"), ImportClass::kAllowed);
  EXPECT_EQ(judge("_ZTVN5torch8autograd12AutogradMetaE"), ImportClass::kAllowed);  // torch::empty's make_variable
  EXPECT_EQ(judge("_ZN5torch8autograd12VariableType3addEv"), ImportClass::kTorchCompute);
  EXPECT_EQ(judge("_ZN5torch8autograd8backwardEv"), ImportClass::kTorchCompute);
}

TEST_F(JudgeImport, TheDispatcherAndItsStateAreNotForCandidates) {
  EXPECT_EQ(judge("_ZN3c1010Dispatcher13realSingletonEv"), ImportClass::kDispatcher);
  EXPECT_EQ(judge("_ZN3c104impl29tls_set_dispatch_key_excludedENS_11DispatchKeyEb"), ImportClass::kDispatcher);
  // torch::empty's at::AutoDispatchBelowADInplaceOrView is an ExcludeDispatchKeyGuard: honest.
  EXPECT_EQ(judge("_ZN3c104impl23ExcludeDispatchKeyGuardC1ENS_14DispatchKeySetE"), ImportClass::kAllowed);
  EXPECT_EQ(judge("_ZN3c104impl20TorchDispatchModeTLS8pop_stackEv"), ImportClass::kDispatcher);
}

TEST_F(JudgeImport, VendorLibrariesOnlyWhereTheTaskAllowsThem) {
  EXPECT_EQ(judge("cublasSgemm_v2"), ImportClass::kVendorLibrary);
  EXPECT_EQ(judge("cublasSgemm_v2", {"cublas"}), ImportClass::kAllowed);
  EXPECT_EQ(judge("_ZN2at4cuda24getCurrentCUDABlasHandleEv"), ImportClass::kVendorLibrary);
  EXPECT_EQ(judge("_ZN2at4cuda24getCurrentCUDABlasHandleEv", {"cublas"}), ImportClass::kAllowed);
  EXPECT_EQ(judge("cudnnConvolutionForward"), ImportClass::kVendorLibrary);
  EXPECT_EQ(judge("sgemm_"), ImportClass::kVendorLibrary);
  EXPECT_EQ(judge("cblas_sgemm"), ImportClass::kVendorLibrary);
  EXPECT_EQ(judge("dgetrf_"), ImportClass::kVendorLibrary);
  EXPECT_EQ(judge("sgemm_", {"blas"}), ImportClass::kAllowed);
}

TEST_F(JudgeImport, RunTimeLookupPythonImportAndUnlistedEntryPoints) {
  EXPECT_EQ(judge("dlsym"), ImportClass::kRuntimeLookup);
  EXPECT_EQ(judge("dlopen"), ImportClass::kRuntimeLookup);
  EXPECT_EQ(judge("cuGetProcAddress_v2"), ImportClass::kRuntimeLookup);
  EXPECT_EQ(judge("nvrtcCompileProgram"), ImportClass::kRuntimeLookup);
  EXPECT_EQ(judge("PyImport_ImportModule"), ImportClass::kPythonImport);
  EXPECT_EQ(judge("PyRun_SimpleString"), ImportClass::kPythonImport);
  EXPECT_EQ(judge("_ZN2at9some_funcEv"), ImportClass::kUnlistedTorch);
  EXPECT_EQ(judge("_ZN5torch9some_funcEv"), ImportClass::kUnlistedTorch);
  EXPECT_EQ(judge("THPFunction_apply"), ImportClass::kUnlistedTorch);
}

TEST(ElfImports, ReadsTheUndefinedSymbolsOfARealBinary) {
  auto imports = read_elf_imports("/proc/self/exe");  // this test links libc and libstdc++ dynamically
  ASSERT_TRUE(imports.ok()) << imports.status().to_string();
  EXPECT_FALSE(imports->undefined_symbols.empty());
  EXPECT_FALSE(imports->needed_libraries.empty());
  bool has_libc = false;
  for (const auto& lib : imports->needed_libraries) has_libc |= lib.rfind("libc.so", 0) == 0;
  EXPECT_TRUE(has_libc);
  EXPECT_EQ(demangle("_ZN2at6native4reluERKNS_6TensorE"), "at::native::relu(at::Tensor const&)");
  EXPECT_EQ(demangle("dlsym"), "dlsym");
}

TEST(ElfImports, MalformedFilesAreErrorsNotCrashes) {
  auto dir = TempDir::create("elf-imports-test");
  ASSERT_TRUE(dir.ok());
  const auto path = dir->path() / "bad.so";
  for (const std::string& bytes : {std::string("not an elf"), std::string("\x7f" "ELF\x02\x01", 6) + std::string(58, '\0'),
                                   std::string("\x7f" "ELF\x02\x01", 6) + std::string(34, '\0') + std::string(8, '\xff') +
                                       std::string(16, '\x01')}) {
    std::ofstream(path, std::ios::binary) << bytes;
    EXPECT_FALSE(read_elf_imports(path).ok());
    const auto findings = check_library_imports(path, LegalityOptions{}, {});
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].rule, "library_unreadable");
  }
  EXPECT_FALSE(read_elf_imports(dir->path() / "missing.so").ok());
}

}  // namespace
}  // namespace musacoder::legality
