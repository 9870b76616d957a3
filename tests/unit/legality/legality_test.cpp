#include "mooreeval/legality/legality.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "core/files.h"

namespace musacoder::legality {
namespace {

TEST(Legality, DispatchedOpsAllowlist) {
  LegalityOptions o;
  EXPECT_TRUE(check_dispatched_ops({{"empty", 2}, {"view", 1}}, o).empty());
  auto f = check_dispatched_ops({{"empty", 1}, {"add", 1}, {"mm", 3}}, o);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].rule, "torch_compute_op");
  EXPECT_NE(describe(f).find("aten::add"), std::string::npos);
  o.check_runtime_ops = false;
  EXPECT_TRUE(check_dispatched_ops({{"add", 1}}, o).empty());
}

TEST(Legality, CudaSourcesMustLaunchAKernel) {
  build::ExtensionSpec s;
  s.name = "e";
  s.cuda_sources = {"__global__ void k(float* x) { x[0] = 1; }\nvoid run(float* x) { k<<<1, 1>>>(x); }"};
  EXPECT_TRUE(check_extension_sources({s}, build::Backend::kCuda).empty());
  s.cuda_sources = {"__global__ void k(float* x) { x[0] = 1; }\nvoid run(float* x) {}"};
  EXPECT_EQ(check_extension_sources({s}, build::Backend::kCuda).at(0).rule, "kernel_not_launched");
  s.cuda_sources = {"void run(float* x) {}"};
  EXPECT_EQ(check_extension_sources({s}, build::Backend::kCuda).at(0).rule, "no_device_kernel");
  EXPECT_EQ(check_extension_sources({}, build::Backend::kCpu).at(0).rule, "no_kernel");
}

TEST(Legality, InspectionFindingsAreParsed) {
  auto f =
      findings_from_inspection(nlohmann::json::parse(R"([{"rule":"try_fallback","message":"m","line":3}])"));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].line, 3);
  EXPECT_TRUE(findings_from_inspection(nlohmann::json("junk")).empty());
}

build::ExtensionSpec cpp_spec(const std::string& source) {
  build::ExtensionSpec s;
  s.name = "e";
  s.cpp_sources = {source};
  return s;
}

bool flags_rule(const std::string& source, const std::string& rule) {
  for (const auto& f : check_source_text({cpp_spec(source)}))
    if (f.rule == rule) return true;
  return false;
}

TEST(SourceRules, HostFileIncludesAreIllegal) {
  EXPECT_TRUE(flags_rule("#include \"/etc/passwd\"\n", "host_file_include"));
  EXPECT_TRUE(flags_rule("#  include </dev/zero>\n", "host_file_include"));
  EXPECT_TRUE(flags_rule("#include \"../../secret.h\"\n", "host_file_include"));
  EXPECT_TRUE(flags_rule("%:include \"/etc/shadow\"\n", "host_file_include"));              // digraph
  EXPECT_TRUE(flags_rule("#inc\\\nlude \"/etc/passwd\"\n", "host_file_include"));           // line splice
  EXPECT_TRUE(flags_rule("#define P \"/etc/passwd\"\n#include P\n", "host_file_include"));  // computed
  EXPECT_TRUE(flags_rule("asm(\".incbin \\\"/etc/hostname\\\"\");\n", "host_file_include"));
  EXPECT_TRUE(flags_rule("#embed \"/etc/passwd\"\n", "host_file_include"));
  EXPECT_TRUE(flags_rule("#pragma GCC dependency \"/etc/passwd\"\n", "host_file_include"));
  EXPECT_FALSE(flags_rule("#include <algorithm>\n#include <ATen/cuda/CUDAContext.h>\n", "host_file_include"));
  EXPECT_FALSE(flags_rule("// #include \"/etc/passwd\" in a comment\n", "host_file_include"));
}

TEST(SourceRules, ProcessFileNetworkAndStreamCalls) {
  EXPECT_TRUE(flags_rule("void f() { for (;;) fork(); }", "process_access"));
  EXPECT_TRUE(flags_rule("int r = system(\"ls\");", "process_access"));
  EXPECT_TRUE(flags_rule("FILE* f = fopen(\"/tmp/x\", \"w\");", "file_access"));
  EXPECT_TRUE(flags_rule("std::ofstream out(\"x\");", "file_access"));
  EXPECT_TRUE(flags_rule("int s = socket(2, 1, 0); connect(s, 0, 0);", "network_access"));
  EXPECT_TRUE(flags_rule("void* h = dlopen(\"libc.so.6\", 1);", "native_loading"));
  EXPECT_TRUE(flags_rule("auto s = c10::cuda::getStreamFromPool();", "side_stream"));
  EXPECT_TRUE(flags_rule("cudaStream_t s; cudaStreamCreateWithFlags(&s, 1);", "side_stream"));
  // Look-alikes that are legal: tensor methods and algorithms with the same words.
  EXPECT_TRUE(check_source_text({cpp_spec("auto c = x.clone(); std::remove(v.begin(), v.end(), 0); "
                                          "auto b = std::bind(f, 1); int open_count = 0;")})
                  .empty());
}

TEST(BuildFlags, PathsResponseFilesAndFileFlagsAreIllegal) {
  auto spec = [](std::vector<std::string> cflags) {
    build::ExtensionSpec s;
    s.name = "e";
    s.extra_cflags = std::move(cflags);
    return s;
  };
  EXPECT_TRUE(check_build_flags({spec({"-O3", "-fopenmp", "-march=native", "-DN=4"})}).empty());
  EXPECT_EQ(check_build_flags({spec({"-I/etc"})}).size(), 1u);
  EXPECT_EQ(check_build_flags({spec({"@flags.txt"})}).size(), 1u);
  EXPECT_EQ(check_build_flags({spec({"-include", "passwd"})}).size(), 1u);
  EXPECT_EQ(check_build_flags({spec({"-fplugin=evil.so"})}).size(), 1u);
  EXPECT_EQ(check_build_flags({spec({"-Xcompiler=-fopenmp,-Bdir"})}).size(), 1u);
  EXPECT_TRUE(check_build_flags({spec({"-Xcompiler", "-fopenmp"})}).empty());
  build::ExtensionSpec s = spec({});
  s.extra_include_paths = {"inc"};
  s.extra_ldflags = {"-Wl,@/tmp/x"};
  EXPECT_EQ(check_build_flags({s}).size(), 2u);
}

TEST(KernelNames, GlobalKernelsOfTheCudaSources) {
  build::ExtensionSpec s;
  s.cuda_sources = {
      "template <int N>\n__global__ void __launch_bounds__(256) tiled(float* x) {}\n"
      "__global__ void add_kernel(const float* a) {}\n// __global__ void commented(int) {}\n"};
  auto names = kernel_names({s});
  EXPECT_NE(std::find(names.begin(), names.end(), "add_kernel"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "tiled"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "commented"), names.end());
}

// A minimal ELF64 header with one PT_LOAD program header of the given memory size.
void write_elf(const std::filesystem::path& path, std::uint64_t memsz) {
  char buf[64 + 56] = {};
  std::memcpy(buf,
              "\x7f"
              "ELF",
              4);
  buf[4] = 2;  // ELFCLASS64
  buf[5] = 1;  // little-endian
  const std::uint64_t phoff = 64;
  const std::uint16_t phentsize = 56, phnum = 1;
  std::memcpy(buf + 0x20, &phoff, 8);
  std::memcpy(buf + 0x36, &phentsize, 2);
  std::memcpy(buf + 0x38, &phnum, 2);
  const std::uint32_t pt_load = 1;
  std::memcpy(buf + 64, &pt_load, 4);
  std::memcpy(buf + 64 + 0x28, &memsz, 8);
  std::ofstream(path, std::ios::binary).write(buf, sizeof buf);
}

TEST(LibrarySize, HugeStaticDataIsIllegal) {
  auto dir = TempDir::create("legality-elf-");
  ASSERT_TRUE(dir.ok());
  const auto big = dir->path() / "big.so", small = dir->path() / "small.so", junk = dir->path() / "junk.so";
  write_elf(big, std::uint64_t{16} << 30);
  write_elf(small, std::uint64_t{4} << 20);
  std::ofstream(junk) << "not an elf";
  LegalityOptions o;
  ASSERT_EQ(*mapped_library_bytes(big), std::uint64_t{16} << 30);
  EXPECT_EQ(check_library_size(big, o).at(0).rule, "static_data_too_large");
  EXPECT_TRUE(check_library_size(small, o).empty());
  EXPECT_FALSE(mapped_library_bytes(junk).ok());
  EXPECT_EQ(check_library_size(junk, o).at(0).rule, "library_unreadable");
  // A real ELF: this test binary maps something, and far less than 1 GiB.
  auto self = mapped_library_bytes("/proc/self/exe");
  ASSERT_TRUE(self.ok()) << self.status().message();
  EXPECT_GT(*self, 0u);
  EXPECT_LT(*self, std::uint64_t{1} << 30);
}

TEST(RunFindings, InputMutationIsAllowedWhenTheReferenceMutatesToo) {
  auto j = nlohmann::json::parse(
      R"([{"rule":"input_mutation","message":"m","line":0},{"rule":"thread_left_running","message":"t","line":0}])");
  LegalityOptions o;
  EXPECT_EQ(findings_from_run(j, false, o).size(), 2u);
  ASSERT_EQ(findings_from_run(j, true, o).size(), 1u);
  EXPECT_EQ(findings_from_run(j, true, o)[0].rule, "thread_left_running");
  o.check_runtime_behaviour = false;
  EXPECT_TRUE(findings_from_run(j, false, o).empty());
}

}  // namespace
}  // namespace musacoder::legality
