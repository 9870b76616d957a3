// eval-model end to end on the cpu backend: a scripted OpenAI-compatible server (in this process) answers
// each task of a small copy of the bundled suite in a fixed way, the in-process verifier judges, and the
// metrics must equal the values computed by hand below. A run stopped half-way and resumed must end with
// the same numbers. The scripted behaviours, by task (sample s, turn t come from the request's seed):
//   elementwise/add     s0: the reference solution (ok); s1: t1 a compile error, t2 the solution (ok)
//   activation/relu     s0: the reference solution (ok); s1: pure PyTorch, no kernel (illegal) every turn
//   activation/silu     an empty answer every turn (format_error: the model's failure)
//   activation/sigmoid  HTTP 500 every time (infra: not scored)
//   activation/gelu     HTTP 200 with a body that is not JSON (infra)
//   elementwise/clamp   answers after the client's timeout (infra)
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <unistd.h>
#include <map>
#include <thread>

#include "core/files.h"
#include "kernelbench/eval_run.h"

namespace musacoder::kernelbench {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSource = MUSACODER_SOURCE_DIR;
const fs::path kBinary = MUSACODER_BINARY_DIR;
const std::vector<std::string> kTasks = {"elementwise/add", "activation/relu", "activation/silu",
                                         "activation/sigmoid", "activation/gelu", "elementwise/clamp"};

std::string file(const fs::path& p) { return read_file(p).value(); }

constexpr const char* kPureTorchRelu =
    "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n\n    def forward(self, x):\n        return torch.relu(x)\n";

json chat_reply(const std::string& content) {
  return {{"id", "fake"}, {"object", "chat.completion"}, {"model", "fake"},
          {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", content}}}, {"finish_reason", "stop"}}}},
          {"usage", {{"prompt_tokens", 1}, {"completion_tokens", 1}}}};
}

std::string fenced(const std::string& code) { return "Here it is.\n\n```python\n" + code + "```\n"; }

class ScriptedServer {
 public:
  ScriptedServer() {
    for (const auto& id : kTasks) sources_[id] = file(kSource / "tasks" / (id + ".py"));
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) { answer(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~ScriptedServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  void answer(const httplib::Request& req, httplib::Response& res) {
    json body = json::parse(req.body);
    const std::string prompt = body["messages"][1]["content"];
    const uint64_t seed = body["seed"];
    std::string task;
    for (const auto& [id, src] : sources_)
      if (prompt.find(src) != std::string::npos) task = id;
    int sample = -1, turn = -1;  // which turn of which sample asks: the one whose seed this is (run seed 0)
    for (int s = 0; s < 8; ++s)
      for (int t = 1; t <= 4; ++t)
        if (turn_seed(0, task, s, t) == seed) sample = s, turn = t;
    std::string content;
    if (task == "activation/sigmoid") return res.status = 500, void();
    if (task == "activation/gelu") return res.set_content("<html>bad gateway</html>", "text/html");
    if (task == "elementwise/clamp") std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    if (task == "elementwise/add")
      content = fenced(sample == 1 && turn == 1 ? file(kSource / "tests/fixtures/candidates/compile_error_cpu.py")
                                                : file(kSource / "solutions/cpu/elementwise/add.py"));
    if (task == "activation/relu")
      content = fenced(sample == 0 ? file(kSource / "solutions/cpu/activation/relu.py") : kPureTorchRelu);
    res.set_content(chat_reply(content).dump(), "application/json");
  }

  std::map<std::string, std::string> sources_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

fs::path suite_dir() {
  const fs::path dir = fs::temp_directory_path() / ("kb_eval_suite_" + std::to_string(::getpid()));
  for (const auto& id : kTasks)
    for (const char* ext : {".py", ".json"}) {
      fs::create_directories((dir / id).parent_path());
      fs::copy_file(kSource / "tasks" / (id + ext), dir / (id + ext), fs::copy_options::overwrite_existing);
    }
  return dir;
}

// One verifier for every test of the process (its start-up is the expensive part).
Scorer* scorer() {
  static std::unique_ptr<Scorer> s = [] {
    ScorerSettings o;
    auto& v = o.verifier;
    v.backend = "cpu";
    v.workers = 2;
    v.warmup_iters = 1;
    v.benchmark_iters = 3;
    v.max_build = std::chrono::seconds(400);
    v.max_run = std::chrono::seconds(120);
    v.seed = 1234;
    v.runner_dir = kSource / "python";
    v.cache_dir = kBinary / "test-build-cache";
    o.scratch_dir = fs::temp_directory_path() / ("kb_eval_scratch_" + std::to_string(::getpid()));
    auto r = Scorer::create(o);
    if (!r.ok()) ADD_FAILURE() << r.status().message();
    return r.ok() ? std::move(*r) : nullptr;
  }();
  return s.get();
}

EvalOptions options(const fs::path& out) {
  EvalOptions o;
  o.samples = 2;
  o.turns = 2;
  o.prompt.target = prompts::Target::kCpu;
  o.out_dir = out;
  o.concurrency = 6;
  o.progress_interval_seconds = 0;
  return o;
}

std::unique_ptr<ModelClient> client(const ScriptedServer& server) {
  engine::RemoteOptions r;
  r.base_url = server.url();
  r.model = "fake";
  r.timeout_seconds = 1;
  r.max_retries = 1;
  r.backoff_seconds = 0.01;
  return make_endpoint_client(r);
}

double mean(const json& g, const char* m) { return g[m]["mean"].get<double>(); }

// The numbers that do not depend on timing, per view and group.
json stable_part(const json& summary) {
  json out;
  for (auto& [view, groups] : summary["views"].items())
    for (auto& [group, g] : groups.items())
      out[view][group] = {g["tasks"], g["samples"], g["infra"], g["missing"], g["pass_at_1"], g["pass_at_k"], g["avg_at_k"],
                          g["verdicts"], g["fast_p"]["0"]};
  return out;
}

void expect_hand_computed(const json& s) {
  const json& best = s["views"]["best"]["overall"];
  // Scored tasks: add {ok, ok} c=2; relu {ok, illegal} c=1; silu {format_error x2} c=0. The three infra
  // tasks (6 samples) are left out.
  EXPECT_EQ(best["tasks"], 3);
  EXPECT_EQ(best["samples"], 6);
  EXPECT_EQ(best["infra"], 6);
  EXPECT_NEAR(mean(best, "pass_at_1"), (1.0 + 0.5 + 0.0) / 3, 1e-12);
  EXPECT_NEAR(mean(best, "pass_at_k"), (1.0 + 1.0 + 0.0) / 3, 1e-12);  // pass@2 of c=1, n=2 is 1
  EXPECT_NEAR(mean(best, "avg_at_k"), 0.5, 1e-12);
  EXPECT_NEAR(best["fast_p"]["0"]["mean"].get<double>(), 0.5, 1e-12);  // fast_0 = correctness
  EXPECT_EQ(best["verdicts"], (json{{"ok", 3}, {"illegal", 1}, {"format_error", 2}, {"infra_error", 6}}));
  EXPECT_EQ(best["speedups"].size(), 3u);
  // After turn 1 add's second sample had not compiled yet.
  const json& t1 = s["views"]["turn1"]["overall"];
  EXPECT_NEAR(mean(t1, "pass_at_1"), (0.5 + 0.5 + 0.0) / 3, 1e-12);
  EXPECT_NEAR(mean(t1, "pass_at_k"), 2.0 / 3, 1e-12);
  EXPECT_EQ(t1["verdicts"], (json{{"ok", 2}, {"compile_error", 1}, {"illegal", 1}, {"format_error", 2}, {"infra_error", 6}}));
  EXPECT_EQ(s["infra"]["generation"], 6);
  EXPECT_EQ(s["infra"]["verifier"], 0);
  EXPECT_EQ(s["suite"]["usable"], 6);
}

TEST(EvalModelCpu, ScriptedModelGivesHandComputedMetricsAndResumesToTheSameReport) {
  ASSERT_NE(scorer(), nullptr);
  ScriptedServer server;
  auto model = client(server);
  const fs::path suite_path = suite_dir();
  auto suite = load_task_folder(suite_path);
  ASSERT_TRUE(suite.ok());
  const fs::path out = fs::temp_directory_path() / ("kb_eval_out_" + std::to_string(::getpid()));
  fs::remove_all(out);

  auto full = run_eval(*suite, *model, *scorer(), options(out / "full"));
  ASSERT_TRUE(full.ok()) << full.status().message();
  expect_hand_computed(*full);
  for (const char* f : {"summary.md", "report.html", "samples.jsonl", "run.json"}) EXPECT_TRUE(fs::exists(out / "full" / f)) << f;

  // Stopped after 5 records, a torn line left behind as by a kill, then resumed.
  std::atomic<bool> stop{false};
  std::atomic<int> written{0};
  EvalHooks hooks;
  hooks.stop = &stop;
  hooks.on_record = [&](const TurnRecord&) {
    if (++written >= 5) stop = true;
  };
  ASSERT_TRUE(run_eval(*suite, *model, *scorer(), options(out / "resumed"), hooks).ok());
  const std::string first = file(out / "resumed/samples.jsonl");
  EXPECT_LT(std::count(first.begin(), first.end(), '\n'), 16);  // not finished (16 records in all)
  {
    std::ofstream torn(out / "resumed/samples.jsonl", std::ios::app);
    torn << R"({"schema":"musacoder.eval-sample/1","task":"elementwise/add","lev)";
  }
  auto resumed = run_eval(*suite, *model, *scorer(), options(out / "resumed"));
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  expect_hand_computed(*resumed);
  EXPECT_EQ(stable_part(*resumed), stable_part(*full));
  EXPECT_EQ(file(out / "resumed/samples.jsonl").substr(0, first.size()), first);  // kept, appended to

  // The same out dir with another protocol is refused before anything runs.
  EvalOptions other = options(out / "full");
  other.samples = 3;
  EXPECT_EQ(run_eval(*suite, *model, *scorer(), other).status().code(), StatusCode::kFailedPrecondition);
  fs::remove_all(out);
  fs::remove_all(suite_path);
}

}  // namespace
}  // namespace musacoder::kernelbench
