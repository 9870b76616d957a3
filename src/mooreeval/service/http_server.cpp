#include "mooreeval/service/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace musacoder::service {

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kListenTag = 0, kWakeTag = ~uint64_t{0};
constexpr auto kLinger = std::chrono::milliseconds(2000);  // reading leftovers before close

const char* reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 507: return "Insufficient Storage";
    default: return "Status";
  }
}

std::string error_body(const std::string& code, const std::string& message) {
  // Plain ASCII messages only here, so no JSON library is needed.
  return "{\"error\":{\"code\":\"" + code + "\",\"message\":\"" + message + "\"}}\n";
}

HttpReply loop_error(int status, const std::string& code, const std::string& message) {
  return {status, error_body(code, message), "application/json", {}};
}

void raise_fd_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &rl);
  }
}

std::string peer_of(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, buf, sizeof buf);
  else if (ss.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, buf, sizeof buf);
  return buf;
}

}  // namespace

std::string serialize_reply(const HttpReply& r, bool close) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + reason(r.status) + "\r\n";
  out += "Content-Type: " + r.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  for (const auto& [k, v] : r.headers) out += k + ": " + v + "\r\n";
  if (close) out += "Connection: close\r\n";
  out += "\r\n";
  out += r.body;
  return out;
}

// A fixed pool of handler threads with a bounded FIFO.
class HttpServer::Lane {
 public:
  explicit Lane(int threads) {
    for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { work(); });
  }
  ~Lane() { shutdown(); }
  // False when `max_queued` tasks are already waiting.
  bool push(std::function<void()> fn, std::size_t max_queued) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || tasks_.size() >= max_queued) return false;
    tasks_.push_back(std::move(fn));
    cv_.notify_one();
    return true;
  }
  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      stop_ = true;
      tasks_.clear();
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void work() {
    while (true) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
        if (stop_) return;
        fn = std::move(tasks_.front());
        tasks_.pop_front();
      }
      fn();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;  // GUARDED_BY(mu_)
  bool stop_ = false;                        // GUARDED_BY(mu_)
  std::vector<std::thread> threads_;
};

struct HttpServer::Conn {
  enum class State { kReading, kBusy, kWriting, kLingering };
  ConnId id = 0;
  int fd = -1;
  std::string peer_ip;
  State state = State::kReading;
  uint32_t interest = 0;
  std::string in;               // bytes received, not yet dispatched
  bool have_head = false;       // `head` parsed from the front of `in`
  RequestHead head;
  std::size_t head_bytes = 0;   // head plus its blank line
  RequestContext ctx;
  std::string out;              // response being written
  std::size_t out_off = 0;
  bool close_after = false;     // close once `out` is written
  Clock::time_point deadline;   // of the current state (see sweep_deadlines)
  Clock::time_point last_input; // last byte received (eviction order)
  bool partial() const { return have_head || !in.empty(); }
};

HttpServer::HttpServer(HttpServerOptions options, HttpHandler& handler)
    : options_(std::move(options)), handler_(handler) {}

HttpServer::~HttpServer() {
  stop();
  for (auto& [id, c] : conns_) ::close(c->fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Result<int> HttpServer::bind() {
  raise_fd_limit();
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  const std::string port = std::to_string(options_.port);
  if (int rc = ::getaddrinfo(options_.host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return unavailable("cannot resolve listen address " + options_.host + ": " + ::gai_strerror(rc));
  std::string why = "no address";
  for (addrinfo* a = res; a && listen_fd_ < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) {
      listen_fd_ = fd;
    } else {
      why = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(res);
  if (listen_fd_ < 0) return unavailable("cannot listen on " + options_.host + ":" + port + ": " + why);
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  const int bound = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(ss).sin6_port
                                                   : reinterpret_cast<sockaddr_in&>(ss).sin_port);
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return internal_error("epoll/eventfd: " + std::string(std::strerror(errno)));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenTag;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.u64 = kWakeTag;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  return bound;
}

Status HttpServer::run() {
  if (listen_fd_ < 0) return failed_precondition("HttpServer::run before bind");
  api_lane_ = std::make_unique<Lane>(options_.api_threads);
  priority_lane_ = std::make_unique<Lane>(options_.priority_threads);
  loop();
  // Lanes first (handlers may still call reply(), which only queues), then sockets.
  api_lane_->shutdown();
  priority_lane_->shutdown();
  for (auto& [id, c] : conns_) ::close(c->fd);
  conns_.clear();
  open_ = 0;
  return {};
}

void HttpServer::stop() {
  if (stop_.exchange(true)) return;
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
}

void HttpServer::reply(ConnId conn, std::string response) {
  {
    std::lock_guard<std::mutex> lock(replies_mu_);
    replies_.emplace_back(conn, std::move(response));
  }
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

HttpServerStats HttpServer::stats() const {
  return {open_.load(), evicted_.load(), timed_out_.load(), rejected_.load()};
}

void HttpServer::loop() {
  std::vector<epoll_event> events(256);
  auto last_sweep = Clock::now();
  while (!stop_) {
    int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), 100);
    for (int i = 0; i < n && !stop_; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kListenTag) {
        on_accept();
      } else if (tag == kWakeTag) {
        uint64_t v;
        while (::read(wake_fd_, &v, sizeof v) > 0) {
        }
        drain_replies();
      } else {
        auto it = conns_.find(tag);
        if (it == conns_.end()) continue;
        Conn& c = *it->second;
        if (events[i].events & (EPOLLERR | EPOLLHUP)) {
          close_conn(c.id);
          continue;
        }
        if (events[i].events & EPOLLOUT) on_writable(c);
        if (conns_.count(tag) && (events[i].events & EPOLLIN)) on_readable(*conns_.at(tag));
      }
    }
    if (Clock::now() - last_sweep >= std::chrono::milliseconds(100)) {
      sweep_deadlines();
      last_sweep = Clock::now();
    }
  }
}

void HttpServer::set_interest(Conn& c, uint32_t events) {
  if (c.interest == events) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = c.id;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
  c.interest = events;
}

void HttpServer::on_accept() {
  while (true) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or out of descriptors: try again on the next event
    if (static_cast<int>(conns_.size()) >= options_.max_connections && !evict_one()) {
      ++rejected_;
      const std::string r = serialize_reply(
          loop_error(503, "unavailable", "too many connections; retry later"), true);
      (void)::send(fd, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Conn>();
    c->id = next_id_++;
    c->fd = fd;
    c->peer_ip = peer_of(ss);
    c->last_input = Clock::now();
    c->deadline = c->last_input + options_.idle_timeout;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = c->id;
    c->interest = EPOLLIN;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    conns_.emplace(c->id, std::move(c));
    ++open_;
  }
}

bool HttpServer::evict_one() {
  // Lingering connections first, then the reading one that has gone longest without a
  // byte: a stalled request or an idle keep-alive connection, never one being served.
  Conn* victim = nullptr;
  for (auto& [id, c] : conns_) {
    if (c->state == Conn::State::kLingering) {
      victim = c.get();
      break;
    }
    if (c->state == Conn::State::kReading && (!victim || c->last_input < victim->last_input)) victim = c.get();
  }
  if (!victim) return false;
  ++evicted_;
  close_conn(victim->id);
  return true;
}

void HttpServer::on_readable(Conn& c) {
  char buf[16384];
  const bool lingering = c.state == Conn::State::kLingering;
  while (true) {
    // Bound what one connection can buffer: a head, or the body plus the next head.
    const std::size_t cap = c.have_head ? c.head_bytes + c.head.content_length + options_.max_head_bytes
                                        : options_.max_head_bytes + 4;
    if (!lingering && c.in.size() > cap) break;
    ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      close_conn(c.id);
      return;
    }
    if (n < 0) break;
    if (lingering) continue;  // discarded
    if (c.in.empty() && !c.have_head) c.deadline = Clock::now() + options_.header_timeout;
    c.in.append(buf, static_cast<std::size_t>(n));
    c.last_input = Clock::now();
  }
  if (c.state == Conn::State::kReading) process_input(c);
}

void HttpServer::process_input(Conn& c) {
  if (!c.have_head) {
    auto end = c.in.find("\r\n\r\n");
    if (end == std::string::npos || end > options_.max_head_bytes) {
      if (c.in.size() > options_.max_head_bytes || end != std::string::npos)
        refuse(c, loop_error(431, "too_large",
                             "request head over " + std::to_string(options_.max_head_bytes) + " bytes"));
      return;
    }
    std::string error;
    auto head = parse_request_head(std::string_view(c.in).substr(0, end), error);
    if (!head) return refuse(c, loop_error(400, "invalid_request", error));
    c.head = std::move(*head);
    c.head_bytes = end + 4;
    c.have_head = true;
    if (c.head.chunked)
      return refuse(c, loop_error(411, "invalid_request", "chunked request bodies are not accepted; send Content-Length"));
    if (c.head.content_length > options_.max_body_bytes)
      return refuse(c, loop_error(413, "too_large",
                                  "request body of " + std::to_string(c.head.content_length) +
                                      " bytes exceeds the limit of " + std::to_string(options_.max_body_bytes)));
    c.ctx = RequestContext{};
    c.ctx.conn = c.id;
    c.ctx.peer_ip = c.peer_ip;
    if (auto refusal = handler_.admit(c.head, c.ctx)) return refuse(c, *refusal);
    c.deadline = Clock::now() + options_.body_timeout;
    if (c.head.expect_continue && c.in.size() < c.head_bytes + c.head.content_length) {
      static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      (void)::send(c.fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  }
  if (c.in.size() >= c.head_bytes + c.head.content_length) dispatch(c);
}

void HttpServer::dispatch(Conn& c) {
  const std::size_t need = c.head_bytes + c.head.content_length;
  std::string request = c.in.substr(0, need);
  c.in.erase(0, need);
  c.have_head = false;
  c.state = Conn::State::kBusy;
  c.close_after = c.head.close;
  set_interest(c, 0);
  c.ctx.received = Clock::now();
  Lane& lane = c.ctx.priority ? *priority_lane_ : *api_lane_;
  const std::size_t max_queued = c.ctx.priority ? 256 : options_.max_queued_requests;
  auto task = [this, request = std::move(request), head = c.head, ctx = c.ctx]() mutable {
    auto response = handler_.serve(request, head, ctx);
    if (response) reply(ctx.conn, std::move(*response));
  };
  if (!lane.push(std::move(task), max_queued)) {
    HttpReply busy = loop_error(503, "unavailable", "the server is busy; retry later");
    busy.headers.emplace_back("Retry-After", "1");
    start_write(c, serialize_reply(busy, c.close_after), c.close_after);
  }
}

void HttpServer::drain_replies() {
  std::vector<std::pair<ConnId, std::string>> ready;
  {
    std::lock_guard<std::mutex> lock(replies_mu_);
    ready.swap(replies_);
  }
  for (auto& [id, bytes] : ready) {
    auto it = conns_.find(id);
    if (it == conns_.end() || it->second->state != Conn::State::kBusy) continue;  // client gone
    start_write(*it->second, std::move(bytes), it->second->close_after);
  }
}

void HttpServer::start_write(Conn& c, std::string bytes, bool close) {
  c.out = std::move(bytes);
  c.out_off = 0;
  c.close_after = close;
  c.state = Conn::State::kWriting;
  c.deadline = Clock::now() + options_.write_timeout;
  on_writable(c);
}

void HttpServer::on_writable(Conn& c) {
  if (c.state != Conn::State::kWriting) return;
  while (c.out_off < c.out.size()) {
    ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      set_interest(c, EPOLLOUT);
      return;
    }
    if (n <= 0) {
      if (errno == EINTR) continue;
      close_conn(c.id);
      return;
    }
    c.out_off += static_cast<std::size_t>(n);
  }
  finish_write(c);
}

void HttpServer::finish_write(Conn& c) {
  c.out.clear();
  c.out.shrink_to_fit();
  if (c.close_after) return linger(c);
  c.state = Conn::State::kReading;
  c.deadline = Clock::now() + (c.in.empty() ? options_.idle_timeout : options_.header_timeout);
  set_interest(c, EPOLLIN);
  if (!c.in.empty()) process_input(c);  // a pipelined request
}

void HttpServer::refuse(Conn& c, const HttpReply& r) {
  c.have_head = false;
  c.in.clear();
  start_write(c, serialize_reply(r, true), true);
}

void HttpServer::linger(Conn& c) {
  // Half-close, then read and discard what the client still sends (an unread body),
  // so that closing does not reset the connection before the client reads the reply.
  ::shutdown(c.fd, SHUT_WR);
  c.state = Conn::State::kLingering;
  c.in.clear();
  c.deadline = Clock::now() + kLinger;
  set_interest(c, EPOLLIN);
}

void HttpServer::close_conn(ConnId id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second->fd, nullptr);
  ::close(it->second->fd);
  conns_.erase(it);
  --open_;
}

void HttpServer::sweep_deadlines() {
  const auto now = Clock::now();
  std::vector<ConnId> expired;
  for (auto& [id, c] : conns_)
    if (c->state != Conn::State::kBusy && now >= c->deadline) expired.push_back(id);
  for (ConnId id : expired) {
    Conn& c = *conns_.at(id);
    if (c.state == Conn::State::kReading && c.partial()) {
      ++timed_out_;
      refuse(c, loop_error(408, "timeout", c.have_head ? "request body not received in time"
                                                          : "request head not received in time"));
    } else {
      close_conn(id);  // idle keep-alive, lingering, or a client that does not read
    }
  }
}

}  // namespace musacoder::service
