// `mooreeval serve` (also `launch --listen`) and `mooreeval worker`: the service and the
// fleet worker (src/mooreeval/service/, docs/service.md). Exit codes as in commands.h: 0 after a
// clean shutdown (SIGINT/SIGTERM), 2 bad flags, 3 infrastructure (port in use, Redis or
// database unreachable at start).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "commands.h"
#include "mooreeval/pipeline/evaluator.h"

namespace musacoder::tools {

struct ServeCommand {
  std::string listen = "127.0.0.1:8080";               // --listen HOST:PORT (PORT 0: any free port, printed)
  std::filesystem::path db = "mooreeval.db";           // --db: SQLite results, jobs and job log
  std::string queue;                                   // --queue redis://HOST:PORT; empty: in-process
  std::string queue_prefix = "mooreeval";              // --queue-prefix: Redis key/group names
  double visibility_timeout_seconds = 60;              // --visibility-timeout (Redis reclaim)
  int max_deliveries = 3;                              // --max-deliveries (then infra_error)
  int http_threads = 32;                               // --http-threads
  std::size_t max_batch_jobs = 512;                    // --max-batch
  std::size_t max_body_bytes = std::size_t{64} << 20;  // --max-body-bytes
  double default_deadline_seconds = 300;               // --default-deadline (POST /v1/evaluate)

  // Who may call (docs/security.md).
  std::string auth = "tokens";                // --auth tokens | none (none: loopback only)
  std::string tokens_file;                    // --tokens FILE; else MOOREEVAL_TOKENS
  std::vector<std::string> allowed_hosts;     // --allowed-host NAME (repeatable)
  std::vector<std::string> allowed_origins;   // --allowed-origin ORIGIN (repeatable)
  std::string redis_user;                     // --redis-user
  std::string redis_password_file;            // --redis-password-file; else MOOREEVAL_REDIS_PASSWORD

  // Abuse limits.
  int max_connections = 1024;                 // --max-connections
  double header_timeout_seconds = 10;         // --header-timeout
  double body_timeout_seconds = 60;           // --body-timeout
  double rate_per_second = 20;                // --rate-limit (submissions/s per token name; 0: off)
  double rate_burst = 40;                     // --rate-burst
  int64_t max_unfinished_per_token = 10000;   // --max-unfinished-per-token
  int64_t max_unfinished = 200000;            // --max-unfinished

  // Retention.
  double retention_days = 7;                  // --retention-days (finished jobs, verdicts, logs)
  double max_store_mb = 4096;                 // --max-store-mb (SQLite store size bound)
  double retention_interval_seconds = 60;     // --retention-interval
};

// `mooreeval token`: a new API token, printed once; its table line goes to a file.
struct TokenCommand {
  std::string name;        // --name
  std::string scope = "submit";  // --scope read | submit | admin
  std::string append_to;   // --append-to FILE: append the table line (created 0600)
};

struct WorkerCommand {
  std::string queue;                       // --queue redis://HOST:PORT (required)
  std::string queue_prefix = "mooreeval";  // --queue-prefix
  std::string name;                        // --name (default host:pid)
  std::filesystem::path tasks_dir;         // --tasks
  int threads = 1;                         // --workers: concurrent evaluations
  double visibility_timeout_seconds = 60;  // --visibility-timeout
  int max_deliveries = 3;                  // --max-deliveries
  double keep_alive_seconds = 0;           // --keep-alive-seconds (0: visibility / 4)
  std::string redis_user;                  // --redis-user
  std::string redis_password_file;         // --redis-password-file; else MOOREEVAL_REDIS_PASSWORD
};

// Serves until SIGINT/SIGTERM. `launch` holds the launcher flags (suite, workers).
int run_serve(const ServeCommand& cmd, const LaunchCommand& launch, const eval::EvalOptions& options);
int run_worker(const WorkerCommand& cmd, const eval::EvalOptions& options);
int run_token(const TokenCommand& cmd);

}  // namespace musacoder::tools
