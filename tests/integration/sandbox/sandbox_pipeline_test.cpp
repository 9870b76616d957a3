// The whole cpu pipeline with --sandbox on: inspect, build, reference and candidate all
// run sandboxed; a legitimate candidate still scores ok, and host files never reach a
// verdict's log, message or the build artifacts.
#include <gtest/gtest.h>

#include "support/eval_env.h"

namespace musacoder::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCanaryText = "CANARY-51d0c4 do not leak";

struct Fixture {
  TempDir cache, host;  // a fresh build cache (so the build really runs sandboxed), a host dir
  fs::path canary;
};

Fixture& fixture() {
  static Fixture f = [] {
    auto cache = TempDir::create("mooreeval-sbx-cache-");
    auto host = TempDir::create("mooreeval-sbx-host-");
    EXPECT_TRUE(cache.ok() && host.ok());
    Fixture x{std::move(cache).value(), std::move(host).value(), {}};
    x.canary = fs::absolute(x.host.path()) / "canary.txt";
    EXPECT_TRUE(write_file_atomic(x.canary, std::string(kCanaryText) + "\n").ok());
    return x;
  }();
  return f;
}

const TestEvaluator& sandboxed_evaluator() {
  static const TestEvaluator ev = make_evaluator([] {
    auto o = test_options("cpu");
    o.sandbox.mode = sandbox::SandboxMode::kOn;
    o.compile.cache_dir = fixture().cache.path();
    return o;
  }());
  return ev;
}

std::string correct_source() {
  auto text = read_file(kSourceDir / "tests/fixtures/candidates/correct_cpu.py");
  EXPECT_TRUE(text.ok());
  return text.ok() ? *text : "";
}

// The sandboxed evaluator's verdict; a failure, and an empty verdict, where it could not be created.
mooreeval::Verdict evaluate_source(const std::string& source) {
  auto task = bundled_task("elementwise/add");
  EXPECT_TRUE(task.ok());
  const auto& ev = sandboxed_evaluator();
  if (!ev) return ADD_FAILURE() << ev.why, mooreeval::Verdict{};
  return ev->evaluate(*task, source);
}

TEST(SandboxedPipeline, LegitimateCpuCandidateScoresOk) {
  auto v = evaluate_source(correct_source());
  EXPECT_EQ(mooreeval::verdict_name(v.verdict), std::string("ok")) << v.message << "\n" << v.log;
  EXPECT_FALSE(v.cache_hit);  // built inside the sandbox, not taken from an earlier cache
  EXPECT_GE(v.reward.total, 0.6);
  ASSERT_TRUE(v.config.contains("sandbox"));
  EXPECT_EQ(v.config["sandbox"]["active"], true) << v.config["sandbox"].dump();
  EXPECT_EQ(v.config["sandbox"]["network"], false);
  EXPECT_FALSE(v.inspect_cached);

  // The same submission again: its inspection is recalled (eval/inspect_cache.h) and its
  // library comes from the build cache; the verdict is the same, and so is the reward.
  auto again = evaluate_source(correct_source());
  EXPECT_EQ(mooreeval::verdict_name(again.verdict), std::string("ok")) << again.message << "\n" << again.log;
  EXPECT_TRUE(again.inspect_cached);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.passed, v.passed);
  EXPECT_EQ(again.reward.correctness_part, v.reward.correctness_part);
}

// forward tries to read a host canary, /etc/passwd and the reference's outputs; anything
// it reads is raised as an error, which the verdict's message and log carry.
std::string peeking_candidate() {
  std::string probe =
      "\nimport glob as _g\n"
      "def _peek():\n"
      "    leaks = []\n"
      "    for p in ['" +
      fixture().canary.string() +
      "', '/etc/passwd'] + _g.glob('../reference/*.bin'):\n"
      "        try:\n"
      "            leaks.append((p, open(p, 'rb').read()[:64]))\n"
      "        except OSError:\n"
      "            pass\n"
      "    if leaks:\n"
      "        raise RuntimeError('LEAKED %r' % (leaks,))\n";
  std::string source = correct_source() + probe;
  auto pos = source.find("    def forward(");
  EXPECT_NE(pos, std::string::npos);
  source.insert(source.find('\n', pos) + 1, "        _peek()\n");
  return source;
}

TEST(SandboxedPipeline, CandidateCodeCannotReadHostFilesOrTheReferenceOutputs) {
  auto v = evaluate_source(peeking_candidate());
  EXPECT_EQ(v.log.find(kCanaryText), std::string::npos) << v.log;
  EXPECT_EQ(v.log.find("LEAKED"), std::string::npos) << v.log;
  EXPECT_EQ(v.message.find("LEAKED"), std::string::npos) << v.message;
  // Reading files may also be judged illegal by the legality checks; it must never help.
  EXPECT_TRUE(v.verdict == mooreeval::VerdictClass::kOk || v.verdict == mooreeval::VerdictClass::kIllegal)
      << mooreeval::verdict_name(v.verdict) << ": " << v.message << "\n"
      << v.log;
}

TEST(SandboxedPipeline, WithoutTheSandboxTheSameCandidateLeaks) {
  // The control for the test above: proves the candidate really tries.
  auto o = test_options("cpu");
  o.sandbox.mode = sandbox::SandboxMode::kOff;
  o.compile.cache_dir = fixture().cache.path();
  auto plain = make_evaluator(o);
  ASSERT_TRUE(plain) << plain.why;
  auto task = bundled_task("elementwise/add");
  ASSERT_TRUE(task.ok());
  auto v = plain->evaluate(*task, peeking_candidate());
  if (v.verdict == mooreeval::VerdictClass::kIllegal) GTEST_SKIP() << "rejected statically: " << v.message;
  EXPECT_EQ(v.verdict, mooreeval::VerdictClass::kRuntimeError) << v.message;
  EXPECT_NE((v.message + v.log).find("LEAKED"), std::string::npos) << v.message << "\n" << v.log;
  EXPECT_EQ(v.config["sandbox"]["active"], false);
}

// The static source rules (legality) reject such includes before any compiler runs; where
// they would not, the build sandbox makes it a compile error. Either way nothing is echoed.
TEST(SandboxedPipeline, IncludingAHostFileIsRejectedAndEchoesNothing) {
  std::string source = correct_source();
  auto pos = source.find("cpp_source = r\"\"\"");
  ASSERT_NE(pos, std::string::npos);
  source.insert(pos + std::string("cpp_source = r\"\"\"").size(),
                "\n#include \"" + fixture().canary.string() + "\"\n#include \"/etc/passwd\"\n");
  auto v = evaluate_source(source);
  EXPECT_TRUE(v.verdict == mooreeval::VerdictClass::kCompileError ||
              v.verdict == mooreeval::VerdictClass::kIllegal)
      << v.message << "\n"
      << v.log;
  EXPECT_EQ(v.message.find(kCanaryText), std::string::npos) << v.message;
  EXPECT_EQ(v.log.find(kCanaryText), std::string::npos) << v.log;
  EXPECT_EQ(v.log.find("root:x:0:0"), std::string::npos) << v.log;
  // Nothing from the host reached the cache either.
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(fixture().cache.path(), ec)) {
    if (!e.is_regular_file()) continue;
    auto text = read_file(e.path(), 256 << 20);
    if (text.ok()) {
      EXPECT_EQ(text->find(kCanaryText), std::string::npos) << e.path();
    }
  }
}

}  // namespace
}  // namespace musacoder::testing
