#include "mooreeval/service/redis_client.h"

#include <hiredis.h>
#include <sys/time.h>

#include <charconv>

namespace musacoder::service {

namespace {

bool parse_int(const std::string& s, int& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

RedisValue convert(const redisReply* r) {
  RedisValue v;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      v.type = RedisValue::Type::kString;
      v.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      v.type = RedisValue::Type::kStatus;
      v.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      v.type = RedisValue::Type::kError;
      v.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      v.type = RedisValue::Type::kInteger;
      v.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      v.type = RedisValue::Type::kArray;
      for (std::size_t i = 0; i < r->elements; ++i) v.elements.push_back(convert(r->element[i]));
      break;
    default:
      v.type = RedisValue::Type::kNil;
  }
  return v;
}

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

}  // namespace

Result<RedisEndpoint> parse_redis_url(const std::string& url) {
  const std::string scheme = "redis://";
  auto bad = [&](const std::string& why) {
    return invalid_argument("--queue '" + url + "': " + why + " (expected redis://HOST:PORT[/DB])");
  };
  if (url.rfind(scheme, 0) != 0) return bad("not a redis:// URL");
  std::string rest = url.substr(scheme.size());
  RedisEndpoint e;
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    std::string db = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    if (!db.empty() && (!parse_int(db, e.db) || e.db < 0)) return bad("bad database number");
  }
  std::string host, port;
  if (!rest.empty() && rest[0] == '[') {
    auto close = rest.find(']');
    if (close == std::string::npos) return bad("unclosed [IPv6] host");
    host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') return bad("junk after host");
      port = rest.substr(close + 2);
    }
  } else {
    auto colon = rest.rfind(':');
    host = rest.substr(0, colon);
    if (colon != std::string::npos) port = rest.substr(colon + 1);
  }
  if (host.empty()) return bad("no host");
  if (host.find('@') != std::string::npos) return bad("credentials in the URL are not supported");
  e.host = host;
  if (!port.empty() && (!parse_int(port, e.port) || e.port < 1 || e.port > 65535)) return bad("bad port");
  return e;
}

RedisClient::RedisClient(RedisEndpoint endpoint, std::chrono::milliseconds connect_timeout)
    : endpoint_(std::move(endpoint)), connect_timeout_(connect_timeout) {}

RedisClient::~RedisClient() {
  if (ctx_) redisFree(ctx_);
}

Status RedisClient::connect() {
  if (ctx_) return {};
  redisContext* c =
      redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, to_timeval(connect_timeout_));
  if (!c || c->err) {
    std::string msg = c ? c->errstr : "out of memory";
    if (c) redisFree(c);
    return unavailable("cannot connect to redis at " + endpoint_.host + ":" + std::to_string(endpoint_.port) +
                       ": " + msg);
  }
  ctx_ = c;
  if (!endpoint_.password.empty()) {
    std::vector<std::string> auth = {"AUTH"};
    if (!endpoint_.user.empty()) auth.push_back(endpoint_.user);
    auth.push_back(endpoint_.password);
    auto r = command(auth);
    if (!r.ok()) {
      redisFree(ctx_);
      ctx_ = nullptr;
      // The reply names the failure (WRONGPASS ...); the password never appears in it.
      return failed_precondition("redis at " + endpoint_.host + ":" + std::to_string(endpoint_.port) +
                                 " refused the credentials: " + r.status().message());
    }
  }
  if (endpoint_.db != 0) {
    auto r = command({"SELECT", std::to_string(endpoint_.db)});
    if (!r.ok()) return r.status();
  }
  return {};
}

Result<RedisValue> RedisClient::command(const std::vector<std::string>& argv,
                                        std::chrono::milliseconds timeout) {
  MC_RETURN_IF_ERROR(connect());
  redisSetTimeout(ctx_, to_timeval(timeout));
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const auto& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(ctx_, static_cast<int>(argv.size()), args.data(), lens.data()));
  if (!reply) {
    std::string msg = ctx_->errstr;
    redisFree(ctx_);
    ctx_ = nullptr;
    return unavailable("redis " + (argv.empty() ? std::string("?") : argv[0]) + ": " + msg);
  }
  RedisValue v = convert(reply);
  freeReplyObject(reply);
  if (v.type == RedisValue::Type::kError) return failed_precondition("redis " + argv[0] + ": " + v.str);
  return v;
}

}  // namespace musacoder::service
