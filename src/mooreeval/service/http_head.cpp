#include "mooreeval/service/http_head.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace musacoder::service {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) !=
                                                             std::string_view::npos;
}

bool parse_request_line(std::string_view line, RequestHead& h) {
  auto sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return false;
  auto sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return false;
  h.method = std::string(line.substr(0, sp1));
  h.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  h.version = std::string(line.substr(sp2 + 1));
  if (h.method.empty() || !std::all_of(h.method.begin(), h.method.end(), is_token_char)) return false;
  if (h.target.empty() || h.target[0] != '/') return false;
  if (h.version != "HTTP/1.1" && h.version != "HTTP/1.0") return false;
  h.path = h.target.substr(0, h.target.find('?'));
  return true;
}

}  // namespace

const std::string* RequestHead::field(std::string_view name) const {
  for (const auto& [k, v] : fields)
    if (k == name) return &v;
  return nullptr;
}

std::optional<RequestHead> parse_request_head(std::string_view head, std::string& error) {
  RequestHead h;
  auto eol = head.find("\r\n");
  if (!parse_request_line(head.substr(0, eol), h)) {
    error = "malformed request line";
    return std::nullopt;
  }
  bool have_length = false;
  std::size_t pos = eol == std::string_view::npos ? head.size() : eol + 2;
  while (pos < head.size()) {
    auto end = head.find("\r\n", pos);
    if (end == std::string_view::npos) end = head.size();
    std::string_view line = head.substr(pos, end - pos);
    pos = end + 2;
    auto colon = line.find(':');
    if (colon == 0 || colon == std::string_view::npos ||
        !std::all_of(line.begin(), line.begin() + static_cast<long>(colon), is_token_char)) {
      error = "malformed header field";
      return std::nullopt;
    }
    std::string name = lower(line.substr(0, colon));
    std::string value(trim(line.substr(colon + 1)));
    if (name == "content-length") {
      std::size_t n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || ec != std::errc() || p != value.data() + value.size() ||
          (have_length && n != h.content_length)) {
        error = "bad Content-Length";
        return std::nullopt;
      }
      h.content_length = n;
      have_length = true;
    } else if (name == "transfer-encoding") {
      h.chunked = true;
    } else if (name == "connection") {
      const std::string v = lower(value);
      if (v.find("close") != std::string::npos) h.close = true;
    } else if (name == "expect") {
      h.expect_continue = lower(value) == "100-continue";
    }
    h.fields.emplace_back(std::move(name), std::move(value));
  }
  if (h.version == "HTTP/1.0") {
    const std::string* c = h.field("connection");
    if (!c || lower(*c).find("keep-alive") == std::string::npos) h.close = true;
  }
  return h;
}

std::string media_type(std::string_view content_type) {
  return lower(trim(content_type.substr(0, content_type.find(';'))));
}

std::string host_without_port(std::string_view host) {
  host = trim(host);
  if (!host.empty() && host.front() == '[') {
    auto close = host.find(']');
    return close == std::string_view::npos ? std::string(host) : lower(host.substr(1, close - 1));
  }
  auto colon = host.find(':');
  return lower(host.substr(0, colon));
}

}  // namespace musacoder::service
