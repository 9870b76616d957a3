// Load test of a running MooreEval service on loopback, with authentication (bounded in
// time and volume):
//   1. submissions: C concurrent clients POST /v1/jobs (B jobs per request via
//      /v1/batches when B > 1) of small format-error candidates (decided in milliseconds,
//      so the workers keep up) for S seconds: submissions/s and latency percentiles;
//   2. status queries: C clients GET /v1/jobs/{id} over the submitted ids for S seconds;
//   3. slowloris: K sockets that send part of a request head and stall (reopened as the
//      server drops them at its header deadline), while one client times GET /healthz
//      on fresh connections for S seconds.
// Prints one line per phase; exits 1 on any unexpected reply.
//
//   service_load --port 8080 --token $TOKEN [--clients 100] [--seconds 10] [--batch 1] [--slowloris 200]
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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
    std::lock_guard<std::mutex> lock(mu);
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

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A socket that sent a partial request head and stalls; -1 when it could not connect.
int slow_socket(const std::string& host, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  static const char kHead[] = "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
  (void)::send(fd, kHead, sizeof kHead - 1, MSG_NOSIGNAL);
  return fd;
}

// Keeps `count` stalled sockets open until `stop`, reopening those the server closed.
void slowloris(const std::string& host, int port, int count, std::atomic<bool>& stop, std::atomic<int>& open) {
  std::vector<int> fds;
  while (!stop) {
    for (auto it = fds.begin(); it != fds.end();) {
      char c;
      ssize_t n = ::recv(*it, &c, 1, MSG_DONTWAIT | MSG_PEEK);
      if (n == 0 || (n > 0)) {  // closed, or the 408 arrived
        ::close(*it);
        it = fds.erase(it);
      } else {
        ++it;
      }
    }
    while (static_cast<int>(fds.size()) < count) {
      int fd = slow_socket(host, port);
      if (fd < 0) break;
      fds.push_back(fd);
    }
    open = static_cast<int>(fds.size());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (int fd : fds) ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"MooreEval service load test (loopback, with authentication)"};
  std::string host = "127.0.0.1", token;
  int port = 8080, clients = 100, batch = 1, slow = 200;
  double seconds = 10;
  app.add_option("--host", host)->capture_default_str();
  app.add_option("--port", port)->required()->check(CLI::Range(1, 65535));
  app.add_option("--token", token, "API token with scope submit (default: $MOOREEVAL_TOKEN)");
  app.add_option("--clients", clients, "concurrent clients")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--seconds", seconds, "per phase")->capture_default_str()->check(CLI::Range(0.5, 300.0));
  app.add_option("--batch", batch, "jobs per request (1: POST /v1/jobs)")
      ->capture_default_str()
      ->check(CLI::Range(1, 512));
  app.add_option("--slowloris", slow, "stalled sockets in phase 3 (0: skip)")
      ->capture_default_str()
      ->check(CLI::Range(0, 10000));
  CLI11_PARSE(app, argc, argv);
  if (token.empty())
    if (const char* t = std::getenv("MOOREEVAL_TOKEN")) token = t;
  const httplib::Headers auth = {{"Authorization", "Bearer " + token}};

  json jobs = json::array();
  for (int i = 0; i < batch; ++i)
    jobs.push_back({{"task", "elementwise/add"}, {"candidate", "load test, no code block #" + std::to_string(i)}});
  const std::string path = batch == 1 ? "/v1/jobs" : "/v1/batches";
  const std::string body = batch == 1 ? jobs[0].dump() : json{{"jobs", jobs}}.dump();

  std::mutex ids_mu;
  std::vector<std::string> ids;
  Phase submit;
  run_phase(clients, seconds, [&](int) {
    thread_local httplib::Client c(host, port);
    const auto t0 = Clock::now();
    auto r = c.Post(path.c_str(), auth, body, "application/json");
    submit.record(ms_since(t0));
    if (!r || r->status != 202) {
      if (submit.errors++ == 0)
        std::fprintf(stderr, "service_load: submission answered %d: %s\n", r ? r->status : 0,
                     r ? r->body.substr(0, 200).c_str() : "no reply");
      return;
    }
    submit.ok++;
    auto j = json::parse(r->body, nullptr, false);
    std::lock_guard<std::mutex> lock(ids_mu);
    if (batch == 1) {
      ids.push_back(j["job_id"]);
    } else {
      for (const auto& id : j["job_ids"]) ids.push_back(id);
    }
    submit.items += batch;
  });
  std::printf("submissions:  %d clients x %.1f s, %d job(s)/request: %.0f requests/s, %.0f jobs/s, p50 %.2f ms, "
              "p99 %.2f ms, %lld errors\n",
              clients, seconds, batch, submit.ok / seconds, submit.items / seconds, submit.pct(0.5), submit.pct(0.99),
              static_cast<long long>(submit.errors.load()));
  if (ids.empty()) {
    std::fprintf(stderr, "service_load: no job was accepted; is the service at %s:%d (and the token right)?\n",
                 host.c_str(), port);
    return 1;
  }

  Phase status;
  std::atomic<std::size_t> cursor{0};
  run_phase(clients, seconds, [&](int) {
    thread_local httplib::Client c(host, port);
    const std::string& id = ids[cursor++ % ids.size()];
    const auto t0 = Clock::now();
    auto r = c.Get(("/v1/jobs/" + id).c_str(), auth);
    status.record(ms_since(t0));
    (r && r->status == 200) ? status.ok++ : status.errors++;
  });
  std::printf("status reads: %d clients x %.1f s: %.0f requests/s, p50 %.2f ms, p99 %.2f ms, %lld errors\n", clients,
              seconds, status.ok / seconds, status.pct(0.5), status.pct(0.99),
              static_cast<long long>(status.errors.load()));

  Phase health;
  if (slow > 0) {
    std::atomic<bool> stop{false};
    std::atomic<int> open{0};
    std::thread attacker([&] { slowloris(host, port, slow, stop, open); });
    while (open < slow * 9 / 10) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    run_phase(1, seconds, [&](int) {
      httplib::Client c(host, port);  // a fresh connection each time, as a prober makes
      c.set_connection_timeout(5, 0);
      c.set_read_timeout(5, 0);
      const auto t0 = Clock::now();
      auto r = c.Get("/healthz");
      health.record(ms_since(t0));
      (r && r->status == 200) ? health.ok++ : health.errors++;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    });
    stop = true;
    attacker.join();
    std::printf("healthz under %d slowloris sockets: %lld probes, p50 %.2f ms, p99 %.2f ms, max %.2f ms, %lld errors\n",
                slow, static_cast<long long>(health.ok.load()), health.pct(0.5), health.pct(0.99), health.pct(1.0),
                static_cast<long long>(health.errors.load()));
  }
  return submit.errors || status.errors || health.errors ? 1 : 0;
}
