// A small RAII client over hiredis (synchronous): binary-safe commands from an argument
// vector, replies as an owned tree, reconnect after a failure.
//
// Thread-safety: none; one RedisClient per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

struct redisContext;
struct redisReply;

namespace musacoder::service {

struct RedisEndpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  int db = 0;
  // Redis AUTH on every (re)connect when `password` is set: "AUTH user password" (Redis 6
  // ACL) with a user, else "AUTH password" (requirepass). Never part of the URL.
  std::string user;
  std::string password;
};

// "redis://HOST:PORT[/DB]" (IPv4 literal, name or [IPv6]); kInvalidArgument otherwise.
Result<RedisEndpoint> parse_redis_url(const std::string& url);

// An owned reply tree (type, integer, string and elements).
struct RedisValue {
  enum class Type { kNil, kString, kStatus, kError, kInteger, kArray };
  Type type = Type::kNil;
  std::string str;
  int64_t integer = 0;
  std::vector<RedisValue> elements;
  bool is_nil() const { return type == Type::kNil; }
};

class RedisClient {
 public:
  RedisClient(RedisEndpoint endpoint, std::chrono::milliseconds connect_timeout);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Runs one command; `timeout` bounds the wait for the reply (blocking commands need
  // more than their BLOCK time). A Redis error reply is kFailedPrecondition with its text;
  // a connection failure is kUnavailable (the next call reconnects).
  Result<RedisValue> command(const std::vector<std::string>& argv,
                             std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));

 private:
  Status connect();
  RedisEndpoint endpoint_;
  std::chrono::milliseconds connect_timeout_;
  redisContext* ctx_ = nullptr;  // owned; null when disconnected
};

}  // namespace musacoder::service
