#include "mooreeval/service/api.h"

#include <arpa/inet.h>
#include <httplib.h>

#include <charconv>
#include <cmath>
#include <iostream>

#include "core/text.h"
#include "mooreeval/service/evaluate_waiters.h"

namespace musacoder::service {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// ---- routes ---------------------------------------------------------------------------

constexpr int kPublic = -1;  // no token needed

struct RouteSpec {
  const char* pattern;  // "{id}" matches a job id
  const char* methods;  // allowed, comma separated (the Allow header of a 405)
  int scope;            // kPublic or a Scope
  bool priority;        // served on the priority lane
  bool rate_limited;    // counts against the caller's rate limit
};

constexpr RouteSpec kRoutes[] = {
    {"/healthz", "GET", kPublic, true, false},
    {"/metrics", "GET", static_cast<int>(Scope::kRead), true, false},
    {"/v1/tasks", "GET", static_cast<int>(Scope::kRead), false, false},
    {"/v1/jobs", "POST", static_cast<int>(Scope::kSubmit), false, true},
    {"/v1/batches", "POST", static_cast<int>(Scope::kSubmit), false, true},
    {"/v1/evaluate", "POST", static_cast<int>(Scope::kSubmit), false, true},
    {"/v1/jobs/lookup", "POST", static_cast<int>(Scope::kRead), false, false},
    {"/v1/jobs/{id}", "GET, DELETE", static_cast<int>(Scope::kRead), false, false},
    {"/v1/jobs/{id}/log", "GET", static_cast<int>(Scope::kRead), false, false},
    {"/v1/jobs/{id}/cancel", "POST", static_cast<int>(Scope::kSubmit), false, false},
};

bool matches(std::string_view pattern, std::string_view path) {
  while (!pattern.empty() || !path.empty()) {
    auto ps = pattern.find('/', 1), ts = path.find('/', 1);
    std::string_view p = pattern.substr(0, ps), t = path.substr(0, ts);
    if (p == "/{id}" ? !is_job_id(std::string(t.substr(std::min<std::size_t>(1, t.size())))) : p != t)
      return false;
    pattern = ps == std::string_view::npos ? "" : pattern.substr(ps);
    path = ts == std::string_view::npos ? "" : path.substr(ts);
  }
  return true;
}

const RouteSpec* find_route(std::string_view path) {
  for (const auto& r : kRoutes)
    if (matches(r.pattern, path)) return &r;
  return nullptr;
}

bool method_allowed(const RouteSpec& r, const std::string& method) {
  std::string_view m = r.methods;
  for (std::size_t pos = 0; pos < m.size();) {
    auto comma = m.find(',', pos);
    std::string_view one = m.substr(pos, comma - pos);
    while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
    if (one == method) return true;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return false;
}

// ---- replies --------------------------------------------------------------------------

std::string dump(const json& j) {
  // error_handler_t::replace: a label or message can never make dump() throw.
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

HttpReply error_reply(const ApiError& e) {
  return {e.http_status, dump(e.to_json()), "application/json", {}};
}

HttpReply with_header(HttpReply r, std::string name, std::string value) {
  r.headers.emplace_back(std::move(name), std::move(value));
  return r;
}

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  send_json(res, e.http_status, e.to_json());
}

void send_status(httplib::Response& res, const Status& st) {
  int http = 500;
  std::string code = "internal";
  switch (st.code()) {
    case StatusCode::kInvalidArgument:
      http = 400, code = "invalid_request";
      break;
    case StatusCode::kNotFound:
      http = 404, code = "not_found";
      break;
    case StatusCode::kUnavailable:
      http = 503, code = "unavailable";
      break;
    case StatusCode::kDeadlineExceeded:
      http = 504, code = "deadline_exceeded";
      break;
    default:
      break;
  }
  send_error(res, {http, code, st.message().empty() ? code : st.message()});
}

// ---- per-request context (set by ApiServer::serve for the handler it runs) ------------

// The handlers run inside httplib's routing on the serving thread; this is how they see
// the request's caller and how /v1/evaluate hands its connection to the waiters.
thread_local RequestContext* t_ctx = nullptr;
thread_local bool t_deferred = false;

const Principal& caller() {
  return *t_ctx->principal;
}

bool visible(const JobRecord& r) {
  return caller().can(Scope::kAdmin) || r.owner == caller().name;
}

// The Idempotency-Key of a submitting request; an ApiError when malformed.
Parsed<std::optional<IdempotencyKey>> idempotency_key(const httplib::Request& req) {
  using P = Parsed<std::optional<IdempotencyKey>>;
  if (!req.has_header("Idempotency-Key")) return {std::optional<IdempotencyKey>(), {}};
  const std::string k = req.get_header_value("Idempotency-Key");
  bool printable = !k.empty() && k.size() <= 128;
  for (char c : k) printable &= c > 0x20 && c < 0x7f;
  if (!printable)
    return P::fail(400, "invalid_request", "Idempotency-Key must be 1-128 printable ASCII characters");
  return {std::optional<IdempotencyKey>(IdempotencyKey{k, sha256_hex(req.method + "\n" + req.path + "\n" + req.body)}),
          {}};
}

// Sends a submission's refusal (429/507/422) with its Retry-After; true when refused.
bool send_refusal(httplib::Response& res, const SubmitOutcome& out) {
  if (!out.refused) return false;
  send_error(res, *out.refused);
  if (out.retry_after_seconds > 0) res.set_header("Retry-After", std::to_string(out.retry_after_seconds));
  return true;
}

}  // namespace

// ---- the router: cpp-httplib's request parser and routing on a buffered request --------

// A complete request in memory in, the response bytes out.
class BufferStream final : public httplib::Stream {
 public:
  BufferStream(const std::string& in, const std::string& peer) : in_(in), peer_(peer) {}
  bool is_readable() const override { return pos_ < in_.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, in_.size() - pos_);
    std::memcpy(ptr, in_.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    out_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = peer_;
    port = 0;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "";
    port = 0;
  }
  socket_t socket() const override { return INVALID_SOCKET; }
  std::string& output() { return out_; }

 private:
  const std::string& in_;
  const std::string& peer_;
  std::size_t pos_ = 0;
  std::string out_;
};

class Router final : public httplib::Server {
 public:
  std::string run(const std::string& request, const RequestContext& ctx, bool close) {
    BufferStream stream(request, ctx.peer_ip);
    bool connection_closed = false;
    process_request(stream, close, connection_closed, nullptr);
    return std::move(stream.output());
  }
};

// ---- options --------------------------------------------------------------------------

Status validate_api_options(const ApiOptions& o) {
  if (o.auth == AuthMode::kNone) {
    if (!is_loopback_host(o.http.host))
      return invalid_argument("--auth none is allowed only on a loopback address (127.0.0.1, ::1, localhost), not " +
                              o.http.host + "; give the service tokens (--tokens, docs/security.md)");
    return {};
  }
  if (o.tokens.size() == 0)
    return invalid_argument(
        "no API tokens: give --tokens FILE or MOOREEVAL_TOKENS (lines '<name> <scope> <sha256>', made by "
        "`mooreeval token`), or --auth none on a loopback address");
  return {};
}

// ---- the server -----------------------------------------------------------------------

ApiServer::ApiServer(ApiOptions options, Service& service)
    : options_(std::move(options)),
      service_(service),
      limiter_(options_.rate),
      router_(std::make_unique<Router>()) {
  options_.http.max_body_bytes = std::min(options_.http.max_body_bytes, service_.options().limits.max_body_bytes);
  http_ = std::make_unique<HttpServer>(options_.http, *this);
  waiters_ = std::make_unique<EvaluateWaiters>(service_, *http_);
  service_.set_finish_listener([w = waiters_.get()](const std::string& id) { w->finished(id); });
  router_->set_payload_max_length(options_.http.max_body_bytes);
  router_->set_keep_alive_max_count(1000000);
  router_->set_keep_alive_timeout(options_.http.idle_timeout.count() / 1000);
  routes();
}

ApiServer::~ApiServer() {
  stop();
  service_.set_finish_listener(nullptr);
  waiters_.reset();
}

Result<int> ApiServer::bind() {
  return http_->bind();
}

Status ApiServer::listen() {
  return http_->run();
}

void ApiServer::stop() {
  http_->stop();
}

std::optional<HttpReply> ApiServer::check_origin(const RequestHead& head) const {
  const std::string* host = head.field("host");
  if (!host) return error_reply({400, "invalid_request", "missing Host header"});
  const std::string name = host_without_port(*host);
  in6_addr a6{};
  in_addr a4{};
  const bool ip_literal =
      ::inet_pton(AF_INET, name.c_str(), &a4) == 1 || ::inet_pton(AF_INET6, name.c_str(), &a6) == 1;
  const auto& hosts = options_.allowed_hosts;
  if (!ip_literal && name != "localhost" && std::find(hosts.begin(), hosts.end(), name) == hosts.end())
    return error_reply({403, "forbidden",
                        "Host '" + sanitize_utf8(name.substr(0, 100)) +
                            "' is not served here (DNS rebinding protection); the operator can allow it with "
                            "--allowed-host"});
  if (const std::string* origin = head.field("origin")) {
    const auto& origins = options_.allowed_origins;
    if (std::find(origins.begin(), origins.end(), *origin) == origins.end())
      return error_reply({403, "forbidden",
                          "cross-origin requests are refused (Origin '" + sanitize_utf8(origin->substr(0, 100)) +
                              "'); the operator can allow an origin with --allowed-origin"});
  }
  return std::nullopt;
}

std::optional<HttpReply> ApiServer::admit(const RequestHead& head, RequestContext& ctx) {
  auto refuse = [&](HttpReply r) {
    service_.metrics().record_request(ctx.route.empty() ? "other" : ctx.route, r.status, 0);
    return std::optional<HttpReply>(std::move(r));
  };
  const RouteSpec* route = find_route(head.path);
  if (route) ctx.route = route->pattern;
  if (auto bad = check_origin(head)) return refuse(std::move(*bad));
  if (!route) return refuse(error_reply({404, "not_found", "no route " + head.method + " " + sanitize_utf8(head.path.substr(0, 200))}));
  ctx.priority = route->priority;
  if (!method_allowed(*route, head.method))
    return refuse(with_header(error_reply({405, "method_not_allowed",
                                           head.method + " is not allowed on " + route->pattern +
                                               " (allowed: " + route->methods + ")"}),
                              "Allow", route->methods));
  const std::string* type = head.field("content-type");
  if ((head.content_length > 0 || type) && head.method != "GET" && (!type || media_type(*type) != "application/json"))
    return refuse(error_reply({415, "unsupported_media_type",
                               "request bodies must be application/json, not '" +
                                   sanitize_utf8(type ? type->substr(0, 100) : std::string("(none)")) + "'"}));
  if (options_.auth == AuthMode::kNone) {
    ctx.principal = Principal{"anonymous", Scope::kAdmin};
  } else if (route->scope != kPublic) {
    const std::string* auth = head.field("authorization");
    ctx.principal = options_.tokens.authenticate(auth ? bearer_token(*auth) : "");
    if (!ctx.principal)
      return refuse(with_header(error_reply({401, "unauthorized",
                                             auth ? "unknown API token" : "missing 'Authorization: Bearer <token>'"}),
                                "WWW-Authenticate", "Bearer realm=\"mooreeval\""));
    if (!ctx.principal->can(static_cast<Scope>(route->scope)))
      return refuse(error_reply({403, "forbidden",
                                 "token '" + ctx.principal->name + "' has scope " + scope_name(ctx.principal->scope) +
                                     "; " + head.method + " " + route->pattern + " needs " +
                                     scope_name(static_cast<Scope>(route->scope))}));
  }
  // Admin tokens (operators' tools) are exempt from per-name limits; quotas of everyone
  // together still apply to them.
  if (route->rate_limited && ctx.principal && !ctx.principal->can(Scope::kAdmin)) {
    if (double wait = limiter_.take(ctx.principal->name); wait > 0)
      return refuse(with_header(error_reply({429, "rate_limited",
                                             "too many submissions from '" + ctx.principal->name +
                                                 "'; retry after the Retry-After seconds"}),
                                "Retry-After", std::to_string(static_cast<int>(std::ceil(wait)))));
  }
  return std::nullopt;
}

std::optional<std::string> ApiServer::serve(const std::string& request, const RequestHead& head,
                                            RequestContext& ctx) {
  t_ctx = &ctx;
  t_deferred = false;
  std::string out = router_->run(request, ctx, head.close);
  t_ctx = nullptr;
  if (t_deferred) return std::nullopt;
  return out;
}

void ApiServer::routes() {
  Service& svc = service_;
  const ServiceLimits& limits = svc.options().limits;
  auto known = [&svc](const std::string& id) { return svc.has_task(id); };

  // Times each request, records it by route and turns any exception into a 500.
  auto wrap = [&svc](std::string route, httplib::Server::Handler handler) {
    return [&svc, route = std::move(route), handler = std::move(handler)](const httplib::Request& req,
                                                                          httplib::Response& res) {
      try {
        handler(req, res);
      } catch (const std::exception& e) {
        send_error(res, {500, "internal", std::string("internal error: ") + e.what()});
      } catch (...) {
        send_error(res, {500, "internal", "internal error"});
      }
      if (!t_deferred)
        svc.metrics().record_request(
            route, res.status, std::chrono::duration<double>(Clock::now() - t_ctx->received).count());
    };
  };

  router_->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // a handler's own JSON error
    std::string message = res.status == 404   ? "no route " + req.method + " " + req.path
                          : res.status == 413 ? "request body exceeds the server's limit"
                                              : "request rejected (HTTP " + std::to_string(res.status) + ")";
    send_error(res, {res.status, res.status == 413 ? "too_large" : res.status == 404 ? "not_found" : "invalid_request",
                     message});
  });
  router_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    send_error(res, {500, "internal", "internal error"});
  });

  router_->Get("/healthz", wrap("/healthz", [&svc](const httplib::Request&, httplib::Response& res) {
                 bool healthy = false;
                 json h = svc.health(healthy);
                 send_json(res, healthy ? 200 : 503, h);
               }));
  HttpServer* http = http_.get();
  router_->Get("/metrics", wrap("/metrics", [&svc, http](const httplib::Request&, httplib::Response& res) {
                 const HttpServerStats s = http->stats();
                 std::string text = svc.metrics_text();
                 text += "# TYPE mooreeval_http_connections gauge\nmooreeval_http_connections " +
                         std::to_string(s.open_connections) + "\n";
                 text += "# TYPE mooreeval_http_evicted_total counter\nmooreeval_http_evicted_total " +
                         std::to_string(s.evicted) + "\n";
                 text += "# TYPE mooreeval_http_timeouts_total counter\nmooreeval_http_timeouts_total " +
                         std::to_string(s.timed_out) + "\n";
                 text += "# TYPE mooreeval_http_refused_total counter\nmooreeval_http_refused_total " +
                         std::to_string(s.rejected) + "\n";
                 res.set_content(text, "text/plain; version=0.0.4");
               }));
  router_->Get("/v1/tasks", wrap("/v1/tasks", [&svc](const httplib::Request&, httplib::Response& res) {
                 json tasks = json::array();
                 for (const auto& [id, t] : svc.catalog())
                   tasks.push_back(
                       {{"id", id}, {"difficulty", t.difficulty}, {"trials", t.trials}, {"dtype", t.dtype}});
                 send_json(res, 200, {{"tasks", tasks}});
               }));

  router_->Post(
      "/v1/jobs",
      wrap("/v1/jobs", [&svc, &limits, known](const httplib::Request& req, httplib::Response& res) {
        auto body = parse_body(req.body, limits);
        if (!body.ok()) return send_error(res, body.error);
        auto job = parse_job(*body.value, limits, known);
        if (!job.ok()) return send_error(res, job.error);
        if (body.value->contains("deadline_seconds") || body.value->contains("cancel_on_deadline"))
          return send_error(res, {400, "invalid_request", "deadlines apply to POST /v1/evaluate only"});
        auto key = idempotency_key(req);
        if (!key.ok()) return send_error(res, key.error);
        auto out = svc.submit({*job.value}, caller().name, *key.value, !caller().can(Scope::kAdmin));
        if (!out.ok()) return send_status(res, out.status());
        if (send_refusal(res, *out)) return;
        res.set_header("Location", "/v1/jobs/" + out->job_ids.front());
        send_json(res, 202, {{"job_id", out->job_ids.front()}, {"state", "queued"}, {"replayed", out->replayed}});
      }));

  router_->Post("/v1/batches", wrap("/v1/batches", [&svc, &limits, known](const httplib::Request& req,
                                                                          httplib::Response& res) {
                  auto body = parse_body(req.body, limits);
                  if (!body.ok()) return send_error(res, body.error);
                  auto jobs = parse_batch(*body.value, limits, known);
                  if (!jobs.ok()) return send_error(res, jobs.error);
                  auto key = idempotency_key(req);
                  if (!key.ok()) return send_error(res, key.error);
                  auto out = svc.submit(*jobs.value, caller().name, *key.value, !caller().can(Scope::kAdmin));
                  if (!out.ok()) return send_status(res, out.status());
                  if (send_refusal(res, *out)) return;
                  send_json(res, 202, {{"job_ids", out->job_ids}, {"replayed", out->replayed}});
                }));

  EvaluateWaiters* waiters = waiters_.get();
  router_->Post("/v1/evaluate", wrap("/v1/evaluate", [&svc, &limits, known, waiters](const httplib::Request& req,
                                                                                      httplib::Response& res) {
                  auto body = parse_body(req.body, limits);
                  if (!body.ok()) return send_error(res, body.error);
                  auto ev = parse_evaluate(*body.value, limits, known);
                  if (!ev.ok()) return send_error(res, ev.error);
                  auto key = idempotency_key(req);
                  if (!key.ok()) return send_error(res, key.error);
                  auto out = svc.submit({ev.value->job}, caller().name, *key.value, !caller().can(Scope::kAdmin));
                  if (!out.ok()) return send_status(res, out.status());
                  if (send_refusal(res, *out)) return;
                  // The answer comes from the waiters when the job finishes or the deadline
                  // passes; this thread goes back to its lane now.
                  EvaluateWaiter w;
                  w.conn = t_ctx->conn;
                  w.job_id = out->job_ids.front();
                  w.deadline_seconds = ev.value->deadline_seconds;
                  w.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(w.deadline_seconds));
                  w.cancel_on_deadline = ev.value->cancel_on_deadline;
                  w.close = req.get_header_value("Connection") == "close";
                  w.received = t_ctx->received;
                  t_deferred = true;
                  waiters->add(std::move(w));
                }));

  router_->Post("/v1/jobs/lookup",
                wrap("/v1/jobs/lookup", [&svc, &limits](const httplib::Request& req, httplib::Response& res) {
                  auto body = parse_body(req.body, limits);
                  if (!body.ok()) return send_error(res, body.error);
                  auto ids = parse_lookup(*body.value, limits);
                  if (!ids.ok()) return send_error(res, ids.error);
                  json jobs = json::array();
                  for (const auto& id : *ids.value) {
                    auto r = svc.job(id);
                    if (!r.ok()) return send_status(res, r.status());
                    const bool mine = *r && visible(**r);
                    jobs.push_back(mine ? job_json(**r) : json{{"job_id", id}, {"state", "unknown"}});
                  }
                  send_json(res, 200, {{"jobs", jobs}});
                }));

  const std::string id_re = "/v1/jobs/([0-9a-f]{32})";
  router_->Get(id_re, wrap("/v1/jobs/{id}", [&svc](const httplib::Request& req, httplib::Response& res) {
                 auto r = svc.job(req.matches[1]);
                 if (!r.ok()) return send_status(res, r.status());
                 if (!*r || !visible(**r))
                   return send_error(res, {404, "not_found", "no job " + std::string(req.matches[1])});
                 send_json(res, 200, job_json(**r));
               }));
  router_->Get(id_re + "/log",
               wrap("/v1/jobs/{id}/log", [&svc](const httplib::Request& req, httplib::Response& res) {
                 const std::string id = req.matches[1];
                 auto r = svc.job(id, false);
                 if (!r.ok()) return send_status(res, r.status());
                 if (!*r || !visible(**r)) return send_error(res, {404, "not_found", "no job " + id});
                 auto log = svc.log(id);
                 if (!log.ok()) return send_status(res, log.status());
                 json events = json::array();
                 for (const auto& e : *log)
                   events.push_back({{"at", e.at}, {"event", e.event}, {"detail", e.detail}});
                 send_json(res, 200, {{"job_id", id}, {"log", events}});
               }));
  auto cancel = [&svc](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    if (!caller().can(Scope::kSubmit)) return send_error(res, {403, "forbidden", "cancelling needs scope submit"});
    auto r = svc.job(id, false);
    if (!r.ok()) return send_status(res, r.status());
    if (!*r || !visible(**r)) return send_error(res, {404, "not_found", "no job " + id});
    auto c = svc.cancel(id);
    if (!c.ok()) return send_status(res, c.status());
    switch (*c) {
      case CancelOutcome::kCancelled:
      case CancelOutcome::kAlreadyCancelled:
        return send_json(res, 200, {{"job_id", id}, {"state", "cancelled"}});
      case CancelOutcome::kAlreadyDone:
        return send_error(res, {409, "conflict", "job " + id + " is already done; its result stands"});
      case CancelOutcome::kUnknownJob:
        return send_error(res, {404, "not_found", "no job " + id});
    }
  };
  router_->Post(id_re + "/cancel", wrap("/v1/jobs/{id}/cancel", cancel));
  router_->Delete(id_re, wrap("/v1/jobs/{id}", cancel));
}

Result<std::pair<std::string, int>> parse_listen(const std::string& listen) {
  auto bad = [&] {
    return invalid_argument("--listen '" + listen + "': expected HOST:PORT (e.g. 127.0.0.1:8080)");
  };
  std::string host, port;
  if (!listen.empty() && listen[0] == '[') {
    auto close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') return bad();
    host = listen.substr(1, close - 1);
    port = listen.substr(close + 2);
  } else {
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) return bad();
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
  }
  int p = -1;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (host.empty() || ec != std::errc() || ptr != port.data() + port.size() || p < 0 || p > 65535)
    return bad();
  return std::make_pair(host, p);
}

}  // namespace musacoder::service
