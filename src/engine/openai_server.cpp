// OpenAiServer: cpp-httplib routes over an Engine. Non-streaming requests wait for the engine's final
// update; streaming ones turn each update into SSE chunks through a per-request queue that the HTTP
// thread drains (a client that goes away cancels its request).
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>

#include "engine/engine.h"
#include "engine/openai_protocol.h"
#include "tokenizer/chat_template.h"

namespace musacoder::engine {

using nlohmann::json;

namespace {

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) { send_json(res, e.http_status, e.to_json()); }

// The SSE events of one streaming request, from the engine thread to the HTTP thread.
struct StreamQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> events;
  bool done = false;
  void push(std::string e, bool last) {
    {
      std::lock_guard lock(mu);
      events.push_back(std::move(e));
      done = done || last;
    }
    cv.notify_all();
  }
};

}  // namespace

struct OpenAiServer::Impl {
  Engine& engine;
  ServerOptions options;
  httplib::Server http;
  std::thread thread;
  int port = 0;
  // metrics
  std::mutex metrics_mu;
  std::map<std::pair<std::string, int>, int64_t> requests;  // (route, status) -> count
  double latency_sum = 0;
  int64_t latency_count = 0;
  std::atomic<int64_t> in_flight{0};

  Impl(Engine& e, ServerOptions o) : engine(e), options(std::move(o)) {}

  ApiLimits limits() const { return {options.model_name, options.max_n, options.default_max_tokens}; }

  void record(const std::string& route, int status, double seconds) {
    std::lock_guard lock(metrics_mu);
    ++requests[{route, status}];
    latency_sum += seconds, ++latency_count;
  }

  // Renders a chat with the tokenizer's template into req.request.prompt.
  std::optional<ApiError> render(ParsedRequest& req) {
    const tokenizer::Tokenizer* tok = engine.tokenizer();
    if (tok == nullptr) return ApiError{400, "invalid_request_error", "no_tokenizer", "the model has no tokenizer"};
    auto format = tokenizer::detect_chat_format(*tok);
    if (!format.ok()) return ApiError{400, "invalid_request_error", "no_chat_template", format.status().message()};
    std::vector<tokenizer::ChatMessage> msgs;
    for (const auto& [role, content] : req.messages) msgs.push_back({role, content});
    tokenizer::ChatTemplateOptions o;
    o.format = *format;
    auto prompt = tokenizer::render_chat(msgs, o);
    if (!prompt.ok()) return ApiError{400, "invalid_request_error", "bad_messages", prompt.status().message()};
    req.request.prompt = *prompt;
    return std::nullopt;
  }

  void generate(const httplib::Request& http_req, httplib::Response& res, bool chat) {
    json body = json::parse(http_req.body, nullptr, false);
    if (body.is_discarded()) return send_error(res, {400, "invalid_request_error", "invalid_json", "the body is not valid JSON"});
    auto [req, err] = parse_api_request(body, chat, limits());
    if (!err && chat) err = render(req);
    if (err) return send_error(res, *err);
    if (Status st = engine.validate(req.request); !st.ok())
      return send_error(res, {400, "invalid_request_error", "invalid_request", st.message()});
    if (req.stream) return stream(std::move(req), res);
    std::promise<RequestOutput> done;
    auto fut = done.get_future();
    engine.submit(req.request, [&done](const RequestUpdate& u) {
      if (u.finished) done.set_value(u.output);
    });
    RequestOutput out = fut.get();
    if (!out.status.ok()) return send_error(res, {400, "invalid_request_error", "invalid_request", out.status.message()});
    send_json(res, 200, completion_response(out, req, options.model_name, engine.tokenizer(), unix_now()));
  }

  void stream(ParsedRequest req, httplib::Response& res) {
    auto queue = std::make_shared<StreamQueue>();
    auto shared = std::make_shared<ParsedRequest>(std::move(req));
    auto first = std::make_shared<std::vector<bool>>(static_cast<std::size_t>(shared->request.sampling.n), true);
    const std::string model = options.model_name;
    const tokenizer::Tokenizer* tok = engine.tokenizer();
    const int64_t created = unix_now();
    const uint64_t id = engine.submit(shared->request, [queue, shared, first, model, tok, created](const RequestUpdate& u) {
      for (const auto& d : u.deltas) {
        json chunk = stream_chunk(u.output, d, *shared, model, tok, created, (*first)[static_cast<std::size_t>(d.index)]);
        (*first)[static_cast<std::size_t>(d.index)] = false;
        queue->push("data: " + chunk.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n", false);
      }
      if (u.finished) queue->push("data: [DONE]\n\n", true);
    });
    Engine* engine_ptr = &engine;
    res.set_chunked_content_provider(
        "text/event-stream",
        [queue](size_t, httplib::DataSink& sink) {
          std::unique_lock lock(queue->mu);
          queue->cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return !queue->events.empty() || queue->done; });
          while (!queue->events.empty()) {
            std::string e = std::move(queue->events.front());
            queue->events.pop_front();
            if (!sink.write(e.data(), e.size())) return false;  // the client went away
          }
          if (queue->done) sink.done();
          return true;
        },
        [engine_ptr, id, queue](bool success) {
          std::lock_guard lock(queue->mu);
          if (!success || !queue->done) engine_ptr->cancel(id);
        });
  }

  std::string metrics_text() {
    const EngineStats s = engine.stats();
    std::string out;
    auto gauge = [&out](const char* name, const char* help, const char* type, double v) {
      out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " +
             std::to_string(v) + "\n";
    };
    gauge("musacoder_engine_running_sequences", "Sequences in the running batch.", "gauge", static_cast<double>(s.running));
    gauge("musacoder_engine_waiting_sequences", "Sequences queued for admission.", "gauge", static_cast<double>(s.waiting));
    gauge("musacoder_engine_kv_blocks_total", "KV cache blocks.", "gauge", static_cast<double>(s.kv_blocks_total));
    gauge("musacoder_engine_kv_blocks_free", "Free KV cache blocks.", "gauge", static_cast<double>(s.kv_blocks_free));
    gauge("musacoder_engine_steps_total", "Engine steps (forwards).", "counter", static_cast<double>(s.steps));
    gauge("musacoder_engine_prompt_tokens_total", "Prompt tokens admitted.", "counter", static_cast<double>(s.prompt_tokens));
    gauge("musacoder_engine_generation_tokens_total", "Tokens generated.", "counter", static_cast<double>(s.generated_tokens));
    gauge("musacoder_engine_preemptions_total", "Sequences preempted for KV space.", "counter", static_cast<double>(s.preemptions));
    gauge("musacoder_engine_cuda_graph_replays_total", "Decode steps replayed from CUDA graphs.", "counter",
          static_cast<double>(s.cuda_graph_replays));
    gauge("musacoder_engine_weight_version", "Weight version (updates applied).", "gauge",
          static_cast<double>(engine.weight_version()));
    std::lock_guard lock(metrics_mu);
    out += "# HELP musacoder_http_requests_total HTTP requests by route and status.\n"
           "# TYPE musacoder_http_requests_total counter\n";
    for (const auto& [key, n] : requests)
      out += "musacoder_http_requests_total{route=\"" + key.first + "\",status=\"" + std::to_string(key.second) +
             "\"} " + std::to_string(n) + "\n";
    out += "# HELP musacoder_http_request_seconds Request latency.\n# TYPE musacoder_http_request_seconds summary\n";
    out += "musacoder_http_request_seconds_sum " + std::to_string(latency_sum) + "\n";
    out += "musacoder_http_request_seconds_count " + std::to_string(latency_count) + "\n";
    return out;
  }

  httplib::Server::Handler wrap(std::string route, httplib::Server::Handler h) {
    return [this, route = std::move(route), h = std::move(h)](const httplib::Request& req, httplib::Response& res) {
      const auto t0 = std::chrono::steady_clock::now();
      const bool limited = options.max_concurrent_requests > 0 && route.starts_with("/v1/") && route != "/v1/models";
      if (limited && in_flight.fetch_add(1) >= options.max_concurrent_requests) {
        in_flight.fetch_sub(1);
        res.set_header("Retry-After", "1");
        send_error(res, {429, "rate_limit_error", "rate_limited", "too many concurrent requests; retry later"});
      } else {
        try {
          h(req, res);
        } catch (const std::exception& e) {
          send_error(res, {500, "internal_error", "internal", std::string("internal error: ") + e.what()});
        }
        if (limited) in_flight.fetch_sub(1);
      }
      record(route, res.status, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    };
  }

  void routes() {
    http.Get("/healthz", wrap("/healthz", [](const httplib::Request&, httplib::Response& res) {
               send_json(res, 200, {{"status", "ok"}});
             }));
    http.Get("/metrics", wrap("/metrics", [this](const httplib::Request&, httplib::Response& res) {
               res.set_content(metrics_text(), "text/plain; version=0.0.4");
             }));
    http.Get("/v1/models", wrap("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
               send_json(res, 200, {{"object", "list"},
                                    {"data", json::array({{{"id", options.model_name}, {"object", "model"},
                                                           {"created", 0}, {"owned_by", "musacoder"},
                                                           {"max_model_len", engine.max_model_len()}}})}});
             }));
    http.Post("/v1/completions", wrap("/v1/completions", [this](const httplib::Request& q, httplib::Response& r) {
                generate(q, r, false);
              }));
    http.Post("/v1/chat/completions", wrap("/v1/chat/completions", [this](const httplib::Request& q, httplib::Response& r) {
                generate(q, r, true);
              }));
    http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      const std::string message = res.status == 404   ? "no route " + req.method + " " + req.path
                                  : res.status == 413 ? "the request body exceeds the server's limit"
                                                      : "request rejected";
      send_error(res, {res.status, "invalid_request_error", res.status == 413 ? "too_large" : "error", message});
    });
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
      send_error(res, {500, "internal_error", "internal", "internal error"});
    });
  }
};

OpenAiServer::OpenAiServer(Engine& engine, ServerOptions options)
    : impl_(std::make_unique<Impl>(engine, std::move(options))) {
  const int threads = std::max(2, impl_->options.threads);
  impl_->http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  impl_->http.set_payload_max_length(impl_->options.max_body_bytes);
  impl_->http.set_tcp_nodelay(true);
  impl_->routes();
}

OpenAiServer::~OpenAiServer() { stop(); }

Status OpenAiServer::start() {
  auto& o = impl_->options;
  if (o.port == 0) {
    impl_->port = impl_->http.bind_to_any_port(o.host);
    if (impl_->port <= 0) return unavailable("cannot listen on " + o.host);
  } else if (!impl_->http.bind_to_port(o.host, o.port)) {
    return unavailable("cannot listen on " + o.host + ":" + std::to_string(o.port) + " (address in use?)");
  } else {
    impl_->port = o.port;
  }
  impl_->thread = std::thread([this] { impl_->http.listen_after_bind(); });
  return Status();
}

void OpenAiServer::stop() {
  if (!impl_) return;
  impl_->http.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int OpenAiServer::port() const { return impl_->port; }

}  // namespace musacoder::engine
