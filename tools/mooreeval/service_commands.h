// `mooreeval serve` (also `launch --listen`) and `mooreeval worker`: the service and the
// fleet worker (src/service/, docs/service.md). Exit codes as in commands.h: 0 after a
// clean shutdown (SIGINT/SIGTERM), 2 bad flags, 3 infrastructure (port in use, Redis or
// database unreachable at start).
#pragma once

#include <filesystem>
#include <string>

#include "commands.h"
#include "eval/evaluator.h"

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
};

// Serves until SIGINT/SIGTERM. `launch` holds the launcher flags (suite, workers).
int run_serve(const ServeCommand& cmd, const LaunchCommand& launch, const eval::EvalOptions& options);
int run_worker(const WorkerCommand& cmd, const eval::EvalOptions& options);

}  // namespace musacoder::tools
