// Fuzzing the HTTP API of a real embedded server: malformed JSON, wrong types, huge
// fields, unknown tasks, random bytes (as bodies and as raw TCP). Every reply must be a
// JSON error with a 4xx status (or a success for the few valid inputs), and the server
// must keep answering /healthz throughout and be alive at the end.
#include <gtest/gtest.h>

#include <random>

#include "core/files.h"
#include "mooreeval/service/request.h"
#include "support/service_env.h"

namespace musacoder::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

class ApiFuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mooreeval-fuzz-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    server_ = std::make_unique<Child>(
        std::vector<std::string>{kMooreEval.string(), "serve", "--listen", "127.0.0.1:0", "--db",
                                 (dir_ / "fuzz.db").string(), "--workers", "1", "--auth", "none", "--max-batch", "64",
                                 "--max-body-bytes", std::to_string(4 << 20), "--no-cache"},
        dir_ / "server.log");
    auto port = server_->wait_for("listening on 127\\.0\\.0\\.1:([0-9]+)", 600s);
    ASSERT_TRUE(port) << server_->log();
    port_ = std::stoi(*port);
    api_ = std::make_unique<Api>(port_);
  }
  void TearDown() override {
    if (server_) server_->kill(SIGTERM);
    if (!HasFailure()) fs::remove_all(dir_);
  }
  // A 4xx with a JSON error body naming a code.
  void expect_client_error(const HttpReply& r, const std::string& what) {
    ASSERT_NE(r.status, 0) << what << ": no reply (server down?)\n" << server_->log();
    EXPECT_GE(r.status, 400) << what << ": " << r.raw.substr(0, 200);
    EXPECT_LT(r.status, 500) << what << ": " << r.raw.substr(0, 200);
    ASSERT_TRUE(r.body.is_object()) << what << ": body is not JSON: " << r.raw.substr(0, 200);
    EXPECT_TRUE(r.body["error"]["code"].is_string()) << what << ": " << r.raw.substr(0, 200);
  }

  fs::path dir_;
  int port_ = 0;
  std::unique_ptr<Child> server_;
  std::unique_ptr<Api> api_;
};

TEST_F(ApiFuzz, MalformedRequestsGetJsonErrorsAndTheServerStaysUp) {
  const std::vector<std::string> endpoints = {"/v1/jobs", "/v1/batches", "/v1/evaluate", "/v1/jobs/lookup"};
  const std::vector<std::string> bodies = {
      "",
      "{",
      "}",
      "[]",
      "null",
      "42",
      "\"str\"",
      "{\"task\":",
      "{\"task\": 1, \"candidate\": \"x\"}",
      "{\"task\": \"elementwise/add\"}",
      "{\"task\": \"elementwise/add\", \"candidate\": 5}",
      "{\"task\": \"elementwise/add\", \"candidate\": \"x\", \"candidate_b64\": \"eA==\"}",
      "{\"task\": \"elementwise/add\", \"candidate_b64\": \"not base64!\"}",
      "{\"task\": \"no/such_task\", \"candidate\": \"x\"}",
      "{\"task\": \"../../etc/passwd\", \"candidate\": \"x\"}",
      "{\"task\": \"elementwise/add\", \"candidate\": \"x\", \"bogus\": 1}",
      "{\"task\": \"elementwise/add\", \"candidate\": \"x\", \"label\": [1, 2]}",
      "{\"task\": \"elementwise/add\", \"candidate\": \"x\", \"deadline_seconds\": -1}",
      "{\"task\": \"elementwise/add\", \"candidate\": \"x\", \"deadline_seconds\": \"soon\"}",
      "{\"jobs\": {}}",
      "{\"jobs\": []}",
      "{\"jobs\": [1, 2, 3]}",
      "{\"job_ids\": [\"xyz\"]}",
      "{\"job_ids\": 7}",
      std::string(100, '[') + std::string(100, ']'),
      "{\"a\":" + std::string(5000, '{'),
      "{\"task\": \"elementwise/add\", \"candidate\": \"\xff\xfe\"}",  // not UTF-8 inside JSON
      "{\"task\": \"" + std::string(100000, 'a') + "\", \"candidate\": \"x\"}",
      "{\"task\": \"elementwise/add\", \"candidate\": \"" + std::string((1 << 20) + 10, 'a') + "\"}",
      "{\"jobs\": [" +
          [] {
            std::string s;
            for (int i = 0; i < 65; ++i)
              s += std::string(i ? "," : "") + "{\"task\":\"elementwise/add\",\"candidate\":\"x\"}";
            return s;
          }() +
          "]}",
  };
  for (const auto& ep : endpoints)
    for (const auto& b : bodies) expect_client_error(api_->post_raw(ep, b), ep + " <- " + b.substr(0, 60));

  // Oversized body: rejected by the transport limit (413), not buffered.
  expect_client_error(api_->post_raw("/v1/jobs", std::string(5 << 20, ' ')), "5 MiB body");
  // Unknown routes and ids.
  expect_client_error(api_->get("/v1/jobs/0123"), "short id");
  expect_client_error(api_->get("/v1/jobs/" + std::string(32, 'a')), "unknown id");
  expect_client_error(api_->post_raw("/v1/jobs/" + std::string(32, 'b') + "/cancel", ""), "cancel unknown");
  expect_client_error(api_->get("/nope"), "no route");

  // Random bytes as bodies (fixed seed: reproducible) and random JSON-ish soup.
  std::mt19937 rng(1234);
  const std::string alphabet = "{}[]\":,0123456789.-+eEtrufalsn \\/ab\x01\xff";
  for (int i = 0; i < 300; ++i) {
    std::string body(rng() % 2000, '\0');
    if (i % 2) {
      for (auto& c : body) c = static_cast<char>(rng() & 0xff);
    } else {
      for (auto& c : body) c = alphabet[rng() % alphabet.size()];
    }
    auto r = api_->post_raw(endpoints[i % endpoints.size()], body);
    expect_client_error(r, "random body #" + std::to_string(i));
  }

  // Garbage that is not HTTP at all, on raw TCP connections.
  for (int i = 0; i < 50; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port_));
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    std::string junk(rng() % 4000 + 1, '\0');
    for (auto& c : junk) c = static_cast<char>(rng() & 0xff);
    if (i % 3 == 0) junk = "POST /v1/jobs HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n" + junk;
    if (i % 3 == 1) junk = "GET /healthz HTTP/1.1\r\n" + std::string(20000, 'H') + ": x\r\n\r\n";
    (void)::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
    ::shutdown(fd, SHUT_WR);
    char buf[256];
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    (void)::recv(fd, buf, sizeof(buf), 0);
    ::close(fd);
  }

  // Still serving, and still correct on valid input.
  auto health = api_->get("/healthz");
  ASSERT_EQ(health.status, 200) << server_->log();
  auto ok = api_->post("/v1/evaluate", {{"task", "elementwise/add"}, {"candidate", "prose, no code"}});
  ASSERT_EQ(ok.status, 200) << ok.raw;
  EXPECT_EQ(ok.body["verdict"]["verdict"], "format_error");
  auto bytes = api_->post("/v1/evaluate",
                          {{"task", "elementwise/add"},
                           {"candidate_b64", service::encode_base64(std::string("\xff\xfe\x00z", 4))}});
  ASSERT_EQ(bytes.status, 200) << bytes.raw;
  EXPECT_EQ(bytes.body["verdict"]["verdict"], "format_error");
  EXPECT_TRUE(server_->alive());
  auto metrics = api_->get("/metrics");
  EXPECT_NE(metrics.raw.find("mooreeval_http_requests_total{route=\"/v1/jobs\",status=\"400\"}"),
            std::string::npos);
}

TEST_F(ApiFuzz, JobLifecycleStatusLogCancelAndDeadline) {
  // A format error finishes in milliseconds; its status, log and verdict are consistent.
  auto sub = api_->post("/v1/jobs", {{"task", "elementwise/add"}, {"candidate", ""}, {"label", "empty"}});
  ASSERT_EQ(sub.status, 202) << sub.raw;
  const std::string id = sub.body["job_id"];
  json job;
  for (int i = 0; i < 100; ++i) {
    job = api_->get("/v1/jobs/" + id).body;
    if (job["state"] == "done") break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(job["state"], "done") << job.dump();
  EXPECT_EQ(job["label"], "empty");
  EXPECT_EQ(job["verdict"]["verdict"], "format_error");
  auto log = api_->get("/v1/jobs/" + id + "/log");
  ASSERT_EQ(log.status, 200);
  std::vector<std::string> events;
  for (const auto& e : log.body["log"]) events.push_back(e["event"]);
  EXPECT_EQ(events, (std::vector<std::string>{"submitted", "started", "result_stored"}));
  // A finished job cannot be cancelled.
  EXPECT_EQ(api_->post_raw("/v1/jobs/" + id + "/cancel", "").status, 409);

  // Occupy the single worker with a candidate that builds and runs (seconds, even with
  // warm runners and the lean build path), queue another, cancel it, and let a synchronous
  // evaluate behind them hit its deadline.
  const std::string correct =
      read_file(fs::path(MUSACODER_SOURCE_DIR) / "tests/fixtures/candidates/correct_cpu.py").value();
  const std::string no_kernel =
      read_file(fs::path(MUSACODER_SOURCE_DIR) / "tests/fixtures/candidates/no_kernel.py").value();
  auto busy = api_->post("/v1/jobs", {{"task", "elementwise/add"}, {"candidate", correct}});
  ASSERT_EQ(busy.status, 202);
  auto queued = api_->post("/v1/jobs", {{"task", "elementwise/add"}, {"candidate", no_kernel}});
  ASSERT_EQ(queued.status, 202);
  const std::string qid = queued.body["job_id"];
  auto cancel = api_->post_raw("/v1/jobs/" + qid + "/cancel", "");
  ASSERT_EQ(cancel.status, 200) << cancel.raw;
  EXPECT_EQ(api_->get("/v1/jobs/" + qid).body["state"], "cancelled");
  auto late = api_->post("/v1/evaluate", {{"task", "elementwise/add"},
                                          {"candidate", no_kernel},
                                          {"deadline_seconds", 0.5},
                                          {"cancel_on_deadline", true}});
  EXPECT_EQ(late.status, 504) << late.raw;
  EXPECT_EQ(late.body["error"]["code"], "deadline_exceeded");
  EXPECT_EQ(late.body["state"], "cancelled");
  // The busy job still finishes with its one result; the cancelled ones never get one.
  json b;
  for (int i = 0; i < 1800; ++i) {  // the first build may include the lean shim's (~1 min here)
    b = api_->get("/v1/jobs/" + busy.body["job_id"].get<std::string>()).body;
    if (b["state"] == "done") break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(b["verdict"]["verdict"], "ok") << b.dump().substr(0, 400);
  std::this_thread::sleep_for(1s);
  EXPECT_TRUE(api_->get("/v1/jobs/" + qid).body["verdict"].is_null());
}

}  // namespace
}  // namespace musacoder::testing
