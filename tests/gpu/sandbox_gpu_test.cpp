// The sandbox on a GPU machine: a CUDA run job sees exactly its NVIDIA device nodes and
// can compute; the cuda pipeline with --sandbox on scores a correct candidate ok; the
// sandbox's start-up overhead for a CUDA process. Skips (with the reason) without a GPU
// or where no sandbox works; GPU_RESULT lines carry the numbers.
#include <gtest/gtest.h>

#include <chrono>

#include "sandbox/sandbox.h"
#include "support/eval_env.h"

namespace musacoder::testing {
namespace {

namespace fs = std::filesystem;

sandbox::Sandbox* gpu_sandbox(std::string* why) {
  static std::string reason;
  static std::unique_ptr<sandbox::Sandbox> sb = [] {
    sandbox::SandboxOptions o;
    o.mode = sandbox::SandboxMode::kOn;
    auto s = sandbox::Sandbox::create(o);
    if (!s.ok()) {
      reason = s.status().message();
      return std::unique_ptr<sandbox::Sandbox>();
    }
    return std::move(s).value();
  }();
  *why = reason;
  return sb.get();
}

#define SKIP_WITHOUT_GPU_SANDBOX(sb)                                                                       \
  if (!fs::exists("/dev/nvidiactl")) GTEST_SKIP() << "skipped: no NVIDIA device (/dev/nvidiactl missing)"; \
  std::string why;                                                                                         \
  sandbox::Sandbox* sb = gpu_sandbox(&why);                                                                \
  if (!sb) {                                                                                               \
    std::printf("GPU_RESULT sandbox unavailable: %s\n", why.c_str());                                      \
    GTEST_SKIP() << "skipped: no sandbox on this machine: " << why;                                        \
  }

TEST(SandboxGpu, CudaJobSeesOnlyItsDeviceNodesAndComputes) {
  SKIP_WITHOUT_GPU_SANDBOX(sb);
  auto work = TempDir::create("mooreeval-sbx-gpu-");
  ASSERT_TRUE(work.ok());
  auto jail = sb->for_job();
  ASSERT_TRUE(jail.ok());
  ProcessOptions p;
  p.argv = {"python3", "-c",
            "import os, torch\n"
            "print('nodes', sorted(d for d in os.listdir('/dev') if d.startswith('nvidia')))\n"
            "x = torch.ones(1 << 20, device='cuda:0')\n"
            "print('sum', int(x.sum().item()), 'devices', torch.cuda.device_count())\n"};
  p.deadline = std::chrono::seconds(120);
  auto w = jail->wrap(p, {sandbox::JobKind::kRunCuda, fs::absolute(work->path()), {}, 0});
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  auto r = run_process(*w);
  ASSERT_TRUE(r.ok());
  std::printf("GPU_RESULT sandbox %s | %s", sb->settings().value("strategy", "?").c_str(),
              r->stdout_text.c_str());
  ASSERT_TRUE(r->succeeded()) << r->describe() << "\n" << r->stderr_text;
  EXPECT_NE(r->stdout_text.find("sum 1048576"), std::string::npos) << r->stdout_text;
  // nvidiactl, nvidia-uvm and exactly one nvidia<N>.
  auto line = r->stdout_text.substr(0, r->stdout_text.find('\n'));
  EXPECT_NE(line.find("'nvidia-uvm'"), std::string::npos) << line;
  EXPECT_NE(line.find("'nvidiactl'"), std::string::npos) << line;
  EXPECT_EQ(std::count(line.begin(), line.end(), ','), 2) << line;
  EXPECT_EQ(line.find("uvm-tools"), std::string::npos) << line;
}

TEST(SandboxGpu, StartupOverheadOfACudaProcess) {
  SKIP_WITHOUT_GPU_SANDBOX(sb);
  auto work = TempDir::create("mooreeval-sbx-gpu-");
  ASSERT_TRUE(work.ok());
  auto jail = sb->for_job();
  ASSERT_TRUE(jail.ok());
  ProcessOptions p;
  p.argv = {sb->python_executable(), "-c",
            "import torch; torch.zeros(1, device='cuda:0'); torch.cuda.synchronize()"};
  p.deadline = std::chrono::seconds(120);
  auto time_one = [](const ProcessOptions& o) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = run_process(o);
    EXPECT_TRUE(r.ok() && r->succeeded()) << (r.ok() ? r->stderr_text : r.status().message());
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<double> plain, boxed;
  for (int i = 0; i < 3; ++i) {
    plain.push_back(time_one(p));
    auto w = jail->wrap(p, {sandbox::JobKind::kRunCuda, fs::absolute(work->path()), {}, 0});
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    boxed.push_back(time_one(*w));
  }
  std::sort(plain.begin(), plain.end());
  std::sort(boxed.begin(), boxed.end());
  std::printf(
      "GPU_RESULT sandbox overhead, python + torch CUDA init: plain %.0f ms, sandboxed %.0f ms (median of "
      "3), "
      "ratio %.3f\n",
      plain[1], boxed[1], boxed[1] / plain[1]);
}

TEST(SandboxGpu, SandboxedCudaPipelineScoresACorrectCandidateOk) {
  SKIP_WITHOUT_GPU_SANDBOX(sb);
  auto o = test_options("cuda");
  o.sandbox.mode = sandbox::SandboxMode::kOn;
  auto ev = make_evaluator(o);
  if (!ev) GTEST_SKIP() << "skipped: " << ev.why;
  auto v = evaluate_file(*ev, "elementwise/add", kSourceDir / "tests/fixtures/candidates/correct_cuda.py");
  std::printf(
      "GPU_RESULT sandboxed cuda pipeline: verdict=%s speedup=%.2f build_s=%.1f run_s=%.1f sandbox=%s\n",
      mooreeval::verdict_name(v.verdict), v.speedup.value_or(-1), v.seconds.build, v.seconds.run,
      v.config.value("sandbox", nlohmann::json()).dump().substr(0, 200).c_str());
  EXPECT_EQ(mooreeval::verdict_name(v.verdict), std::string("ok")) << v.message << "\n" << v.log;
  EXPECT_EQ(v.config["sandbox"]["active"], true);
}

}  // namespace
}  // namespace musacoder::testing
