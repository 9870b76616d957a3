// The head of an HTTP/1.1 request (request line and headers), parsed by the service's
// front end before any handler thread sees the request, so that a request can be refused
// (wrong Host, Origin, media type, token, rate) without reading its body.
//
// Thread-safety: pure functions and plain values.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace musacoder::service {

struct RequestHead {
  std::string method;                                       // "GET", "POST", ...
  std::string target;                                       // as sent, e.g. "/v1/jobs?x=1"
  std::string path;                                         // target without the query
  std::string version;                                      // "HTTP/1.1"
  std::vector<std::pair<std::string, std::string>> fields;  // names lower-cased, values trimmed
  std::size_t content_length = 0;
  bool chunked = false;          // Transfer-Encoding present (the service refuses it: 411)
  bool close = false;            // the client asked to close after this request
  bool expect_continue = false;  // "Expect: 100-continue"

  // The first field named `name` (lower case); nullptr when absent.
  const std::string* field(std::string_view name) const;
};

// Parses `head` (the bytes before the blank line, without it). nullopt and `error` set
// when malformed: no request line, bad field syntax, a bad or repeated Content-Length.
std::optional<RequestHead> parse_request_head(std::string_view head, std::string& error);

// "application/json; charset=utf-8" -> "application/json" (lower case, parameters dropped).
std::string media_type(std::string_view content_type);

// The host of a Host header value without its port: "[::1]:80" -> "::1", "a.b:8080" -> "a.b".
std::string host_without_port(std::string_view host);

}  // namespace musacoder::service
