#include "mooreeval/runner/resident_references.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "core/text.h"

namespace musacoder::eval {

struct ResidentReferences::Member {
  std::shared_ptr<const run::WarmRunner> server;  // null: gone, not replaced
  bool busy = false;
};

namespace {

// A server that is between jobs answers at once; one cleaning up after a job (gc, emptying
// the device's caching allocator) answers after that.
constexpr std::chrono::milliseconds kPingTimeout{10000};

}  // namespace

std::unique_ptr<ResidentReferences> ResidentReferences::start(ResidentReferenceOptions options) {
  std::unique_ptr<ResidentReferences> pool(new ResidentReferences(std::move(options)));
  const int n = std::max(0, pool->options_.size);
  std::vector<std::optional<Result<std::shared_ptr<const run::WarmRunner>>>> started(n);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < n; ++i) threads.emplace_back([&, i] { started[i].emplace(pool->start_server()); });
  }
  for (auto& s : started) {
    if (s->ok()) {
      auto m = std::make_unique<Member>();
      m->server = std::move(*s).value();
      pool->members_.push_back(std::move(m));
    } else if (pool->note_.empty()) {
      pool->note_ = s->status().message();
    }
  }
  return pool;
}

ResidentReferences::ResidentReferences(ResidentReferenceOptions options) : options_(std::move(options)) {}

ResidentReferences::~ResidentReferences() = default;  // ~WarmRunner kills each server

Result<std::shared_ptr<const run::WarmRunner>> ResidentReferences::start_server() const {
  run::RunnerOptions runner = options_.runner;
  runner.warm.reset();
  run::WarmRunnerSpec spec;
  spec.parent_dir = options_.root;
  spec.startup_deadline = options_.startup_deadline;
  spec.resident_device = options_.device;
  auto server = run::WarmRunner::start(runner, spec);
  if (!server.ok()) return server.status();
  return std::shared_ptr<const run::WarmRunner>(std::move(server).value());
}

std::optional<ResidentReferences::Lease> ResidentReferences::acquire() {
  while (true) {
    Member* m = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      idle_cv_.wait(lock, [&] {
        auto idle = std::find_if(members_.begin(), members_.end(), [](const auto& c) { return !c->busy; });
        m = idle == members_.end() ? nullptr : idle->get();
        return m || members_.empty();
      });
      if (!m) return std::nullopt;
      m->busy = true;
    }
    if (m->server->healthy(kPingTimeout)) return Lease(this, m);
    // It exited (a job past its deadline ends its server) or hangs: replace it, outside the
    // lock (seconds: torch and the device are set up again).
    const std::string said = m->server->log_tail();
    bool replace = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      replace = replacements_ < options_.max_replacements;
      if (replace) ++replacements_;
    }
    std::fprintf(stderr, "mooreeval: a resident reference runner does not answer (%s); %s\n",
                 truncate_middle(said, 300).c_str(), replace ? "replacing it" : "not replaced");
    m->server.reset();  // kills it
    auto fresh =
        replace ? start_server()
                : Result<std::shared_ptr<const run::WarmRunner>>(unavailable("the replacements are used up"));
    std::unique_lock<std::mutex> lock(mu_);
    if (fresh.ok()) {
      m->server = std::move(fresh).value();
      return Lease(this, m);  // still busy: ours
    }
    note_ = fresh.status().message();
    members_.erase(
        std::find_if(members_.begin(), members_.end(), [m](const auto& c) { return c.get() == m; }));
    lock.unlock();
    idle_cv_.notify_all();  // waiters re-check (the pool may be empty now)
  }
}

void ResidentReferences::release(Member* m) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    m->busy = false;
  }
  idle_cv_.notify_one();
}

int ResidentReferences::members() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(members_.size());
}

std::string ResidentReferences::note() const {
  std::lock_guard<std::mutex> lock(mu_);
  return note_;
}

ResidentReferences::Lease::Lease(Lease&& o) noexcept : pool_(o.pool_), member_(o.member_) {
  o.pool_ = nullptr;
  o.member_ = nullptr;
}

ResidentReferences::Lease::~Lease() {
  if (pool_) pool_->release(member_);
}

run::RunnerOptions ResidentReferences::Lease::runner_options() const {
  run::RunnerOptions r = pool_->options_.runner;
  r.warm = member_->server;
  return r;
}

}  // namespace musacoder::eval
