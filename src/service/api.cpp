#include "service/api.h"

#include <httplib.h>

#include <charconv>
#include <iostream>

namespace musacoder::service {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  // error_handler_t::replace: a label or message can never make dump() throw.
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n", "application/json");
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
  send_error(res, {http, code, st.message()});
}

const char* default_code(int status) {
  switch (status) {
    case 400:
      return "invalid_request";
    case 404:
      return "not_found";
    case 405:
      return "method_not_allowed";
    case 413:
      return "too_large";
    case 414:
      return "too_large";
    default:
      return status >= 500 ? "internal" : "error";
  }
}

}  // namespace

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

ApiServer::ApiServer(ApiOptions options, Service& service)
    : options_(std::move(options)), service_(service), http_(std::make_unique<httplib::Server>()) {
  const int threads = std::max(2, options_.threads);
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  http_->set_payload_max_length(service_.options().limits.max_body_bytes);
  http_->set_read_timeout(options_.read_timeout.count(), 0);
  http_->set_keep_alive_timeout(options_.keep_alive.count());
  http_->set_keep_alive_max_count(100000);
  http_->set_tcp_nodelay(true);
  routes();
}

ApiServer::~ApiServer() {
  stop();
}

Result<int> ApiServer::bind() {
  if (options_.port == 0) {
    int port = http_->bind_to_any_port(options_.host);
    if (port <= 0) return unavailable("cannot listen on " + options_.host + " (any port)");
    return port;
  }
  if (!http_->bind_to_port(options_.host, options_.port))
    return unavailable("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                       " (address in use or not local)");
  return options_.port;
}

Status ApiServer::listen() {
  if (!http_->listen_after_bind()) return unavailable("HTTP server stopped with an error");
  return {};
}

void ApiServer::stop() {
  if (http_) http_->stop();
}

void ApiServer::routes() {
  Service& svc = service_;
  const ServiceLimits& limits = svc.options().limits;
  auto known = [&svc](const std::string& id) { return svc.has_task(id); };

  // Times each request, records it by route and turns any exception into a 500.
  auto wrap = [&svc](std::string route, httplib::Server::Handler handler) {
    return [&svc, route = std::move(route), handler = std::move(handler)](const httplib::Request& req,
                                                                          httplib::Response& res) {
      const auto t0 = Clock::now();
      try {
        handler(req, res);
      } catch (const std::exception& e) {
        send_error(res, {500, "internal", std::string("internal error: ") + e.what()});
      } catch (...) {
        send_error(res, {500, "internal", "internal error"});
      }
      svc.metrics().record_request(route, res.status,
                                   std::chrono::duration<double>(Clock::now() - t0).count());
    };
  };

  http_->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // a handler's own JSON error
    std::string message = res.status == 404   ? "no route " + req.method + " " + req.path
                          : res.status == 413 ? "request body exceeds the server's limit"
                                              : "request rejected";
    send_json(res, res.status, ApiError{res.status, default_code(res.status), message}.to_json());
  });
  http_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    send_error(res, {500, "internal", "internal error"});
  });

  http_->Get("/healthz", wrap("/healthz", [&svc](const httplib::Request&, httplib::Response& res) {
               bool healthy = false;
               json h = svc.health(healthy);
               send_json(res, healthy ? 200 : 503, h);
             }));
  http_->Get("/metrics", wrap("/metrics", [&svc](const httplib::Request&, httplib::Response& res) {
               res.set_content(svc.metrics_text(), "text/plain; version=0.0.4");
             }));
  http_->Get("/v1/tasks", wrap("/v1/tasks", [&svc](const httplib::Request&, httplib::Response& res) {
               json tasks = json::array();
               for (const auto& [id, t] : svc.catalog())
                 tasks.push_back(
                     {{"id", id}, {"difficulty", t.difficulty}, {"trials", t.trials}, {"dtype", t.dtype}});
               send_json(res, 200, {{"tasks", tasks}});
             }));

  http_->Post(
      "/v1/jobs",
      wrap("/v1/jobs", [&svc, &limits, known](const httplib::Request& req, httplib::Response& res) {
        auto body = parse_body(req.body, limits);
        if (!body.ok()) return send_error(res, body.error);
        auto job = parse_job(*body.value, limits, known);
        if (!job.ok()) return send_error(res, job.error);
        if (body.value->contains("deadline_seconds") || body.value->contains("cancel_on_deadline"))
          return send_error(res, {400, "invalid_request", "deadlines apply to POST /v1/evaluate only"});
        auto ids = svc.submit({*job.value});
        if (!ids.ok()) return send_status(res, ids.status());
        res.set_header("Location", "/v1/jobs/" + ids->front());
        send_json(res, 202, {{"job_id", ids->front()}, {"state", "queued"}});
      }));

  http_->Post("/v1/batches", wrap("/v1/batches", [&svc, &limits, known](const httplib::Request& req,
                                                                        httplib::Response& res) {
                auto body = parse_body(req.body, limits);
                if (!body.ok()) return send_error(res, body.error);
                auto jobs = parse_batch(*body.value, limits, known);
                if (!jobs.ok()) return send_error(res, jobs.error);
                auto ids = svc.submit(*jobs.value);
                if (!ids.ok()) return send_status(res, ids.status());
                send_json(res, 202, {{"job_ids", *ids}});
              }));

  http_->Post(
      "/v1/evaluate",
      wrap("/v1/evaluate", [&svc, &limits, known](const httplib::Request& req, httplib::Response& res) {
        auto body = parse_body(req.body, limits);
        if (!body.ok()) return send_error(res, body.error);
        auto ev = parse_evaluate(*body.value, limits, known);
        if (!ev.ok()) return send_error(res, ev.error);
        const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(ev.value->deadline_seconds));
        auto ids = svc.submit({ev.value->job});
        if (!ids.ok()) return send_status(res, ids.status());
        const std::string id = ids->front();
        auto rec = svc.wait(id, deadline);
        if (!rec.ok()) return send_status(res, rec.status());
        if (!*rec) return send_error(res, {500, "internal", "job " + id + " vanished"});
        const JobState state = (*rec)->state;
        if (state == JobState::kDone || state == JobState::kCancelled)
          return send_json(res, 200, job_json(**rec));
        std::string state_name = job_state_name(state);
        if (ev.value->cancel_on_deadline) {
          auto c = svc.cancel(id);
          if (c.ok() && *c == CancelOutcome::kCancelled) state_name = "cancelled";
        }
        json err =
            ApiError{504, "deadline_exceeded",
                     "job " + id + " not finished within " + std::to_string(ev.value->deadline_seconds) +
                         " s" + (state_name == "cancelled" ? "; cancelled" : "; poll GET /v1/jobs/" + id)}
                .to_json();
        err["job_id"] = id;
        err["state"] = state_name;
        send_json(res, 504, err);
      }));

  http_->Post("/v1/jobs/lookup",
              wrap("/v1/jobs/lookup", [&svc, &limits](const httplib::Request& req, httplib::Response& res) {
                auto body = parse_body(req.body, limits);
                if (!body.ok()) return send_error(res, body.error);
                auto ids = parse_lookup(*body.value, limits);
                if (!ids.ok()) return send_error(res, ids.error);
                json jobs = json::array();
                for (const auto& id : *ids.value) {
                  auto r = svc.job(id);
                  if (!r.ok()) return send_status(res, r.status());
                  jobs.push_back(*r ? job_json(**r) : json{{"job_id", id}, {"state", "unknown"}});
                }
                send_json(res, 200, {{"jobs", jobs}});
              }));

  const std::string id_re = "/v1/jobs/([0-9a-f]{32})";
  http_->Get(id_re, wrap("/v1/jobs/{id}", [&svc](const httplib::Request& req, httplib::Response& res) {
               auto r = svc.job(req.matches[1]);
               if (!r.ok()) return send_status(res, r.status());
               if (!*r) return send_error(res, {404, "not_found", "no job " + std::string(req.matches[1])});
               send_json(res, 200, job_json(**r));
             }));
  http_->Get(id_re + "/log",
             wrap("/v1/jobs/{id}/log", [&svc](const httplib::Request& req, httplib::Response& res) {
               const std::string id = req.matches[1];
               auto r = svc.job(id, false);
               if (!r.ok()) return send_status(res, r.status());
               if (!*r) return send_error(res, {404, "not_found", "no job " + id});
               auto log = svc.log(id);
               if (!log.ok()) return send_status(res, log.status());
               json events = json::array();
               for (const auto& e : *log)
                 events.push_back({{"at", e.at}, {"event", e.event}, {"detail", e.detail}});
               send_json(res, 200, {{"job_id", id}, {"log", events}});
             }));
  auto cancel = [&svc](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
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
  http_->Post(id_re + "/cancel", wrap("/v1/jobs/{id}/cancel", cancel));
  http_->Delete(id_re, wrap("/v1/jobs/{id}", cancel));
}

}  // namespace musacoder::service
