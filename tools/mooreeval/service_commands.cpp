#include "service_commands.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

#include "service/api.h"
#include "service/service.h"
#include "service/worker.h"

namespace musacoder::tools {

namespace {

using std::chrono::milliseconds;

// Set by the signal handler; a signal handler can only reach static storage, so this one
// flag is the exception to "no globals" (async-signal-safe by type).
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int sig) {
  g_stop_signal = sig;
}

void install_stop_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the server
}

milliseconds seconds_ms(double s) {
  return milliseconds(static_cast<long>(s * 1000));
}

int fail(const Status& st) {
  std::cerr << "mooreeval: error: " << st.message() << "\n";
  return st.code() == StatusCode::kInvalidArgument || st.code() == StatusCode::kNotFound ? kExitBadInput
                                                                                         : kExitInfra;
}

}  // namespace

int run_serve(const ServeCommand& cmd, const LaunchCommand& launch, const eval::EvalOptions& options) {
  if (launch.reference_impl != "torch")
    return fail(
        invalid_argument("--reference-impl '" + launch.reference_impl + "' is not supported (torch)"));
  auto listen = service::parse_listen(cmd.listen);
  if (!listen.ok()) return fail(listen.status());
  if (cmd.max_deliveries < 1) return fail(invalid_argument("--max-deliveries must be at least 1"));
  if (launch.workers < 1 && cmd.queue.empty())
    return fail(invalid_argument("--workers 0 needs --queue (someone has to evaluate)"));
  if (!cmd.queue.empty()) {
    if (auto ep = service::parse_redis_url(cmd.queue); !ep.ok()) return fail(ep.status());
  }

  eval::EvalOptions serve_options = options;
  serve_options.workers = std::max(1, launch.workers);
  eval::Evaluator evaluator(serve_options);
  if (launch.workers > 0) {
    if (auto st = evaluator.prepare(); !st.ok()) return fail(st);
  }

  service::ServiceOptions so;
  so.tasks_dir = launch.tasks_dir;
  so.store.path = cmd.db;
  so.limits.max_batch_jobs = cmd.max_batch_jobs;
  so.limits.max_body_bytes = cmd.max_body_bytes;
  so.limits.max_candidate_bytes = options.max_submission_bytes;
  so.limits.default_deadline_seconds = cmd.default_deadline_seconds;
  so.queue_url = cmd.queue;
  so.redis.prefix = cmd.queue_prefix;
  so.redis.visibility_timeout = seconds_ms(cmd.visibility_timeout_seconds);
  so.workers.threads = launch.workers;
  so.workers.max_deliveries = cmd.max_deliveries;
  so.workers.keep_alive_interval = std::max(milliseconds(100), so.redis.visibility_timeout / 4);

  install_stop_handlers();
  service::Service svc(so, evaluator);
  if (auto st = svc.start(); !st.ok()) return fail(st);

  service::ApiOptions ao;
  ao.host = listen->first;
  ao.port = listen->second;
  ao.threads = cmd.http_threads;
  service::ApiServer api(ao, svc);
  auto port = api.bind();
  if (!port.ok()) {
    svc.stop();
    return fail(port.status());
  }
  std::cerr << "mooreeval serve: listening on " << ao.host << ":" << *port << " (queue "
            << (cmd.queue.empty() ? "in-process" : cmd.queue) << ", " << launch.workers
            << " local worker(s), " << so.workers.max_deliveries << " max deliveries, db " << cmd.db.string()
            << ", " << svc.catalog().size() << " tasks, backend " << build::backend_name(options.backend)
            << ")" << std::endl;

  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done && !g_stop_signal) std::this_thread::sleep_for(milliseconds(100));
    api.stop();
  });
  Status served = api.listen();
  done = true;
  watcher.join();
  std::cerr << "mooreeval serve: shutting down (finishing evaluations in progress)" << std::endl;
  svc.stop();
  if (!served.ok() && !g_stop_signal) return fail(served);
  return kExitOk;
}

int run_worker(const WorkerCommand& cmd, const eval::EvalOptions& options) {
  if (cmd.max_deliveries < 1) return fail(invalid_argument("--max-deliveries must be at least 1"));
  service::RedisQueueOptions ro;
  ro.url = cmd.queue;
  ro.prefix = cmd.queue_prefix;
  ro.visibility_timeout = seconds_ms(cmd.visibility_timeout_seconds);
  if (auto ep = service::parse_redis_url(cmd.queue); !ep.ok()) return fail(ep.status());
  auto catalog = service::load_catalog(cmd.tasks_dir);
  if (!catalog.ok()) return fail(catalog.status());
  eval::EvalOptions worker_options = options;
  worker_options.workers = cmd.threads;
  eval::Evaluator evaluator(worker_options);
  if (auto st = evaluator.prepare(); !st.ok()) return fail(st);

  service::WorkerOptions wo;
  wo.threads = cmd.threads;
  wo.name = cmd.name;
  wo.max_deliveries = cmd.max_deliveries;
  wo.keep_alive_interval = cmd.keep_alive_seconds > 0
                               ? seconds_ms(cmd.keep_alive_seconds)
                               : std::max(milliseconds(100), ro.visibility_timeout / 4);
  install_stop_handlers();
  service::WorkerPool pool(wo, evaluator, *catalog, [&ro](const std::string& consumer) {
    return service::open_redis_source(ro, consumer);
  });
  if (auto st = pool.start(); !st.ok()) return fail(st);
  std::cerr << "mooreeval worker: " << pool.name() << " pulling from " << cmd.queue << " with " << cmd.threads
            << " thread(s), visibility timeout " << cmd.visibility_timeout_seconds << " s, backend "
            << build::backend_name(options.backend) << std::endl;
  while (!g_stop_signal) std::this_thread::sleep_for(milliseconds(100));
  std::cerr << "mooreeval worker: stopping after the evaluations in progress (" << pool.evaluated()
            << " evaluated)" << std::endl;
  pool.stop();
  return kExitOk;
}

}  // namespace musacoder::tools
