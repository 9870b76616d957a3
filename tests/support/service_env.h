// Real processes on loopback for the service tests: redis-server, `mooreeval serve` and
// `mooreeval worker`, each with its output in a log file, plus a small HTTP/JSON client.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.h"

namespace musacoder::testing {

inline const std::filesystem::path kMooreEval =
    std::filesystem::path(MUSACODER_BINARY_DIR) / "tools" / "mooreeval" / "mooreeval";

// A started `mooreeval serve` and an HTTP client for it.
struct HttpReply {
  int status = 0;  // 0: no reply (connection failed)
  nlohmann::json body;
  std::string raw;
};

class Api {
 public:
  // `token`: sent as "Authorization: Bearer <token>" when not empty.
  explicit Api(int port, std::string token = "") : client_("127.0.0.1", port), token_(std::move(token)) {
    client_.set_read_timeout(600, 0);
    client_.set_connection_timeout(5, 0);
  }
  HttpReply post(const std::string& path, const nlohmann::json& body, httplib::Headers extra = {}) {
    return post_raw(path, body.dump(), "application/json", std::move(extra));
  }
  HttpReply post_raw(const std::string& path, const std::string& body,
                     const std::string& content_type = "application/json", httplib::Headers extra = {}) {
    return wrap(client_.Post(path.c_str(), with_token(std::move(extra)), body, content_type.c_str()));
  }
  HttpReply get(const std::string& path, httplib::Headers extra = {}) {
    return wrap(client_.Get(path.c_str(), with_token(std::move(extra))));
  }
  HttpReply del(const std::string& path) { return wrap(client_.Delete(path.c_str(), with_token({}))); }
  HttpReply put(const std::string& path, const std::string& body) {
    return wrap(client_.Put(path.c_str(), with_token({}), body, "application/json"));
  }
  // Header value of the last reply (e.g. "Retry-After"); empty when absent.
  std::string last_header(const std::string& name) const {
    auto it = last_headers_.find(name);
    return it == last_headers_.end() ? "" : it->second;
  }

 private:
  httplib::Headers with_token(httplib::Headers h) const {
    if (!token_.empty()) h.emplace("Authorization", "Bearer " + token_);
    return h;
  }
  HttpReply wrap(const httplib::Result& r) {
    HttpReply out;
    last_headers_.clear();
    if (!r) return out;
    out.status = r->status;
    out.raw = r->body;
    out.body = nlohmann::json::parse(r->body, nullptr, false);
    last_headers_ = r->headers;
    return out;
  }
  httplib::Client client_;
  std::string token_;
  httplib::Headers last_headers_;
};

// A raw TCP connection to 127.0.0.1:port (for slow and malformed clients).
class RawConn {
 public:
  explicit RawConn(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~RawConn() { ::close(fd_); }
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;
  bool connected() const { return connected_; }
  bool send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  // Whatever arrives within `timeout` until the peer closes; `closed` tells whether it did.
  std::string read_until_close(std::chrono::milliseconds timeout, bool& closed) {
    std::string out;
    closed = false;
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      timeval tv{0, 100000};
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        closed = true;
        break;
      }
      if (n > 0) out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

}  // namespace musacoder::testing
