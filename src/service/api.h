// The HTTP/JSON API of the service (docs/openapi.yaml), on cpp-httplib.
//
//   POST /v1/jobs              one job                    -> 202 {job_id, state}
//   POST /v1/batches           {"jobs": [...]}            -> 202 {job_ids}
//   POST /v1/evaluate          one job + deadline_seconds -> 200 job with verdict | 504
//   POST /v1/jobs/lookup       {"job_ids": [...]}         -> 200 {jobs}
//   GET  /v1/jobs/{id}         -> job (with its verdict once done)
//   GET  /v1/jobs/{id}/log     -> the job's log
//   POST /v1/jobs/{id}/cancel, DELETE /v1/jobs/{id}       -> 200 | 404 | 409
//   GET  /v1/tasks, /healthz, /metrics
//
// Every error is a JSON body {"error": {"code", "message"}} with a 4xx/5xx status;
// handlers catch everything, so no request can take the server down.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/status.h"
#include "service/service.h"

namespace httplib {
class Server;
}

namespace musacoder::service {

struct ApiOptions {
  std::string host = "127.0.0.1";         // --listen HOST
  int port = 8080;                        // --listen PORT (0: any free port, see bind())
  int threads = 32;                       // HTTP handler threads (each sync evaluate holds one)
  std::chrono::seconds read_timeout{30};  // a client that stalls mid-request is dropped
  std::chrono::seconds keep_alive{30};    // idle keep-alive connections are closed
};

class ApiServer {
 public:
  // `service` must outlive the server.
  ApiServer(ApiOptions options, Service& service);
  ~ApiServer();

  // Binds the listening socket; returns the port (useful with port 0).
  Result<int> bind();
  // Serves until stop() (from another thread or a signal-watching thread).
  Status listen();
  void stop();

 private:
  void routes();
  ApiOptions options_;
  Service& service_;
  std::unique_ptr<httplib::Server> http_;
};

// "HOST:PORT" -> (host, port); IPv6 as "[::1]:8080". kInvalidArgument otherwise.
Result<std::pair<std::string, int>> parse_listen(const std::string& listen);

}  // namespace musacoder::service
