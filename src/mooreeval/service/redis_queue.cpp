#include "mooreeval/service/redis_queue.h"

#include <cstdio>
#include <iostream>
#include <map>

namespace musacoder::service {

namespace {

using ms = std::chrono::milliseconds;

struct Keys {
  std::string jobs, results, workers_group, server_group, prefix;
  explicit Keys(const std::string& p)
      : jobs(p + ":jobs"),
        results(p + ":results"),
        workers_group(p + "-workers"),
        server_group(p + "-server"),
        prefix(p) {}
  std::string cancelled(const std::string& id) const { return prefix + ":cancelled:" + id; }
  std::string worker(const std::string& name) const { return prefix + ":worker:" + name; }
};

struct Entry {
  std::string id;
  std::map<std::string, std::string> fields;
};

// [[id, [f, v, ...]], ...] -> entries; entries deleted meanwhile come back with nil fields.
std::vector<Entry> parse_entries(const RedisValue& list) {
  std::vector<Entry> out;
  for (const auto& e : list.elements) {
    if (e.elements.size() != 2 || e.elements[1].type != RedisValue::Type::kArray) continue;
    Entry entry{e.elements[0].str, {}};
    const auto& kv = e.elements[1].elements;
    for (std::size_t i = 0; i + 1 < kv.size(); i += 2) entry.fields[kv[i].str] = kv[i + 1].str;
    out.push_back(std::move(entry));
  }
  return out;
}

// XREADGROUP reply: nil on timeout, else [[stream, entries]].
std::vector<Entry> parse_read(const RedisValue& v) {
  if (v.type != RedisValue::Type::kArray || v.elements.empty()) return {};
  const auto& stream = v.elements[0];
  if (stream.elements.size() != 2) return {};
  return parse_entries(stream.elements[1]);
}

Status ensure_group(RedisClient& c, const std::string& stream, const std::string& group) {
  auto r = c.command({"XGROUP", "CREATE", stream, group, "0", "MKSTREAM"});
  if (!r.ok() && r.status().message().find("BUSYGROUP") == std::string::npos) return r.status();
  return {};
}

std::string get(const Entry& e, const char* field) {
  auto it = e.fields.find(field);
  return it == e.fields.end() ? std::string() : it->second;
}

class RedisSource final : public WorkSource {
 public:
  RedisSource(const RedisQueueOptions& o, RedisEndpoint ep, std::string consumer)
      : options_(o),
        keys_(o.prefix),
        client_(std::move(ep), o.connect_timeout),
        consumer_(std::move(consumer)) {}

  Status init() {
    MC_RETURN_IF_ERROR(ensure_group(client_, keys_.jobs, keys_.workers_group));
    return ensure_group(client_, keys_.results, keys_.server_group);
  }

  Result<std::optional<Delivery>> next(ms wait) override {
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_reclaim_) {
      auto claimed = reclaim();
      if (!claimed.ok()) return claimed.status();
      if (*claimed) return claimed;
    }
    auto r = client_.command(
        {"XREADGROUP", "GROUP", keys_.workers_group, consumer_, "COUNT", "1", "BLOCK",
         std::to_string(std::max<long>(1, static_cast<long>(wait.count()))), "STREAMS", keys_.jobs, ">"},
        wait + ms(5000));
    if (!r.ok()) return r.status();
    for (auto& e : parse_read(*r)) return std::optional<Delivery>(to_delivery(e, 1));
    return std::optional<Delivery>();
  }

  Result<bool> is_cancelled(const std::string& job_id) override {
    auto r = client_.command({"EXISTS", keys_.cancelled(job_id)});
    if (!r.ok()) return r.status();
    return r->integer > 0;
  }

  Status started(const Delivery& d, const std::string& worker) override {
    auto r = client_.command({"XADD", keys_.results, "*", "type", "started", "job_id", d.job.job_id, "entry",
                              d.receipt, "worker", worker, "attempt", std::to_string(d.deliveries)});
    return r.ok() ? Status() : r.status();
  }

  Status complete(const Delivery& d, const ResultMessage& m) override {
    auto r = client_.command({"XADD", keys_.results, "*", "type", "result", "job_id", m.job_id, "entry",
                              d.receipt, "worker", m.worker, "verdict", m.verdict, "reward",
                              m.reward ? std::to_string(*m.reward) : std::string(), "verdict_json",
                              m.verdict_json});
    return r.ok() ? Status() : r.status();
  }

  Status drop(const Delivery& d) override {
    auto r = client_.command({"XACK", keys_.jobs, keys_.workers_group, d.receipt});
    if (!r.ok()) return r.status();
    r = client_.command({"XDEL", keys_.jobs, d.receipt});
    return r.ok() ? Status() : r.status();
  }

  Status keep_alive(const std::vector<std::pair<std::string, std::string>>& in_flight) override {
    for (const auto& [receipt, consumer] : in_flight) {
      // Re-claim only what this consumer still owns: after a reclaim by another worker
      // the job is theirs (its result is the one that counts first).
      auto p = client_.command({"XPENDING", keys_.jobs, keys_.workers_group, receipt, receipt, "1"});
      if (!p.ok()) return p.status();
      if (p->elements.empty() || p->elements[0].elements.size() < 4 ||
          p->elements[0].elements[1].str != consumer)
        continue;
      auto c = client_.command({"XCLAIM", keys_.jobs, keys_.workers_group, consumer, "0", receipt, "JUSTID"});
      if (!c.ok()) return c.status();
    }
    return {};
  }

  Status heartbeat(const std::string& worker, int slots) override {
    auto r = client_.command({"SET", keys_.worker(worker), std::to_string(slots), "PX",
                              std::to_string(options_.heartbeat_ttl.count())});
    return r.ok() ? Status() : r.status();
  }

 private:
  Delivery to_delivery(const Entry& e, int deliveries) {
    Delivery d;
    d.job.job_id = get(e, "job_id");
    d.job.task_id = get(e, "task");
    d.job.label = get(e, "label");
    d.job.candidate = get(e, "candidate");
    d.deliveries = deliveries;
    d.receipt = e.id;
    return d;
  }

  // One pending job idle longer than the visibility timeout, taken over by this consumer.
  Result<std::optional<Delivery>> reclaim() {
    auto r = client_.command({"XAUTOCLAIM", keys_.jobs, keys_.workers_group, consumer_,
                              std::to_string(options_.visibility_timeout.count()), cursor_, "COUNT", "1"});
    if (!r.ok()) return r.status();
    if (r->elements.size() < 2) return internal_error("redis XAUTOCLAIM: unexpected reply");
    cursor_ = r->elements[0].str;
    if (cursor_ == "0-0" || cursor_.empty()) {
      cursor_ = "0-0";
      next_reclaim_ = std::chrono::steady_clock::now() + std::max(ms(100), options_.visibility_timeout / 4);
    }
    for (auto& e : parse_entries(r->elements[1])) {
      auto p = client_.command({"XPENDING", keys_.jobs, keys_.workers_group, e.id, e.id, "1"});
      if (!p.ok()) return p.status();
      int deliveries = 2;
      if (!p->elements.empty() && p->elements[0].elements.size() >= 4)
        deliveries = static_cast<int>(p->elements[0].elements[3].integer);
      return std::optional<Delivery>(to_delivery(e, deliveries));
    }
    return std::optional<Delivery>();
  }

  RedisQueueOptions options_;
  Keys keys_;
  RedisClient client_;
  std::string consumer_;
  std::string cursor_ = "0-0";
  std::chrono::steady_clock::time_point next_reclaim_{};
};

}  // namespace

Result<std::unique_ptr<WorkSource>> open_redis_source(const RedisQueueOptions& options,
                                                      const std::string& consumer) {
  auto ep = parse_redis_url(options.url);
  if (!ep.ok()) return ep.status();
  ep->user = options.user;
  ep->password = options.password;
  auto src = std::make_unique<RedisSource>(options, *ep, consumer);
  MC_RETURN_IF_ERROR(src->init());
  return std::unique_ptr<WorkSource>(std::move(src));
}

RedisQueue::RedisQueue(RedisQueueOptions options, ResultSink& sink)
    : options_(std::move(options)), sink_(sink) {}

RedisQueue::~RedisQueue() {
  shutdown();
}

Status RedisQueue::start() {
  auto ep = parse_redis_url(options_.url);
  if (!ep.ok()) return ep.status();
  endpoint_ = *ep;
  endpoint_.user = options_.user;
  endpoint_.password = options_.password;
  producer_ = std::make_unique<RedisClient>(endpoint_, options_.connect_timeout);
  Keys k(options_.prefix);
  MC_RETURN_IF_ERROR(ensure_group(*producer_, k.jobs, k.workers_group));
  MC_RETURN_IF_ERROR(ensure_group(*producer_, k.results, k.server_group));
  collector_ = std::thread([this] { collect_loop(); });
  return {};
}

void RedisQueue::shutdown() {
  stop_ = true;
  if (collector_.joinable()) collector_.join();
}

Status RedisQueue::enqueue(const std::vector<JobMessage>& jobs) {
  std::lock_guard<std::mutex> lock(producer_mu_);
  if (!producer_) return unavailable("redis queue not started");
  Keys k(options_.prefix);
  for (const auto& j : jobs) {
    auto r = producer_->command({"XADD", k.jobs, "*", "job_id", j.job_id, "task", j.task_id, "label", j.label,
                                 "candidate", j.candidate});
    if (!r.ok()) return r.status();
  }
  return {};
}

Status RedisQueue::cancel(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(producer_mu_);
  if (!producer_) return unavailable("redis queue not started");
  auto r = producer_->command({"SET", Keys(options_.prefix).cancelled(job_id), "1", "PX",
                               std::to_string(options_.cancel_ttl.count())});
  return r.ok() ? Status() : r.status();
}

Result<int64_t> RedisQueue::fleet_workers() {
  std::lock_guard<std::mutex> lock(producer_mu_);
  if (!producer_) return unavailable("redis queue not started");
  int64_t n = 0;
  std::string cursor = "0";
  do {
    auto r =
        producer_->command({"SCAN", cursor, "MATCH", Keys(options_.prefix).worker("*"), "COUNT", "1000"});
    if (!r.ok()) return r.status();
    if (r->elements.size() != 2) return internal_error("redis SCAN: unexpected reply");
    cursor = r->elements[0].str;
    // Each heartbeat holds its process's thread count: the sum is the fleet's slots.
    std::vector<std::string> mget = {"MGET"};
    for (const auto& key : r->elements[1].elements) mget.push_back(key.str);
    if (mget.size() == 1) continue;
    auto values = producer_->command(mget);
    if (!values.ok()) return values.status();
    for (const auto& v : values->elements)
      if (v.type == RedisValue::Type::kString) n += std::atoll(v.str.c_str());
  } while (cursor != "0");
  return n;
}

void RedisQueue::collect_loop() {
  Keys k(options_.prefix);
  RedisClient client(endpoint_, options_.connect_timeout);
  bool pending_phase = true;  // first re-read what this collector had read but not acked
  while (!stop_) {
    std::vector<std::string> cmd = {"XREADGROUP", "GROUP", k.server_group, "collector", "COUNT", "128"};
    if (!pending_phase) cmd.insert(cmd.end(), {"BLOCK", "500"});
    cmd.insert(cmd.end(), {"STREAMS", k.results, pending_phase ? "0" : ">"});
    auto r = client.command(cmd, ms(10000));
    if (!r.ok()) {
      std::cerr << "mooreeval serve: results collector: " << r.status().message() << " (retrying)\n";
      std::this_thread::sleep_for(ms(500));
      pending_phase = true;
      continue;
    }
    auto entries = parse_read(*r);
    if (pending_phase && entries.empty()) {
      pending_phase = false;
      continue;
    }
    for (const auto& e : entries) {
      const std::string type = get(e, "type"), job_id = get(e, "job_id"), entry = get(e, "entry");
      bool done = true;
      if (type == "started") {
        sink_.started(job_id, get(e, "worker"), std::atoi(get(e, "attempt").c_str()));
      } else if (type == "result") {
        ResultMessage m{job_id, get(e, "worker"), get(e, "verdict"), std::nullopt, get(e, "verdict_json")};
        if (std::string reward = get(e, "reward"); !reward.empty())
          m.reward = std::strtod(reward.c_str(), nullptr);
        auto outcome = sink_.commit(m);
        done = outcome.ok();
        if (!done) {
          std::cerr << "mooreeval serve: cannot store result of " << job_id << ": "
                    << outcome.status().message() << " (retrying)\n";
        } else if (!entry.empty()) {
          // Committed: now, and only now, the job is acknowledged.
          auto a = client.command({"XACK", k.jobs, k.workers_group, entry});
          if (a.ok()) a = client.command({"XDEL", k.jobs, entry});
          done = a.ok();
        }
      }
      if (done) {
        auto a = client.command({"XACK", k.results, k.server_group, e.id});
        if (a.ok()) a = client.command({"XDEL", k.results, e.id});
        done = a.ok();
      }
      if (!done) {
        pending_phase = true;
        std::this_thread::sleep_for(ms(200));
        break;
      }
    }
  }
}

}  // namespace musacoder::service
