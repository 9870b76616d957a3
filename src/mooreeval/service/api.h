// The HTTP/JSON API of the service (docs/openapi.yaml) on the HttpServer front end
// (http_server.h); cpp-httplib parses and routes each complete request.
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
// Before a body is read (admit): the Host must be an IP literal, localhost or an allowed
// name (DNS rebinding); an Origin header must be an allowed origin (no cross-site use from
// a browser); bodies must be application/json (415); the bearer token must be known and
// its scope enough (401/403, auth.h); submissions are rate limited per token name (429).
// Jobs belong to their token's name: another name's job is 404 unless the caller is admin.
// Submissions honour an Idempotency-Key header (a repeat returns the original job ids).
//
// Every error is a JSON body {"error": {"code", "message"}} with a 4xx/5xx status;
// handlers catch everything, so no request can take the server down.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "mooreeval/service/auth.h"
#include "mooreeval/service/http_server.h"
#include "mooreeval/service/rate_limit.h"
#include "mooreeval/service/service.h"

namespace musacoder::service {

enum class AuthMode { kTokens, kNone };

struct ApiOptions {
  HttpServerOptions http;                    // listen address, connection cap, deadlines, lanes
  AuthMode auth = AuthMode::kTokens;         // kNone: every caller is admin "anonymous" (loopback only)
  TokenTable tokens;                         // --tokens / MOOREEVAL_TOKENS
  std::vector<std::string> allowed_hosts;    // Host names accepted besides IP literals and localhost
  std::vector<std::string> allowed_origins;  // Origin values accepted (default none: no browsers)
  RateLimitOptions rate;                     // per token name, on submitting routes
};

// kInvalidArgument when the options are unsafe: --auth none off loopback, or no tokens.
Status validate_api_options(const ApiOptions& options);

class EvaluateWaiters;
class Router;

class ApiServer final : public HttpHandler {
 public:
  // `service` must outlive the server.
  ApiServer(ApiOptions options, Service& service);
  ~ApiServer() override;

  // Binds the listening socket; returns the port (useful with port 0).
  Result<int> bind();
  // Serves until stop() (from another thread or a signal-watching thread).
  Status listen();
  void stop();

  std::optional<HttpReply> admit(const RequestHead& head, RequestContext& ctx) override;
  std::optional<std::string> serve(const std::string& request, const RequestHead& head,
                                   RequestContext& ctx) override;

 private:
  void routes();
  std::optional<HttpReply> check_origin(const RequestHead& head) const;

  ApiOptions options_;
  Service& service_;
  RateLimiter limiter_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<EvaluateWaiters> waiters_;
};

// "HOST:PORT" -> (host, port); IPv6 as "[::1]:8080". kInvalidArgument otherwise.
Result<std::pair<std::string, int>> parse_listen(const std::string& listen);

}  // namespace musacoder::service
