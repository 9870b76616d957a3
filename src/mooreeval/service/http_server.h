// The service's HTTP/1.1 front end: one event-loop thread (epoll) owns every socket and
// reads each request completely (head and Content-Length body) under deadlines before a
// handler thread sees it; handlers run on two thread pools ("lanes"): a small priority
// lane (/healthz, /metrics) and the API lane. So:
//
//   - a slow or stalled client (slowloris: headers or body dribbled, or never sent) holds
//     one socket and a buffer, never a thread; its request is dropped with 408 when the
//     header or body deadline passes;
//   - at the connection cap, a new connection evicts the connection that has waited
//     longest without completing a request (a stalled one before an idle keep-alive one);
//   - /healthz and /metrics are served on their own lane while the API lane is busy;
//   - a handler may answer later (HttpServer::reply): a long wait (POST /v1/evaluate)
//     then holds no thread at all;
//   - the head is shown to `admit` first, so a request is refused (Host, Origin, media
//     type, token, rate) before its body is read.
//
// Chunked request bodies are refused (411); responses are written by the loop without
// blocking (write deadline). TLS is left to a reverse proxy (docs/security.md).
//
// Thread-safety: reply() and stop() from any thread; the handler's methods are called
// from the loop thread (admit) and lane threads (serve).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "mooreeval/service/auth.h"
#include "mooreeval/service/http_head.h"

namespace musacoder::service {

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // listen address
  int port = 8080;                 // 0: any free port (bind() returns it)

  // Abuse resistance.
  int max_connections = 1024;                        // open sockets; more evict stalled ones
  std::chrono::milliseconds header_timeout{10000};   // first byte of a request to the end of its head
  std::chrono::milliseconds body_timeout{60000};     // end of the head to the end of the body
  std::chrono::milliseconds idle_timeout{30000};     // keep-alive connection without a request
  std::chrono::milliseconds write_timeout{30000};    // a response not taken by the client in time
  std::size_t max_head_bytes = 16384;                // request line + headers (431 above)
  std::size_t max_body_bytes = std::size_t{64} << 20;  // Content-Length (413 above)

  // Performance.
  int api_threads = 16;                   // API lane handler threads
  int priority_threads = 2;               // /healthz and /metrics lane
  std::size_t max_queued_requests = 4096;  // complete requests waiting for the API lane (503 above)
};

using ConnId = uint64_t;

// What the loop knows of one request, passed from admit() to serve().
struct RequestContext {
  ConnId conn = 0;
  std::string peer_ip;
  std::optional<Principal> principal;  // set by admit() when authenticated
  std::string route;                   // route pattern, e.g. "/v1/jobs/{id}" (metrics label)
  bool priority = false;               // run on the priority lane
  std::chrono::steady_clock::time_point received;  // when the request was complete
};

// A complete response the loop writes as is.
struct HttpReply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

// Serialises a response (Content-Length framing; "Connection: close" when `close`).
std::string serialize_reply(const HttpReply& reply, bool close);

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // Loop thread, once the head is in and before the body is read: a reply refuses the
  // request (the connection is closed after it). Fills ctx (route, principal, priority).
  // Must not block.
  virtual std::optional<HttpReply> admit(const RequestHead& head, RequestContext& ctx) = 0;
  // Lane thread, with the whole request (head and body bytes): the serialised response,
  // or nullopt when it will come later through HttpServer::reply(ctx.conn, ...).
  virtual std::optional<std::string> serve(const std::string& request, const RequestHead& head,
                                           RequestContext& ctx) = 0;
};

struct HttpServerStats {
  int64_t open_connections = 0;
  int64_t evicted = 0;    // connections closed to admit a new one at the cap
  int64_t timed_out = 0;  // requests dropped at the header/body deadline
  int64_t rejected = 0;   // connections refused at the cap with nothing to evict
};

class HttpServer {
 public:
  // `handler` must outlive the server.
  HttpServer(HttpServerOptions options, HttpHandler& handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens; returns the port.
  Result<int> bind();
  // Runs the loop until stop(); then closes every connection and joins the lanes.
  Status run();
  void stop();
  // A deferred response for connection `conn` (dropped if it is gone meanwhile).
  void reply(ConnId conn, std::string response);
  HttpServerStats stats() const;

 private:
  class Lane;
  struct Conn;
  void loop();
  void on_accept();
  void on_readable(Conn& c);
  void on_writable(Conn& c);
  void process_input(Conn& c);
  void dispatch(Conn& c);
  void start_write(Conn& c, std::string bytes, bool close);
  void finish_write(Conn& c);
  void refuse(Conn& c, const HttpReply& r);
  void linger(Conn& c);
  void close_conn(ConnId id);
  void drain_replies();
  void sweep_deadlines();
  bool evict_one();
  void set_interest(Conn& c, uint32_t events);

  HttpServerOptions options_;
  HttpHandler& handler_;
  int listen_fd_ = -1, epoll_fd_ = -1, wake_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::unique_ptr<Lane> api_lane_, priority_lane_;
  std::unordered_map<ConnId, std::unique_ptr<Conn>> conns_;  // loop thread only
  ConnId next_id_ = 1;
  std::mutex replies_mu_;
  std::vector<std::pair<ConnId, std::string>> replies_;  // GUARDED_BY(replies_mu_)
  std::atomic<int64_t> open_{0}, evicted_{0}, timed_out_{0}, rejected_{0};
};

}  // namespace musacoder::service
