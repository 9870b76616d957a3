#include "mooreeval/service/auth.h"

#include <arpa/inet.h>

#include <cctype>
#include <random>
#include <sstream>

#include "core/files.h"
#include "core/text.h"

namespace musacoder::service {

const char* scope_name(Scope s) {
  switch (s) {
    case Scope::kRead:
      return "read";
    case Scope::kSubmit:
      return "submit";
    case Scope::kAdmin:
      return "admin";
  }
  return "?";
}

Result<Scope> parse_scope(std::string_view name) {
  for (Scope s : {Scope::kRead, Scope::kSubmit, Scope::kAdmin})
    if (name == scope_name(s)) return s;
  return invalid_argument("unknown scope '" + sanitize_utf8(name) + "' (read | submit | admin)");
}

namespace {

bool is_sha256_hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '@'))
      return false;
  return true;
}

}  // namespace

Result<TokenTable> TokenTable::parse(std::string_view text, const std::string& source) {
  TokenTable table;
  std::istringstream in{std::string(text)};
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::string name, scope, digest, extra;
    if (!(fields >> name)) continue;  // blank or comment
    const std::string where = source + ":" + std::to_string(number) + ": ";
    if (!(fields >> scope >> digest) || (fields >> extra))
      return invalid_argument(where + "expected '<name> <scope> <sha256-hex>'");
    if (!valid_name(name))
      return invalid_argument(where + "token name must be 1-64 characters of [A-Za-z0-9._@-]");
    auto s = parse_scope(scope);
    if (!s.ok()) return invalid_argument(where + s.status().message());
    if (!is_sha256_hex(digest))
      return invalid_argument(where +
                              "the third field must be the token's SHA-256 (64 lowercase hex digits), never "
                              "the token itself");
    if (!table.by_hash_.emplace(digest, Principal{name, *s}).second)
      return invalid_argument(where + "the same token hash appears twice");
  }
  return table;
}

Result<TokenTable> TokenTable::load(const std::string& path) {
  auto text = read_file(path, 16u << 20);
  if (!text.ok()) return invalid_argument("--tokens: " + text.status().message());
  return parse(*text, path);
}

std::optional<Principal> TokenTable::authenticate(std::string_view token) const {
  if (token.empty()) return std::nullopt;
  // A map lookup by the digest: timing reveals at most which digests exist near the
  // presented one's, which does not help find a token (a preimage would be needed).
  auto it = by_hash_.find(sha256_hex(token));
  if (it == by_hash_.end()) return std::nullopt;
  return it->second;
}

std::string new_token() {
  std::random_device rd;  // the OS entropy source on Linux/glibc
  static constexpr char kHex[] = "0123456789abcdef";
  std::string t = "mev_";
  for (int i = 0; i < 8; ++i) {
    uint32_t word = rd();
    for (int j = 0; j < 8; ++j, word >>= 4) t.push_back(kHex[word & 0xf]);
  }
  return t;
}

std::string token_table_line(const std::string& name, Scope scope, const std::string& token) {
  return name + " " + scope_name(scope) + " " + sha256_hex(token);
}

std::string bearer_token(std::string_view v) {
  constexpr std::string_view kPrefix = "Bearer ";
  if (v.size() <= kPrefix.size()) return "";
  for (std::size_t i = 0; i < kPrefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(v[i])) != std::tolower(static_cast<unsigned char>(kPrefix[i])))
      return "";
  v.remove_prefix(kPrefix.size());
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return std::string(v);
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  in_addr a4{};
  if (::inet_pton(AF_INET, host.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  in6_addr a6{};
  if (::inet_pton(AF_INET6, host.c_str(), &a6) == 1) return IN6_IS_ADDR_LOOPBACK(&a6);
  return false;
}

}  // namespace musacoder::service
