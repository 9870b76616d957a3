// The OpenAI-compatible server and RemoteEngine on a tiny random Qwen2 checkpoint (engine_reference.py):
// the official `openai` Python client talks to the server (chat, streaming, n > 1, logprobs; bad requests
// get 4xx JSON errors and the server stays up), and RemoteEngine gets the same tokens over HTTP as the
// engine in-process, retries 429s and times out on a server that never answers.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "process/subprocess.h"
#include "engine/engine.h"
#include "support/python_reference.h"

namespace musacoder::engine {
namespace {

namespace fs = std::filesystem;
const fs::path kDir = fs::path(MUSACODER_SOURCE_DIR) / "tests/integration/engine";

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    auto ref = testing::cached_python_reference("engine", kDir / "engine_reference.py", {"make"}, std::chrono::seconds(300));
    ASSERT_TRUE(ref.ok()) << ref.status().to_string();
    EngineOptions o;
    o.max_model_len = 128;
    auto e = Engine::load(*ref / "qwen2", {}, o);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    engine_ = e->release();
  }
  static void TearDownTestSuite() {
    delete engine_;
    engine_ = nullptr;
  }
  void SetUp() override {
    if (engine_ == nullptr) GTEST_FAIL() << "no engine";
  }
  static std::unique_ptr<OpenAiServer> serve(ServerOptions o = {}) {
    o.port = 0;
    o.model_name = "tiny-qwen2";
    auto s = std::make_unique<OpenAiServer>(*engine_, o);
    EXPECT_TRUE(s->start().ok());
    return s;
  }
  static inline Engine* engine_ = nullptr;
};

TEST_F(ServerTest, OpenAiPythonClientAndBadRequests) {
  auto server = serve();
  ProcessOptions p;
  p.argv = {"python3", (kDir / "openai_client_check.py").string(), "--base-url",
            "http://127.0.0.1:" + std::to_string(server->port()) + "/v1", "--model", "tiny-qwen2", "--context", "128"};
  p.deadline = std::chrono::seconds(240);
  p.env_set = {{"NO_PROXY", "*"}, {"no_proxy", "*"}};
  auto r = run_process(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::printf("%s", r->stdout_text.c_str());
  EXPECT_TRUE(r->succeeded()) << r->describe() << "\n" << r->stdout_text << "\n" << r->stderr_text;
}

TEST_F(ServerTest, RemoteEngineEqualsInProcessEngine) {
  auto server = serve();
  RemoteOptions o;
  o.base_url = "http://127.0.0.1:" + std::to_string(server->port()) + "/v1";
  o.model = "tiny-qwen2";
  RemoteEngine remote(o);
  Request r;
  r.prompt_ids = {5, 17, 42, 7, 99};
  r.sampling.temperature = 0.9, r.sampling.seed = 21, r.sampling.n = 2, r.sampling.max_new_tokens = 10;
  auto local = engine_->generate({r})[0];
  auto got = remote.complete(r);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->samples.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(got->samples[i].token_ids, local.samples[i].token_ids);
    EXPECT_EQ(got->samples[i].text, local.samples[i].text);
    ASSERT_EQ(got->samples[i].raw_logprobs.size(), local.samples[i].raw_logprobs.size());
    for (std::size_t t = 0; t < local.samples[i].raw_logprobs.size(); ++t)
      EXPECT_NEAR(got->samples[i].raw_logprobs[t], local.samples[i].raw_logprobs[t], 1e-6);
  }
  auto chat = remote.chat({{"user", "hello"}}, r.sampling);
  ASSERT_TRUE(chat.ok()) << chat.status().to_string();
  EXPECT_EQ(chat->samples.size(), 2u);
  Request bad = r;
  bad.sampling.max_new_tokens = -1;
  auto rejected = remote.complete(bad);
  EXPECT_EQ(rejected.status().code(), StatusCode::kInvalidArgument) << rejected.status().to_string();
}

TEST_F(ServerTest, RemoteEngineRetriesRateLimitsAndTimesOut) {
  ServerOptions so;
  so.max_concurrent_requests = 1;  // the rest get 429 + Retry-After: 1
  auto server = serve(so);
  RemoteOptions o;
  o.base_url = "http://127.0.0.1:" + std::to_string(server->port());
  o.model = "tiny-qwen2";
  o.concurrency = 4;
  o.max_retries = 30;
  RemoteEngine remote(o);
  std::vector<Request> rs(4);
  for (auto& r : rs) r.prompt_ids = {3, 4, 5}, r.sampling.temperature = 0, r.sampling.max_new_tokens = 24;
  for (const auto& out : remote.generate(rs)) {
    ASSERT_TRUE(out.status.ok()) << out.status.to_string();
    EXPECT_EQ(out.samples.at(0).token_ids.size(), 24u);
  }
  EXPECT_GT(remote.retries(), 0) << "four concurrent requests against a limit of one: some must have been retried";
  // A server that accepts connections but never answers: the client gives up after its timeouts.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  RemoteOptions silent = o;
  silent.base_url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  silent.timeout_seconds = 0.3, silent.max_retries = 1, silent.backoff_seconds = 0.05;
  auto none = RemoteEngine(silent).complete(rs[0]);
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable) << none.status().to_string();
  ::close(fd);
}

TEST_F(ServerTest, GenerateCommandPrintsOneJsonObjectPerSample) {
  auto dir = testing::cached_python_reference("engine", kDir / "engine_reference.py", {"make"}, std::chrono::seconds(300));
  ASSERT_TRUE(dir.ok());
  const std::string tool = std::string(MUSACODER_BINARY_DIR) + "/tools/musacoder/musacoder";
  ProcessOptions p;
  p.argv = {tool, "generate", "--model", (*dir / "llama").string(), "--prompt", "def forward(self, x):", "--n", "3",
            "--max-tokens", "6", "--temperature", "0.8", "--seed", "4", "--chat", "--json"};
  p.deadline = std::chrono::seconds(120);
  auto r = run_process(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE(r->succeeded()) << r->describe() << r->stderr_text;
  std::istringstream lines(r->stdout_text);
  int n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["index"], n);
    EXPECT_LE(j["token_ids"].size(), 6u);
    EXPECT_EQ(j["raw_logprobs"].size(), j["token_ids"].size());
    EXPECT_TRUE(j["finish_reason"] == "length" || j["finish_reason"] == "stop");
  }
  EXPECT_EQ(n, 3);
  p.argv = {tool, "generate", "--model", "/nonexistent/model", "--prompt", "x"};
  auto bad = run_process(p);
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->exit_code, 2) << bad->stderr_text;
}

}  // namespace
}  // namespace musacoder::engine
