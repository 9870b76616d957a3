#include "service_commands.h"

#include <atomic>
#include <chrono>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "core/files.h"

#include "mooreeval/service/api.h"
#include "mooreeval/service/service.h"
#include "mooreeval/service/worker.h"

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
  std::cerr << "mooreeval: error: " << (st.message().empty() ? "unknown failure (no detail)" : st.message()) << "\n";
  return st.code() == StatusCode::kInvalidArgument || st.code() == StatusCode::kNotFound ? kExitBadInput
                                                                                         : kExitInfra;
}

// The Redis password: from a file (first line) or MOOREEVAL_REDIS_PASSWORD; never a flag
// (flags are visible to every user in the process list).
Result<std::string> redis_password(const std::string& file) {
  if (file.empty()) {
    const char* env = std::getenv("MOOREEVAL_REDIS_PASSWORD");
    return std::string(env ? env : "");
  }
  auto text = read_file(file, 4096);
  if (!text.ok()) return invalid_argument("--redis-password-file: " + text.status().message());
  std::string pw = text->substr(0, text->find('\n'));
  if (pw.empty()) return invalid_argument("--redis-password-file " + file + ": empty first line");
  return pw;
}

Result<service::TokenTable> load_tokens(const ServeCommand& cmd) {
  if (!cmd.tokens_file.empty()) return service::TokenTable::load(cmd.tokens_file);
  const char* env = std::getenv("MOOREEVAL_TOKENS");
  return service::TokenTable::parse(env ? env : "", "MOOREEVAL_TOKENS");
}

Result<service::ApiOptions> api_options(const ServeCommand& cmd, const std::pair<std::string, int>& listen) {
  service::ApiOptions ao;
  ao.http.host = listen.first;
  ao.http.port = listen.second;
  ao.http.api_threads = cmd.http_threads;
  ao.http.max_connections = cmd.max_connections;
  ao.http.header_timeout = seconds_ms(cmd.header_timeout_seconds);
  ao.http.body_timeout = seconds_ms(cmd.body_timeout_seconds);
  ao.http.max_body_bytes = cmd.max_body_bytes;
  if (cmd.auth == "none") {
    ao.auth = service::AuthMode::kNone;
  } else if (cmd.auth == "tokens") {
    auto tokens = load_tokens(cmd);
    if (!tokens.ok()) return tokens.status();
    ao.tokens = std::move(*tokens);
  } else {
    return invalid_argument("--auth '" + cmd.auth + "': expected tokens or none");
  }
  ao.allowed_hosts = cmd.allowed_hosts;
  ao.allowed_origins = cmd.allowed_origins;
  ao.rate.per_second = cmd.rate_per_second;
  ao.rate.burst = std::max(1.0, cmd.rate_burst);
  MC_RETURN_IF_ERROR(service::validate_api_options(ao));
  return ao;
}

}  // namespace

int run_token(const TokenCommand& cmd) {
  auto scope = service::parse_scope(cmd.scope);
  if (!scope.ok()) return fail(scope.status());
  // Validated by parsing the line it would add.
  const std::string token = service::new_token();
  const std::string line = service::token_table_line(cmd.name, *scope, token);
  if (auto check = service::TokenTable::parse(line, "--name"); !check.ok()) return fail(check.status());
  if (cmd.append_to.empty()) {
    std::cerr << "add this line to the token file (--tokens) or MOOREEVAL_TOKENS; it holds only the hash:\n"
              << line << "\n";
  } else {
    int fd = ::open(cmd.append_to.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    const std::string text = line + "\n";
    if (fd < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      if (fd >= 0) ::close(fd);
      return fail(invalid_argument("--append-to " + cmd.append_to + ": cannot append"));
    }
    ::close(fd);
    std::cerr << "added '" << cmd.name << "' (" << cmd.scope << ") to " << cmd.append_to << "\n";
  }
  std::cout << token << std::endl;  // shown once; the server keeps only its hash
  return kExitOk;
}

int run_serve(const ServeCommand& cmd, const LaunchCommand& launch, const eval::EvalOptions& options) {
  if (launch.reference_impl != "torch")
    return fail(
        invalid_argument("--reference-impl '" + launch.reference_impl + "' is not supported (torch)"));
  auto listen = service::parse_listen(cmd.listen);
  if (!listen.ok()) return fail(listen.status());
  auto ao = api_options(cmd, *listen);
  if (!ao.ok()) return fail(ao.status());
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
  so.quotas.max_unfinished_per_owner = cmd.max_unfinished_per_token;
  so.quotas.max_unfinished = cmd.max_unfinished;
  so.retention.max_age = std::chrono::seconds(static_cast<int64_t>(cmd.retention_days * 86400));
  so.retention.max_store_bytes = static_cast<int64_t>(cmd.max_store_mb * 1024 * 1024);
  so.retention.interval = seconds_ms(cmd.retention_interval_seconds);
  so.queue_url = cmd.queue;
  so.redis.prefix = cmd.queue_prefix;
  so.redis.user = cmd.redis_user;
  if (auto pw = redis_password(cmd.redis_password_file); pw.ok()) {
    so.redis.password = *pw;
  } else {
    return fail(pw.status());
  }
  so.redis.visibility_timeout = seconds_ms(cmd.visibility_timeout_seconds);
  so.workers.threads = launch.workers;
  so.workers.max_deliveries = cmd.max_deliveries;
  so.workers.keep_alive_interval = std::max(milliseconds(100), so.redis.visibility_timeout / 4);

  install_stop_handlers();
  service::Service svc(so, evaluator);
  if (auto st = svc.start(); !st.ok()) return fail(st);

  service::ApiServer api(*ao, svc);
  auto port = api.bind();
  if (!port.ok()) {
    svc.stop();
    return fail(port.status());
  }
  if (ao->auth == service::AuthMode::kNone)
    std::cerr << "mooreeval serve: WARNING: --auth none: no authentication; every local user and process can "
                 "submit code, read and cancel every job (loopback only)"
              << std::endl;
  else
    std::cerr << "mooreeval serve: " << ao->tokens.size() << " API token(s) loaded" << std::endl;
  std::cerr << "mooreeval serve: listening on " << ao->http.host << ":" << *port << " (queue "
            << (cmd.queue.empty() ? "in-process" : cmd.queue) << ", " << launch.workers
            << " local worker(s), " << so.workers.max_deliveries << " max deliveries, db " << cmd.db.string()
            << ", " << svc.catalog().size() << " tasks, backend " << build::backend_name(options.backend)
            << ", auth " << cmd.auth << ")" << std::endl;

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
  ro.user = cmd.redis_user;
  if (auto pw = redis_password(cmd.redis_password_file); pw.ok()) {
    ro.password = *pw;
  } else {
    return fail(pw.status());
  }
  if (auto ep = service::parse_redis_url(cmd.queue); !ep.ok()) return fail(ep.status());
  auto catalog = service::load_catalog(cmd.tasks_dir);
  if (!catalog.ok()) return fail(catalog.status());
  // Redis (and its credentials) first: a wrong password fails in milliseconds, not after
  // the evaluator's start-up.
  if (auto probe = service::open_redis_source(ro, "startup-check"); !probe.ok()) return fail(probe.status());
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
