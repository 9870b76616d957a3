// RemoteEngine: the engine's request API over HTTP to any OpenAI-compatible server. Each call is one
// POST with retries: connection errors, 429 and 5xx are retried up to max_retries times, waiting the
// server's Retry-After (seconds) on a 429 when it sends one, else backoff_seconds doubled per attempt
// (capped); other 4xx are the caller's mistake and returned at once as kInvalidArgument.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "engine/engine.h"
#include "engine/openai_protocol.h"

namespace musacoder::engine {

using nlohmann::json;

namespace {

struct Endpoint {
  std::string origin;  // scheme://host:port
  std::string prefix;  // path before /v1
};

Endpoint split_url(const std::string& url) {
  const auto scheme = url.find("://");
  const auto path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  Endpoint e{path == std::string::npos ? url : url.substr(0, path), path == std::string::npos ? "" : url.substr(path)};
  while (!e.prefix.empty() && e.prefix.back() == '/') e.prefix.pop_back();
  if (e.prefix.ends_with("/v1")) e.prefix.resize(e.prefix.size() - 3);
  return e;
}

double retry_after(const httplib::Result& r, double fallback) {
  if (!r || r->status != 429 || !r->has_header("Retry-After")) return fallback;
  try {
    return std::clamp(std::stod(r->get_header_value("Retry-After")), 0.0, 300.0);
  } catch (...) {
    return fallback;
  }
}

}  // namespace

RemoteEngine::RemoteEngine(RemoteOptions options) : options_(std::move(options)) {}

namespace {

Result<json> post_with_retries(const RemoteOptions& o, const std::string& route, const json& body,
                               std::atomic<int64_t>& retries) {
  const Endpoint ep = split_url(o.base_url);
  httplib::Client cli(ep.origin);
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_seconds * 1000));
  cli.set_connection_timeout(timeout);
  cli.set_read_timeout(timeout);
  cli.set_write_timeout(timeout);
  httplib::Headers headers;
  if (!o.api_key.empty()) headers.emplace("Authorization", "Bearer " + o.api_key);
  const std::string payload = body.dump();
  std::string last = "no attempt";
  for (int attempt = 0; attempt <= o.max_retries; ++attempt) {
    auto r = cli.Post(ep.prefix + route, headers, payload, "application/json");
    if (r && r->status == 200) {
      json j = json::parse(r->body, nullptr, false);
      if (j.is_discarded()) return internal_error("the server's response is not JSON");
      return j;
    }
    if (r && r->status >= 400 && r->status < 500 && r->status != 429 && r->status != 408)
      return invalid_argument("the server rejected the request (HTTP " + std::to_string(r->status) + "): " + r->body);
    last = r ? "HTTP " + std::to_string(r->status) + ": " + r->body.substr(0, 300) : "connection error: " + httplib::to_string(r.error());
    if (attempt == o.max_retries) break;
    ++retries;
    const double backoff = std::min(o.max_backoff_seconds, o.backoff_seconds * std::pow(2.0, attempt));
    std::this_thread::sleep_for(std::chrono::duration<double>(retry_after(r, backoff)));
  }
  return unavailable("gave up after " + std::to_string(o.max_retries + 1) + " attempts; last: " + last);
}

}  // namespace

Result<RequestOutput> RemoteEngine::complete(const Request& request) const {
  auto j = post_with_retries(options_, "/v1/completions", api_request_body(request, options_.model, false, {}), *retries_);
  if (!j.ok()) return j.status();
  auto out = parse_api_response(*j, false);
  if (out.ok()) out->tag = request.tag;
  return out;
}

Result<RequestOutput> RemoteEngine::chat(const std::vector<std::pair<std::string, std::string>>& messages,
                                         const SamplingParams& sampling) const {
  Request r;
  r.sampling = sampling;
  auto j = post_with_retries(options_, "/v1/chat/completions", api_request_body(r, options_.model, true, messages),
                             *retries_);
  if (!j.ok()) return j.status();
  return parse_api_response(*j, true);
}

std::vector<RequestOutput> RemoteEngine::generate(const std::vector<Request>& requests) const {
  std::vector<RequestOutput> outs(requests.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < requests.size();) {
      auto r = complete(requests[i]);
      if (r.ok()) {
        outs[i] = std::move(*r);
      } else {
        outs[i].status = r.status();
        outs[i].tag = requests[i].tag;
        outs[i].finished = true;
      }
    }
  };
  std::vector<std::thread> threads;
  const int n = std::max(1, std::min<int>(options_.concurrency, static_cast<int>(requests.size())));
  for (int t = 0; t < n; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  return outs;
}

}  // namespace musacoder::engine
