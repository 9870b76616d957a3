#include "mooreeval/runner/sandboxed_warm_pool.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "core/text.h"
#include "mooreeval/runner/warm_runner.h"

namespace musacoder::eval {

namespace fs = std::filesystem;

struct SandboxedWarmPool::Member {
  std::optional<TempDir> dir;  // job/ and the warm runner's private dir
  fs::path job_dir;
  sandbox::JobSandbox jail;  // the member's uid, leased for its life
  std::shared_ptr<const run::WarmRunner> warm;
  bool busy = false;
};

namespace {

// Removes everything inside `dir` (not `dir`): entries the job made unreadable or
// unwritable are opened up first. False if something could not be removed.
bool empty_dir(const fs::path& dir) {
  std::error_code ec;
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool clean = true;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      if (!remove_tree(it->path()).ok()) clean = false;
    }
    if (ec) return false;
    if (clean) return true;
    // A job may chmod its own files; as their owner (or root) we may chmod them back.
    for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      std::error_code ch;
      if (it->is_directory(ch) && !it->is_symlink(ch))
        fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ch);
    }
    ec.clear();
  }
  return false;
}

}  // namespace

std::unique_ptr<SandboxedWarmPool> SandboxedWarmPool::start(WarmPoolOptions options) {
  std::unique_ptr<SandboxedWarmPool> pool(new SandboxedWarmPool(std::move(options)));
  const int n = std::max(0, pool->options_.size);
  std::vector<std::optional<Result<std::unique_ptr<Member>>>> started(n);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < n; ++i) threads.emplace_back([&, i] { started[i].emplace(pool->start_member()); });
  }
  for (auto& s : started) {
    if (s->ok()) {
      pool->members_.push_back(std::move(*s).value());
    } else if (pool->note_.empty()) {
      pool->note_ = s->status().message();
    }
  }
  return pool;
}

SandboxedWarmPool::SandboxedWarmPool(WarmPoolOptions options) : options_(std::move(options)) {}

SandboxedWarmPool::~SandboxedWarmPool() = default;

Result<std::unique_ptr<SandboxedWarmPool::Member>> SandboxedWarmPool::start_member() const {
  if (!options_.sandbox || !options_.sandbox->active())
    return failed_precondition("a sandboxed warm runner needs an active sandbox");
  auto m = std::make_unique<Member>();
  auto dir = TempDir::create("mooreeval-warm-sandbox-", options_.root);
  if (!dir.ok()) return dir.status();
  m->dir.emplace(std::move(dir).value());
  m->job_dir = fs::absolute(m->dir->path() / "job");
  std::error_code ec;
  fs::create_directory(m->job_dir, ec);
  if (ec) return internal_error("cannot create " + m->job_dir.string() + ": " + ec.message());
  auto jail = options_.sandbox->for_job();
  if (!jail.ok()) return jail.status();
  m->jail = std::move(jail).value();
  sandbox::SandboxJob job = options_.job;
  job.work_dir = m->job_dir;
  run::WarmRunnerSpec spec;
  spec.parent_dir = m->dir->path();
  spec.startup_deadline = options_.startup_deadline;
  const sandbox::JobSandbox& jail_ref = m->jail;  // stable: the member lives on the heap
  spec.sandbox = [&jail_ref, job](ProcessOptions p) { return jail_ref.wrap(std::move(p), job); };
  run::RunnerOptions runner = options_.runner;
  runner.warm.reset();
  auto warm = run::WarmRunner::start(runner, spec);
  if (!warm.ok()) return warm.status();
  m->warm = std::move(warm).value();
  return m;
}

Status SandboxedWarmPool::make_ready(Member& m) const {
  // The ping is answered only after the clean-up of the previous job (zygote.py, _sweep).
  // The log's head and tail: a traceback ends with what went wrong.
  if (!m.warm->healthy())
    return unavailable("it does not answer: " + truncate_middle(m.warm->log_tail(), 300));
  if (!empty_dir(m.job_dir))
    return internal_error("its job dir " + m.job_dir.string() + " cannot be emptied");
  // The job dir belongs to the member's uid (it writes its outputs there); in/ is ours.
  const bool root = ::geteuid() == 0;
  if ((root && ::chown(m.job_dir.c_str(), m.jail.uid(), m.jail.uid()) != 0) ||
      ::chmod(m.job_dir.c_str(), root ? 0711 : 0700) != 0 || ::mkdir((m.job_dir / "in").c_str(), 0755) != 0)
    return internal_error("cannot prepare its job dir " + m.job_dir.string() + ": " + std::strerror(errno));
  return {};
}

std::optional<SandboxedWarmPool::Lease> SandboxedWarmPool::acquire() {
  while (true) {
    Member* m = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      idle_cv_.wait(lock, [&] {
        auto idle = std::find_if(members_.begin(), members_.end(), [](const auto& c) { return !c->busy; });
        m = idle == members_.end() ? nullptr : idle->get();
        return m || members_.empty();
      });
      if (!m) return std::nullopt;  // no member left
      m->busy = true;
    }
    const Status ready = make_ready(*m);
    if (ready.ok()) return Lease(this, m);
    // Dead, or its job dir cannot be emptied: replace it (outside the lock: ~5 s).
    std::unique_ptr<Member> dead;
    bool replace = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = members_.begin(); it != members_.end(); ++it)
        if (it->get() == m) {
          dead = std::move(*it);
          members_.erase(it);
          break;
        }
      replace = replacements_ < options_.max_replacements;
      if (replace) ++replacements_;
    }
    std::fprintf(stderr, "mooreeval: a sandboxed warm runner is unusable (%s); %s\n", ready.message().c_str(),
                 replace ? "replacing it" : "not replaced");
    dead.reset();  // kills its zygote, frees its uid and dirs
    if (replace) {
      auto fresh = start_member();
      std::lock_guard<std::mutex> lock(mu_);
      if (fresh.ok()) {
        members_.push_back(std::move(fresh).value());
      } else {
        note_ = fresh.status().message();
      }
    }
    idle_cv_.notify_all();  // waiters re-check (the pool may be empty now)
  }
}

void SandboxedWarmPool::release(Member* m) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    m->busy = false;
  }
  idle_cv_.notify_one();
}

int SandboxedWarmPool::members() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(members_.size());
}

std::string SandboxedWarmPool::note() const {
  std::lock_guard<std::mutex> lock(mu_);
  return note_;
}

SandboxedWarmPool::Lease::Lease(Lease&& o) noexcept : pool_(o.pool_), member_(o.member_) {
  o.pool_ = nullptr;
  o.member_ = nullptr;
}

SandboxedWarmPool::Lease::~Lease() {
  if (pool_) pool_->release(member_);
}

const fs::path& SandboxedWarmPool::Lease::job_dir() const {
  return member_->job_dir;
}

fs::path SandboxedWarmPool::Lease::staged_path(const std::string& name) const {
  return member_->job_dir / "in" / name;
}

Result<fs::path> SandboxedWarmPool::Lease::stage(const fs::path& file, const std::string& name) const {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    return invalid_argument("bad staged file name '" + name + "'");
  const fs::path to = staged_path(name);
  std::error_code ec;
  fs::copy_file(file, to, fs::copy_options::overwrite_existing, ec);
  if (ec) return internal_error("cannot copy " + file.string() + " into the warm runner: " + ec.message());
  fs::permissions(to, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read, ec);
  return to;
}

run::RunnerOptions SandboxedWarmPool::Lease::runner_options() const {
  run::RunnerOptions r = pool_->options_.runner;
  r.warm = member_->warm;
  return r;
}

}  // namespace musacoder::eval
