// API tokens of the service: who may call it and what each caller may do.
//
// A token is a random secret the client sends as `Authorization: Bearer <token>`. The
// server keeps only SHA-256(token): the token table (a file given with --tokens, or the
// environment variable MOOREEVAL_TOKENS) holds lines
//
//     <name> <scope> <sha256-hex-of-token>      # comments and blank lines are ignored
//
// made by `mooreeval token --name NAME --scope SCOPE`, which prints the token once. Jobs
// belong to the *name* of the token that submitted them, so several tokens may share a
// name (a key rotation, a read-only dashboard beside a trainer).
//
// Scopes, each including the ones before it:
//   read    read (GET, lookup, log) the jobs of its own name; list tasks; /metrics
//   submit  also submit jobs (POST /v1/jobs, /v1/batches, /v1/evaluate) and cancel its own
//   admin   also read and cancel every name's jobs
//
// Thread-safety: a TokenTable is immutable after load; lookups from any thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace musacoder::service {

enum class Scope { kRead = 0, kSubmit = 1, kAdmin = 2 };

const char* scope_name(Scope s);
Result<Scope> parse_scope(std::string_view name);

// The authenticated caller of one request.
struct Principal {
  std::string name;  // owner of the jobs it submits
  Scope scope = Scope::kRead;
  bool can(Scope needed) const { return static_cast<int>(scope) >= static_cast<int>(needed); }
};

class TokenTable {
 public:
  // Parses table text (see the file comment); `source` names it in error messages.
  static Result<TokenTable> parse(std::string_view text, const std::string& source);
  // Reads a table file.
  static Result<TokenTable> load(const std::string& path);

  // The principal of a presented token (the secret itself); nullopt when unknown.
  std::optional<Principal> authenticate(std::string_view token) const;
  std::size_t size() const { return by_hash_.size(); }

 private:
  std::map<std::string, Principal> by_hash_;  // sha256 hex -> principal
};

// A fresh token: "mev_" + 64 hex digits (256 bits from the OS entropy source).
std::string new_token();
// The line to add to a token table for `token`.
std::string token_table_line(const std::string& name, Scope scope, const std::string& token);

// The token of an "Authorization: Bearer <token>" header value; empty when malformed.
std::string bearer_token(std::string_view authorization);

// True for a loopback address literal (127.0.0.0/8, ::1) or "localhost".
bool is_loopback_host(const std::string& host);

}  // namespace musacoder::service
