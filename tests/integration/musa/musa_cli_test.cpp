// The MUSA command lines: `mooreeval --backend musa` without the SDK names what is missing; `musacoder port`
// and `port-suite` port, report unmapped names with exit 1, and refuse bad input with exit 2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "process/subprocess.h"
#include "support/eval_env.h"

namespace musacoder::testing {
namespace {

namespace fs = std::filesystem;

ProcessResult run(std::vector<std::string> argv, std::map<std::string, std::string> env = {}) {
  ProcessOptions o;
  o.argv = std::move(argv);
  o.env_set = std::move(env);
  o.deadline = std::chrono::seconds(300);
  auto r = run_process(o);
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : ProcessResult{};
}

TEST(MusaCli, BackendWithoutSdkNamesWhatIsMissing) {
  auto r = run({(kBinaryDir / "tools/mooreeval/mooreeval").string(), "launch", "--backend", "musa",
                "--musa-sdk-version", "5.1.0", "--torch-musa", "2.9.0"},
               {{"MUSA_HOME", "/nonexistent-musa"}});
  const std::string out = r.stdout_text + r.stderr_text;
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(out.find("MUSA toolchain not found"), std::string::npos) << out;
  EXPECT_NE(out.find("mcc (MUSA compiler) at /nonexistent-musa/bin/mcc"), std::string::npos) << out;
  EXPECT_NE(out.find("torch_musa in the runner's Python"), std::string::npos) << out;
}

#ifdef MUSACODER_HAVE_MUSACODER_TOOL
const std::string kMusacoder = (kBinaryDir / "tools/musacoder/musacoder").string();

TEST(MusaCli, PortFileToStdoutAndBack) {
  auto r = run({kMusacoder, "port", (kSourceDir / "solutions/cuda/activation/relu.py").string()});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("musa_sources="), std::string::npos);
  const fs::path tmp = fs::temp_directory_path() / ("musa_cli_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  ASSERT_TRUE(write_file_atomic(tmp / "relu.py", r.stdout_text).ok());
  auto back = run({kMusacoder, "port", (tmp / "relu.py").string(), "--to", "cuda"});
  EXPECT_EQ(back.stdout_text, *read_file(kSourceDir / "solutions/cuda/activation/relu.py"));
  ASSERT_TRUE(write_file_atomic(tmp / "k.cu", "cutensorCreate(&h);\n").ok());
  auto unmapped = run({kMusacoder, "port", (tmp / "k.cu").string()});
  EXPECT_EQ(unmapped.exit_code, 1);
  EXPECT_NE(unmapped.stderr_text.find("unmapped: cutensorCreate"), std::string::npos) << unmapped.stderr_text;
  EXPECT_EQ(run({kMusacoder, "port", (tmp / "k.cu").string(), "--to", "rocm"}).exit_code, 2);
  EXPECT_EQ(run({kMusacoder, "port", tmp.string()}).exit_code, 2) << "a directory needs --out";
  fs::remove_all(tmp);
}

TEST(MusaCli, PortSuiteWritesManifest) {
  const fs::path tmp = fs::temp_directory_path() / ("musa_suite_cli_" + std::to_string(getpid()));
  fs::create_directories(tmp / "kb/level1");
  ASSERT_TRUE(write_file_atomic(tmp / "kb/level1/1_Square_matrix_multiplication_.py",
                                "import torch\nx = torch.zeros(2, device='cuda')\n")
                  .ok());
  auto r = run({kMusacoder, "port-suite", "--kernelbench-dir", (tmp / "kb").string(), "--out", (tmp / "out").string()});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  auto manifest = nlohmann::json::parse(*read_file(tmp / "out/manifest.json"));
  EXPECT_EQ(manifest.at("tasks").at(0).at("applied").at("python_device_string"), 1);
  EXPECT_EQ(run({kMusacoder, "port-suite", "--kernelbench-dir", (tmp / "none").string(), "--out",
                 (tmp / "o").string()}).exit_code, 2);
  fs::remove_all(tmp);
}
#endif

}  // namespace
}  // namespace musacoder::testing
