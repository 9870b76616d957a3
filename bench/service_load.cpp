// Load test of a running MooreEval service on loopback (bounded in time and volume):
//   1. sustained batch submission: C client threads POST /v1/batches of B small jobs
//      (format errors: decided in milliseconds, so the workers keep up) for S seconds;
//   2. status queries: C threads GET /v1/jobs/{id} over the submitted ids for S seconds.
// Prints requests/s, jobs/s and latency percentiles; exits 1 on any non-2xx reply.
//
//   service_load --port 8080 [--threads 8] [--seconds 10] [--batch 64]
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Phase {
  std::atomic<int64_t> ok{0}, errors{0}, items{0};
  std::mutex mu;
  std::vector<double> latencies_ms;
  void record(double ms) {
    std::lock_guard<std::mutex> lock(mu);
    latencies_ms.push_back(ms);
  }
  double pct(double p) {
    if (latencies_ms.empty()) return 0;
    std::sort(latencies_ms.begin(), latencies_ms.end());
    return latencies_ms[std::min(latencies_ms.size() - 1, static_cast<std::size_t>(p * latencies_ms.size()))];
  }
};

template <typename F>
void run_phase(int threads, double seconds, F body) {
  const auto end =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      while (Clock::now() < end) body(t);
    });
  for (auto& th : pool) th.join();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"MooreEval service load test (loopback)"};
  std::string host = "127.0.0.1";
  int port = 8080, threads = 8, batch = 64;
  double seconds = 10;
  app.add_option("--host", host)->capture_default_str();
  app.add_option("--port", port)->required();
  app.add_option("--threads", threads)->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--seconds", seconds, "per phase")->capture_default_str()->check(CLI::Range(0.5, 300.0));
  app.add_option("--batch", batch, "jobs per batch request")
      ->capture_default_str()
      ->check(CLI::Range(1, 512));
  CLI11_PARSE(app, argc, argv);

  json jobs = json::array();
  for (int i = 0; i < batch; ++i)
    jobs.push_back(
        {{"task", "elementwise/add"}, {"candidate", "load test, no code block #" + std::to_string(i)}});
  const std::string batch_body = json{{"jobs", jobs}}.dump();

  std::mutex ids_mu;
  std::vector<std::string> ids;
  Phase submit;
  run_phase(threads, seconds, [&](int) {
    thread_local httplib::Client c(host, port);
    const auto t0 = Clock::now();
    auto r = c.Post("/v1/batches", batch_body, "application/json");
    submit.record(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!r || r->status != 202) {
      submit.errors++;
      return;
    }
    submit.ok++;
    auto j = json::parse(r->body, nullptr, false);
    std::lock_guard<std::mutex> lock(ids_mu);
    for (const auto& id : j["job_ids"]) ids.push_back(id);
    submit.items += static_cast<int64_t>(j["job_ids"].size());
  });
  std::printf(
      "batch submission: %d threads x %.1f s, %d jobs/request: %.0f requests/s, %.0f jobs/s, "
      "p50 %.2f ms, p99 %.2f ms, %lld errors\n",
      threads, seconds, batch, submit.ok / seconds, submit.items / seconds, submit.pct(0.5), submit.pct(0.99),
      static_cast<long long>(submit.errors.load()));
  if (ids.empty()) {
    std::fprintf(stderr, "service_load: no job was accepted; is the service at %s:%d?\n", host.c_str(), port);
    return 1;
  }

  Phase status;
  std::atomic<std::size_t> cursor{0};
  run_phase(threads, seconds, [&](int) {
    thread_local httplib::Client c(host, port);
    const std::string& id = ids[cursor++ % ids.size()];
    const auto t0 = Clock::now();
    auto r = c.Get(("/v1/jobs/" + id).c_str());
    status.record(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    (r && r->status == 200) ? status.ok++ : status.errors++;
  });
  std::printf(
      "status queries:   %d threads x %.1f s: %.0f requests/s, p50 %.2f ms, p99 %.2f ms, %lld errors\n",
      threads, seconds, status.ok / seconds, status.pct(0.5), status.pct(0.99),
      static_cast<long long>(status.errors.load()));
  return submit.errors || status.errors ? 1 : 0;
}
