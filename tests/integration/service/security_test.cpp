// The service exposed to callers that are not trusted (issue 26), on a real server on
// loopback: tokens and scopes, job ownership, refusal of cross-site and non-JSON requests,
// 405s, slow clients that cannot starve /healthz, rate limits and quotas (429), retention,
// idempotency keys, and the start-up refusals (--auth none off loopback, no tokens).
// Every wait is bounded; margins are generous (CI machines are loaded).
#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "core/files.h"
#include "core/text.h"
#include "support/service_env.h"

namespace musacoder::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

// The build cache the CLI tests share (the lean shim is built once, not per server).
const std::string kTestCache = "--cache-dir=" + (std::filesystem::path(MUSACODER_BINARY_DIR) / "test-build-cache").string();

struct Token {
  std::string name, scope, secret;
};

const std::vector<Token> kTokens = {
    {"alice", "submit", "mev_alice_0123456789"}, {"alice", "read", "mev_alice_reader_0123"},
    {"bob", "submit", "mev_bob_0123456789"},     {"root", "admin", "mev_root_0123456789"},
    {"flood", "submit", "mev_flood_0123456789"}, {"quota", "submit", "mev_quota_0123456789"},
};

std::string secret(const std::string& name, const std::string& scope) {
  for (const auto& t : kTokens)
    if (t.name == name && t.scope == scope) return t.secret;
  return "";
}

fs::path fresh_dir(const std::string& what) {
  fs::path d = fs::temp_directory_path() / ("mc-service-" + what + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A server with tokens (hashes only in the file), tight limits for the flood tests
// (per token name, so other tests' names are not affected) and a short header deadline.
class Security : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fresh_dir("security"));
    std::string table = "# name scope sha256\n";
    for (const auto& t : kTokens) table += t.name + " " + t.scope + " " + sha256_hex(t.secret) + "\n";
    ASSERT_TRUE(write_file_atomic(*dir_ / "tokens", table).ok());
    server_ = new Child({kMooreEval.string(), "serve", "--listen", "127.0.0.1:0", "--db", (*dir_ / "s.db").string(),
                         "--workers", "1", "--tokens", (*dir_ / "tokens").string(), "--http-threads", "2",
                         "--header-timeout", "1", "--body-timeout", "2", "--rate-limit", "2", "--rate-burst", "4",
                         "--max-unfinished-per-token", "5", "--max-connections", "512", kTestCache},
                        *dir_ / "server.log");
    auto port = server_->wait_for("listening on 127\\.0\\.0\\.1:([0-9]+)", 600s);
    ASSERT_TRUE(port) << server_->log();
    port_ = std::stoi(*port);
  }
  static void TearDownTestSuite() {
    server_->kill(SIGTERM);
    delete server_;
    fs::remove_all(*dir_);
    delete dir_;
  }
  static Api as(const std::string& name, const std::string& scope = "submit") { return Api(port_, secret(name, scope)); }
  // Polls until the job is done (bounded).
  static json wait_done(Api& api, const std::string& id) {
    json job;
    for (int i = 0; i < 600; ++i) {
      job = api.get("/v1/jobs/" + id).body;
      if (job.value("state", "") == "done") break;
      std::this_thread::sleep_for(100ms);
    }
    return job;
  }

  static fs::path* dir_;
  static Child* server_;
  static int port_;
};
fs::path* Security::dir_ = nullptr;
Child* Security::server_ = nullptr;
int Security::port_ = 0;

TEST_F(Security, TokensScopesAndOwnership) {
  Api anonymous(port_), forged(port_, "mev_not_a_token"), alice = as("alice"), bob = as("bob"),
      reader = as("alice", "read"), root = as("root", "admin");
  const json job = {{"task", "elementwise/add"}, {"candidate", ""}};
  EXPECT_EQ(anonymous.post("/v1/jobs", job).status, 401);
  EXPECT_EQ(anonymous.last_header("WWW-Authenticate"), "Bearer realm=\"mooreeval\"");
  EXPECT_EQ(forged.post("/v1/jobs", job).status, 401);
  EXPECT_EQ(anonymous.get("/v1/tasks").status, 401);
  EXPECT_EQ(anonymous.get("/healthz").status, 200);  // load balancers need no token

  auto sub = alice.post("/v1/jobs", job);
  ASSERT_EQ(sub.status, 202) << sub.raw;
  const std::string id = sub.body["job_id"];
  EXPECT_EQ(wait_done(alice, id)["verdict"]["verdict"], "format_error");
  // Another name's job does not exist for bob; alice's read-only token and admin see it.
  EXPECT_EQ(bob.get("/v1/jobs/" + id).status, 404);
  EXPECT_EQ(bob.get("/v1/jobs/" + id + "/log").status, 404);
  EXPECT_EQ(bob.post_raw("/v1/jobs/" + id + "/cancel", "").status, 404);
  EXPECT_EQ(bob.del("/v1/jobs/" + id).status, 404);
  EXPECT_EQ(bob.post("/v1/jobs/lookup", {{"job_ids", {id}}}).body["jobs"][0]["state"], "unknown");
  EXPECT_EQ(reader.get("/v1/jobs/" + id).status, 200);
  EXPECT_EQ(root.get("/v1/jobs/" + id).status, 200);
  EXPECT_EQ(root.get("/v1/jobs/" + id).body["verdict"]["verdict"], "format_error");
  // Scope read cannot submit or cancel.
  auto denied = reader.post("/v1/jobs", job);
  EXPECT_EQ(denied.status, 403) << denied.raw;
  EXPECT_NE(denied.body["error"]["message"].get<std::string>().find("needs submit"), std::string::npos);
  EXPECT_EQ(reader.post_raw("/v1/jobs/" + id + "/cancel", "").status, 403);
  // The token table holds hashes only: the secret is nowhere in it.
  EXPECT_EQ(read_file(*dir_ / "tokens").value().find("mev_alice_0123456789"), std::string::npos);
}

TEST_F(Security, CrossSiteNonJsonAndWrongMethodsAreRefused) {
  Api alice = as("alice");
  const std::string body = json{{"task", "elementwise/add"}, {"candidate", ""}}.dump();
  auto text = alice.post_raw("/v1/jobs", body, "text/plain");
  EXPECT_EQ(text.status, 415) << text.raw;
  EXPECT_EQ(text.body["error"]["code"], "unsupported_media_type");
  EXPECT_EQ(alice.post_raw("/v1/jobs", body, "application/x-www-form-urlencoded").status, 415);
  EXPECT_EQ(alice.post_raw("/v1/jobs", body, "application/json; charset=utf-8").status, 202);
  // A page in a browser (Origin) and DNS rebinding (a foreign Host name).
  auto origin = alice.post_raw("/v1/jobs", body, "application/json", {{"Origin", "http://evil.example"}});
  EXPECT_EQ(origin.status, 403) << origin.raw;
  auto rebound = alice.get("/v1/tasks", {{"Host", "evil.example:8080"}});
  EXPECT_EQ(rebound.status, 403) << rebound.raw;
  EXPECT_EQ(alice.get("/v1/tasks", {{"Host", "localhost:1"}}).status, 200);
  // 405 with Allow, as openapi.yaml says, before the token is even looked at.
  auto put = alice.put("/v1/jobs", body);
  EXPECT_EQ(put.status, 405) << put.raw;
  EXPECT_EQ(alice.last_header("Allow"), "POST");
  EXPECT_EQ(put.body["error"]["code"], "method_not_allowed");
  EXPECT_EQ(Api(port_).get("/v1/evaluate").status, 405);
  EXPECT_EQ(alice.get("/v1/jobs/lookup").status, 405);
  EXPECT_EQ(alice.post_raw("/healthz", "{}").status, 405);
  EXPECT_EQ(alice.get("/v1/nothing").status, 404);
}

TEST_F(Security, SlowClientsAndWaitingEvaluationsDoNotStarveHealthz) {
  // The single worker is busy with a real candidate (seconds); behind it, 34 synchronous
  // evaluations wait (2 HTTP handler threads in this server: a thread each would block).
  Api root = as("root", "admin");
  const std::string real =
      read_file(fs::path(MUSACODER_SOURCE_DIR) / "tests/fixtures/candidates/no_kernel.py").value();
  ASSERT_EQ(root.post("/v1/jobs", {{"task", "elementwise/add"}, {"candidate", real}}).status, 202);
  std::vector<std::future<int>> waits;
  for (int i = 0; i < 34; ++i)
    waits.push_back(std::async(std::launch::async, [] {
      Api api(port_, secret("root", "admin"));
      return api.post("/v1/evaluate", {{"task", "elementwise/add"}, {"candidate", "prose " + std::to_string(1)},
                                       {"deadline_seconds", 120}})
          .status;
    }));
  // 200 slowloris sockets: half stall in the head, half send a head and one body byte.
  std::vector<std::unique_ptr<RawConn>> slow;
  for (int i = 0; i < 200; ++i) {
    slow.push_back(std::make_unique<RawConn>(port_));
    ASSERT_TRUE(slow.back()->connected());
    slow.back()->send(i % 2 ? "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
                            : "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                                  secret("root", "admin") +
                                  "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{");
  }
  std::this_thread::sleep_for(300ms);
  for (int round = 0; round < 3; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    auto h = Api(port_).get("/healthz");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(h.status, 200) << server_->log();
    EXPECT_LT(s, 5.0) << "healthz took " << s << " s under load";
    EXPECT_EQ(root.get("/v1/tasks").status, 200);  // the API lane answers too
  }
  // The stalled requests are answered 408 and closed at their deadline (1 s head, 2 s body).
  int closed_count = 0;
  const auto end = std::chrono::steady_clock::now() + 20s;
  for (auto& c : slow) {
    bool closed = false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    std::string got = c->read_until_close(std::max(left, std::chrono::milliseconds(100)), closed);
    closed_count += closed;
    if (!got.empty()) {
      EXPECT_NE(got.find(" 408 "), std::string::npos) << got.substr(0, 100);
    }
  }
  EXPECT_EQ(closed_count, 200);
  for (auto& w : waits) EXPECT_EQ(w.get(), 200);
  EXPECT_NE(root.get("/metrics").raw.find("mooreeval_http_timeouts_total"), std::string::npos);
}

TEST_F(Security, FloodGets429WithRetryAfterAndQuotaHolds) {
  Api flood = as("flood");
  int accepted = 0, limited = 0;
  std::string retry_after;
  for (int i = 0; i < 12; ++i) {
    auto r = flood.post("/v1/jobs", {{"task", "elementwise/add"}, {"candidate", "prose"}});
    if (r.status == 202) ++accepted;
    if (r.status == 429) {
      ++limited;
      retry_after = flood.last_header("Retry-After");
      EXPECT_EQ(r.body["error"]["code"], "rate_limited");
    }
  }
  EXPECT_GE(limited, 1);
  EXPECT_LE(accepted, 8);  // burst 4 plus what 2/s refills while the loop runs
  EXPECT_FALSE(retry_after.empty());
  EXPECT_GE(std::stoi(retry_after), 1);
  // Quota: at most 5 unfinished jobs per name; a batch of 6 is refused as a whole.
  Api quota = as("quota");
  json six = json::array();
  for (int i = 0; i < 6; ++i) six.push_back({{"task", "elementwise/add"}, {"candidate", "prose"}});
  auto r = quota.post("/v1/batches", {{"jobs", six}});
  EXPECT_EQ(r.status, 429) << r.raw;
  EXPECT_EQ(r.body["error"]["code"], "quota_exceeded");
  EXPECT_FALSE(quota.last_header("Retry-After").empty());
  // bob is not affected by flood's limits.
  EXPECT_EQ(as("bob").post("/v1/jobs", {{"task", "elementwise/add"}, {"candidate", "x"}}).status, 202);
}

TEST_F(Security, IdempotencyKeyReturnsTheOriginalJobs) {
  Api bob = as("bob");
  json jobs = json::array();
  for (int i = 0; i < 3; ++i) jobs.push_back({{"task", "elementwise/add"}, {"candidate", "p" + std::to_string(i)}});
  auto first = bob.post("/v1/batches", {{"jobs", jobs}}, {{"Idempotency-Key", "batch-1"}});
  ASSERT_EQ(first.status, 202) << first.raw;
  auto again = bob.post("/v1/batches", {{"jobs", jobs}}, {{"Idempotency-Key", "batch-1"}});
  ASSERT_EQ(again.status, 202) << again.raw;
  EXPECT_EQ(again.body["job_ids"], first.body["job_ids"]);
  EXPECT_TRUE(again.body["replayed"].get<bool>());
  // The same key for another request is a client bug, not a replay.
  jobs.push_back({{"task", "elementwise/add"}, {"candidate", "more"}});
  auto other = bob.post("/v1/batches", {{"jobs", jobs}}, {{"Idempotency-Key", "batch-1"}});
  EXPECT_EQ(other.status, 422) << other.raw;
  // Keys are per name: alice's "batch-1" is hers.
  auto alice = as("alice").post("/v1/batches", {{"jobs", {jobs[0]}}}, {{"Idempotency-Key", "batch-1"}});
  EXPECT_EQ(alice.status, 202);
  EXPECT_NE(alice.body["job_ids"][0], first.body["job_ids"][0]);
}

// Start-up refusals and the retention policy (own servers).
TEST(SecurityStart, AuthNoneOnlyOnLoopbackAndTokensRequired) {
  const fs::path dir = fresh_dir("start");
  Child open({kMooreEval.string(), "serve", "--listen", "0.0.0.0:0", "--auth", "none", "--db",
              (dir / "a.db").string(), "--workers", "1", kTestCache},
             dir / "open.log");
  EXPECT_TRUE(open.wait_for("only on a loopback address", 60s)) << open.log();
  Child none({kMooreEval.string(), "serve", "--listen", "127.0.0.1:0", "--db", (dir / "b.db").string(), "--workers",
              "1", kTestCache},
             dir / "none.log");
  EXPECT_TRUE(none.wait_for("no API tokens", 60s)) << none.log();
  Child local({kMooreEval.string(), "serve", "--listen", "127.0.0.1:0", "--auth", "none", "--db",
               (dir / "c.db").string(), "--workers", "1", kTestCache},
              dir / "local.log");
  EXPECT_TRUE(local.wait_for("WARNING: --auth none", 600s)) << local.log();
  local.kill(SIGTERM);
  fs::remove_all(dir);
}

TEST(SecurityStart, RetentionRemovesFinishedJobs) {
  const fs::path dir = fresh_dir("retention");
  // Finished jobs older than ~0.1 s go, checked every 0.2 s.
  Child server({kMooreEval.string(), "serve", "--listen", "127.0.0.1:0", "--auth", "none", "--db",
                (dir / "r.db").string(), "--workers", "1", "--retention-days", "0.000001", "--retention-interval",
                "0.2", kTestCache},
               dir / "server.log");
  auto port = server.wait_for("listening on 127\\.0\\.0\\.1:([0-9]+)", 600s);
  ASSERT_TRUE(port) << server.log();
  Api api(std::stoi(*port));
  auto sub = api.post("/v1/jobs", {{"task", "elementwise/add"}, {"candidate", std::string(100000, 'x')}});
  ASSERT_EQ(sub.status, 202);
  const std::string id = sub.body["job_id"];
  int last = 0;
  for (int i = 0; i < 300 && last != 404; ++i) {
    last = api.get("/v1/jobs/" + id).status;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(last, 404) << "the finished job was never removed\n" << server.log();
  EXPECT_TRUE(server.wait_for("retention removed", 10s)) << server.log();
  server.kill(SIGTERM);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace musacoder::testing
