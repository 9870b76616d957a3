// The fleet over Redis Streams, with real processes on loopback: redis-server, the
// server (no local workers) and `mooreeval worker` processes. 200 jobs; one worker is
// SIGKILLed while it evaluates a real candidate; every job must end with exactly one
// stored result whose verdict class equals a single-worker run's.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <map>
#include <set>

#include "core/files.h"
#include "mooreeval/service/request.h"
#include "support/service_env.h"

namespace musacoder::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

// The build cache the CLI tests share (the lean shim is built once, not per server).
const std::string kTestCache = "--cache-dir=" + (std::filesystem::path(MUSACODER_BINARY_DIR) / "test-build-cache").string();

const fs::path kSource = MUSACODER_SOURCE_DIR;
const fs::path kBinary = MUSACODER_BINARY_DIR;

struct MixJob {
  json request;       // {"task", "candidate" | "candidate_b64", "label"}
  bool real = false;  // needs a runner (seconds), not decided at extraction (milliseconds)
};

json text_job(const std::string& label, const std::string& candidate,
              const std::string& task = "elementwise/add") {
  return {{"task", task}, {"candidate", candidate}, {"label", label}};
}

// 200 jobs: a few real CPU candidates first (one needs a g++ build of a torch extension,
// ~60-100 s on a cold cache with 2 busy cores; the others need the runner only, ~7 s) (so that workers are
// busy with them when the kill comes), then submissions whose verdict is decided without a runner.
std::vector<MixJob> job_mix() {
  std::vector<MixJob> mix;
  auto file = [](const fs::path& p) { return read_file(p).value(); };
  const fs::path c = kSource / "tests/fixtures/candidates";
  mix.push_back({text_job("real:solution_add", file(kSource / "solutions/cpu/elementwise/add.py")), true});
  mix.push_back({text_job("real:no_kernel", file(c / "no_kernel.py")), true});
  mix.push_back({text_job("real:syntax_error", file(c / "syntax_error.py")), true});
  mix.push_back({text_job("real:no_kernel_relu", file(c / "no_kernel.py"), "activation/relu"), true});
  const std::string no_modelnew = file(c / "no_modelnew.py");
  for (int i = 0; mix.size() < 200; ++i) {
    const std::string n = std::to_string(i);
    switch (i % 5) {
      case 0:
        mix.push_back({text_job("empty#" + n, "")});
        break;
      case 1:
        mix.push_back(
            {text_job("no_code_block#" + n, "I would write a kernel here, but here is prose " + n)});
        break;
      case 2:  // not UTF-8: only base64 can carry it
        mix.push_back({{{"task", "norm/softmax"},
                        {"candidate_b64", service::encode_base64("class ModelNew:\xff\xfe " + n)},
                        {"label", "not_utf8#" + n}}});
        break;
      case 3:
        mix.push_back({text_job("no_modelnew#" + n, no_modelnew + "\n# " + n)});
        break;
      case 4:  // large (≈ 900 KiB) but within the limit: crosses the queue in one piece
        mix.push_back({text_job("large_prose#" + n, std::string(900 << 10, 'x') + n, "matmul/matmul")});
        break;
    }
  }
  return mix;
}

class Fleet : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::system("command -v redis-server >/dev/null 2>&1") != 0)
      GTEST_SKIP() << "redis-server not installed";
    dir_ = fs::temp_directory_path() / ("mooreeval-fleet-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    redis_port_ = free_port();
    redis_ = std::make_unique<Child>(
        std::vector<std::string>{"redis-server", "--port", std::to_string(redis_port_), "--bind", "127.0.0.1",
                                 "--save", "", "--appendonly", "no", "--dir", dir_.string()},
        dir_ / "redis.log");
    ASSERT_TRUE(redis_->wait_for("Ready to accept connections", 20s)) << redis_->log();
    queue_ = "redis://127.0.0.1:" + std::to_string(redis_port_);
  }
  void TearDown() override {
    workers_.clear();
    if (server_) server_->kill(SIGTERM);
    server_.reset();
    redis_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  std::vector<std::string> eval_flags() const {
    return {"--cache-dir",          (kBinary / "test-build-cache").string(),
            "--max-build-seconds",  "400",
            "--max-run-seconds",    "120",
            "--benchmark-iters",    "5",
            "--warmup-iters",       "2",
            "--visibility-timeout", "3",
            "--max-deliveries",     std::to_string(max_deliveries_)};
  }
  void start_server() {
    std::vector<std::string> argv = {
        kMooreEval.string(),          "serve",   "--listen", "127.0.0.1:0", "--db",
        (dir_ / "fleet.db").string(), "--queue", queue_,     "--workers",   "0", "--auth", "none"};
    for (auto& f : eval_flags()) argv.push_back(f);
    server_ = std::make_unique<Child>(argv, dir_ / "server.log");
    // Start-up probes the toolchain (Python imports torch): a minute or more on a loaded 2-core CI machine.
    auto port = server_->wait_for("listening on 127\\.0\\.0\\.1:([0-9]+)", 300s);
    ASSERT_TRUE(port) << server_->log();
    api_ = std::make_unique<Api>(std::stoi(*port));
  }
  Child& start_worker(const std::string& name) {
    std::vector<std::string> argv = {kMooreEval.string(), "worker", "--queue", queue_, "--name", name};
    for (auto& f : eval_flags()) argv.push_back(f);
    workers_[name] = std::make_unique<Child>(argv, dir_ / (name + ".log"));
    EXPECT_TRUE(workers_[name]->wait_for("pulling from", 300s)) << workers_[name]->log();
    return *workers_[name];
  }
  // Submits mix[begin, end) in batches of 50; returns job ids in mix order.
  std::vector<std::string> submit(const std::vector<MixJob>& mix, std::size_t begin = 0,
                                  std::size_t end = std::string::npos) {
    end = std::min(end, mix.size());
    std::vector<std::string> ids;
    for (std::size_t i = begin; i < end; i += 50) {
      json jobs = json::array();
      for (std::size_t k = i; k < std::min(end, i + 50); ++k) jobs.push_back(mix[k].request);
      auto r = api_->post("/v1/batches", {{"jobs", jobs}});
      EXPECT_EQ(r.status, 202) << r.raw.substr(0, 500);
      for (const auto& id : r.body["job_ids"]) ids.push_back(id.get<std::string>());
    }
    return ids;
  }
  std::map<std::string, json> lookup(const std::vector<std::string>& ids) {
    std::map<std::string, json> out;
    for (std::size_t i = 0; i < ids.size(); i += 100) {
      json chunk(std::vector<std::string>(ids.begin() + static_cast<long>(i),
                                          ids.begin() + static_cast<long>(std::min(ids.size(), i + 100))));
      auto r = api_->post("/v1/jobs/lookup", {{"job_ids", chunk}});
      EXPECT_EQ(r.status, 200) << r.raw.substr(0, 300);
      for (const auto& j : r.body["jobs"]) out[j["job_id"].get<std::string>()] = j;
    }
    return out;
  }
  // Waits until every job is done; returns label -> verdict class.
  std::map<std::string, std::string> wait_all(const std::vector<MixJob>& mix,
                                              const std::vector<std::string>& ids,
                                              std::chrono::seconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    std::map<std::string, json> jobs;
    while (std::chrono::steady_clock::now() < end) {
      jobs = lookup(ids);
      std::size_t done = 0;
      for (const auto& [id, j] : jobs) done += j["state"] == "done";
      if (done == ids.size()) break;
      std::this_thread::sleep_for(500ms);
    }
    std::map<std::string, std::string> verdicts;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const json& j = jobs[ids[i]];
      EXPECT_EQ(j["state"], "done") << mix[i].request["label"] << ": " << j.dump().substr(0, 300);
      if (j["state"] == "done") verdicts[mix[i].request["label"]] = j["verdict"]["verdict"];
    }
    return verdicts;
  }

  fs::path dir_;
  int redis_port_ = 0;
  int max_deliveries_ = 3;
  std::string queue_;
  std::unique_ptr<Child> redis_, server_;
  std::map<std::string, std::unique_ptr<Child>> workers_;
  std::unique_ptr<Api> api_;
};

// Counts rows of the server's database (read-only, WAL: never blocks the server).
int64_t count_rows(const fs::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* s = nullptr;
  int64_t n = -1;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
    n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(h);
  return n;
}

TEST_F(Fleet, KilledWorkerLosesNothingAndVerdictsMatchSingleWorker) {
  start_server();
  const auto mix = job_mix();
  ASSERT_EQ(mix.size(), 200u);

  // Reference: one worker, nothing killed.
  start_worker("single");
  const auto ref_ids = submit(mix);
  ASSERT_EQ(ref_ids.size(), 200u);
  const auto reference = wait_all(mix, ref_ids, 240s);
  ASSERT_EQ(reference.size(), 200u);
  EXPECT_EQ(reference.at("real:solution_add"), "ok");
  EXPECT_EQ(reference.at("real:no_kernel"), "illegal");
  EXPECT_EQ(reference.at("real:syntax_error"), "format_error");
  EXPECT_EQ(reference.at("empty#0"), "format_error");
  workers_.at("single")->kill(SIGTERM);

  // Fleet: two workers; kill whichever is busy with a real candidate. The real candidates
  // are in the first batch, and the kill comes before the rest is submitted: posting the
  // other 150 jobs (~27 MB of large prose) takes seconds on a loaded machine, time enough
  // for the workers to finish every real candidate before anyone looks (seen on CI).
  start_worker("wa");
  start_worker("wb");
  constexpr std::size_t kFirstBatch = 50;
  ASSERT_TRUE(std::all_of(mix.begin() + kFirstBatch, mix.end(), [](const MixJob& j) { return !j.real; }));
  auto ids = submit(mix, 0, kFirstBatch);
  ASSERT_EQ(ids.size(), kFirstBatch);
  std::string killed_job, killed_worker;
  const auto kill_by = std::chrono::steady_clock::now() + 60s;
  while (killed_job.empty() && std::chrono::steady_clock::now() < kill_by) {
    for (std::size_t i = 0; i < kFirstBatch && killed_job.empty(); ++i) {
      if (!mix[i].real) continue;
      auto r = api_->get("/v1/jobs/" + ids[i]);
      if (r.body.value("state", "") != "running") continue;
      const std::string consumer = r.body.value("worker", "");  // "<name>:<thread>"
      const std::string name = consumer.substr(0, consumer.find(':'));
      if (!workers_.count(name)) continue;
      workers_.at(name)->kill(SIGKILL);
      killed_job = ids[i];
      killed_worker = name;
    }
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_FALSE(killed_job.empty()) << "no worker was seen busy with a real candidate";
  for (auto& id : submit(mix, kFirstBatch)) ids.push_back(id);
  ASSERT_EQ(ids.size(), 200u);

  const auto fleet = wait_all(mix, ids, 240s);
  EXPECT_EQ(fleet, reference);

  // The killed job ran again elsewhere (attempt 2) and still has exactly one result.
  auto r = api_->get("/v1/jobs/" + killed_job);
  EXPECT_GE(r.body["attempts"].get<int>(), 2) << r.raw.substr(0, 400);
  EXPECT_NE(r.body["worker"].get<std::string>().substr(0, killed_worker.size()), killed_worker);
  const fs::path db = dir_ / "fleet.db";
  EXPECT_EQ(count_rows(db, "SELECT COUNT(*) FROM results"), 400);
  EXPECT_EQ(count_rows(db,
                       "SELECT COUNT(*) FROM jobs j WHERE NOT EXISTS "
                       "(SELECT 1 FROM results r WHERE r.job_id = j.id)"),
            0);
  EXPECT_EQ(count_rows(db, "SELECT COUNT(*) FROM job_log WHERE event = 'result_stored'"), 400);
  auto metrics = api_->get("/metrics");
  EXPECT_NE(metrics.raw.find("mooreeval_reclaims_total"), std::string::npos);
}

TEST_F(Fleet, JobThatKeepsKillingWorkersBecomesInfraError) {
  max_deliveries_ = 1;  // the first reclaim already exceeds it
  start_server();
  start_worker("victim");
  // The poison must hold the worker until the kill: a candidate that spins forever keeps
  // the job "running" (build, then a run bounded only by --max-run-seconds). A candidate
  // decided in milliseconds (no_kernel.py, as this test once used) can finish between two
  // polls on a loaded machine, and then no worker is ever killed.
  auto r = api_->post(
      "/v1/jobs",
      text_job("poison", read_file(kSource / "tests/fixtures/candidates/infinite_loop_cpu.py").value()));
  ASSERT_EQ(r.status, 202) << r.raw;
  const std::string id = r.body["job_id"];
  std::string state;
  const auto end = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < end) {
    state = api_->get("/v1/jobs/" + id).body.value("state", "");
    if (state == "running" || state == "done") break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(state, "running") << "the poison job must be running when its worker is killed";
  workers_.at("victim")->kill(SIGKILL);
  start_worker("heir");
  json job;
  const auto end2 = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < end2) {
    job = api_->get("/v1/jobs/" + id).body;
    if (job.value("state", "") == "done") break;
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(job.value("state", ""), "done") << job.dump();
  EXPECT_EQ(job["verdict"]["verdict"], "infra_error");
  EXPECT_NE(job["verdict"]["message"].get<std::string>().find("killed 1 workers"), std::string::npos);
  EXPECT_TRUE(job["verdict"]["reward"].is_null());
}

}  // namespace
}  // namespace musacoder::testing

namespace musacoder::testing {
namespace {

// Redis with a password for the default user and an ACL user for the fleet: workers and
// the server authenticate (--redis-user, --redis-password-file); wrong or missing
// credentials fail at start with a message, never silently.
TEST(FleetAuth, WorkerAndServerAuthenticateToRedis) {
  if (::system("command -v redis-server >/dev/null 2>&1") != 0) GTEST_SKIP() << "redis-server not installed";
  const fs::path dir = fs::temp_directory_path() / ("mc-fleet-auth-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const int port = free_port();
  Child redis({"redis-server", "--port", std::to_string(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
               "no", "--dir", dir.string(), "--requirepass", "default-secret", "--user", "evaluator", "on",
               ">fleet-secret", "~mooreeval*", "&*", "+@all"},
              dir / "redis.log");
  ASSERT_TRUE(redis.wait_for("Ready to accept connections", 20s)) << redis.log();
  const std::string queue = "redis://127.0.0.1:" + std::to_string(port);
  ASSERT_TRUE(write_file_atomic(dir / "good", "fleet-secret\n").ok());
  ASSERT_TRUE(write_file_atomic(dir / "bad", "guess\n").ok());
  auto worker = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> argv = {kMooreEval.string(), "worker", "--queue", queue, "--name", name, kTestCache};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<Child>(argv, dir / (name + ".log"));
  };
  auto none = worker("none", {});
  EXPECT_TRUE(none->wait_for("NOAUTH|Authentication required", 600s)) << none->log();
  auto wrong = worker("wrong", {"--redis-user", "evaluator", "--redis-password-file", (dir / "bad").string()});
  EXPECT_TRUE(wrong->wait_for("refused the credentials", 600s)) << wrong->log();
  EXPECT_EQ(wrong->log().find("guess"), std::string::npos);  // the password is never printed
  auto good = worker("good", {"--redis-user", "evaluator", "--redis-password-file", (dir / "good").string()});
  ASSERT_TRUE(good->wait_for("pulling from", 600s)) << good->log();
  Child server({kMooreEval.string(), "serve", "--listen", "127.0.0.1:0", "--auth", "none", "--db",
                (dir / "s.db").string(), "--queue", queue, "--workers", "0", "--redis-user", "evaluator",
                "--redis-password-file", (dir / "good").string(), kTestCache},
               dir / "server.log");
  auto http = server.wait_for("listening on 127\\.0\\.0\\.1:([0-9]+)", 600s);
  ASSERT_TRUE(http) << server.log();
  Api api(std::stoi(*http));
  auto r = api.post("/v1/evaluate", {{"task", "elementwise/add"}, {"candidate", "prose"}, {"deadline_seconds", 120}});
  EXPECT_EQ(r.status, 200) << r.raw << server.log() << good->log();
  EXPECT_EQ(r.body["verdict"]["verdict"], "format_error");
  good->kill(SIGTERM);
  server.kill(SIGTERM);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace musacoder::testing
