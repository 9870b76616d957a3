#include "train/rl/rollout.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "engine/engine.h"
#include "rl/prime_echo.h"

namespace musacoder::train::rl {
namespace {
using Clock = std::chrono::steady_clock;

uint64_t mix(uint64_t h, uint64_t v) {  // splitmix64 step: seeds that differ in any field differ everywhere
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  return h;
}
}  // namespace

std::vector<double> Trajectory::scores() const {
  std::vector<double> s;
  for (const auto& t : turns) s.push_back(t.reward.score);
  return s;
}

namespace {

// The shared state of one run(): trajectories, what is still pending, and the first error.
struct RunState {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Trajectory> traj;
  std::vector<const RolloutPrompt*> prompt_of;
  int pending = 0;
  Status error;
  Clock::time_point last_token{}, last_verdict{};
  RolloutStats* stats = nullptr;
};

class Driver {
 public:
  Driver(engine::Engine& e, RewardEnv& r, const ChatCodec& c, const RolloutOptions& o, int64_t step)
      : engine_(e), rewards_(r), codec_(c), o_(o), step_(step) {}
  RunState s;

  // Samples turn `turn` of trajectory i, whose ids end with the generation prompt.
  void sample_turn(std::size_t i) {
    Trajectory& t = s.traj[i];
    const int turn = static_cast<int>(t.turns.size());
    const RolloutPrompt& p = *s.prompt_of[i];
    if (o_.inject) {
      if (auto text = o_.inject(p.task->id, step_, t.sample, turn)) return finish_generation(i, *text, {}, {}, true);
    }
    engine::Request req;
    req.prompt_ids = t.ids;
    req.sampling.temperature = o_.temperature;
    req.sampling.top_p = o_.top_p;
    req.sampling.max_new_tokens = o_.max_new_tokens;
    req.sampling.seed = mix(mix(mix(mix(o_.seed, static_cast<uint64_t>(step_)), static_cast<uint64_t>(t.group)),
                                static_cast<uint64_t>(t.sample)), static_cast<uint64_t>(turn));
    engine_.submit(std::move(req), [this, i](const engine::RequestUpdate& u) {
      if (!u.finished) return;
      if (!u.output.status.ok() || u.output.samples.empty()) {
        return fail(Status(u.output.status.ok() ? internal_error("the engine returned no sample") : u.output.status));
      }
      const engine::Sample& smp = u.output.samples[0];
      finish_generation(i, smp.text, smp.token_ids, smp.raw_logprobs, false);
    });
  }

 private:
  void finish_generation(std::size_t i, const std::string& text, std::vector<int32_t> ids, std::vector<float> logp,
                         bool injected) {
    if (injected) {
      auto enc = codec_.encode_text(text);
      if (!enc.ok()) return fail(enc.status());
      ids = std::move(*enc);
      logp.assign(ids.size(), 0.0f);
    }
    {
      std::lock_guard lock(s.mu);
      Trajectory& t = s.traj[i];
      TurnRecord rec;
      rec.begin = static_cast<int64_t>(t.ids.size());
      t.ids.insert(t.ids.end(), ids.begin(), ids.end());
      t.rollout_logp.insert(t.rollout_logp.end(), logp.begin(), logp.end());
      rec.end = static_cast<int64_t>(t.ids.size());
      rec.response = text;
      rec.injected = injected;
      t.turns.push_back(std::move(rec));
      t.messages.push_back({"assistant", text});
      s.stats->generated_tokens += static_cast<int64_t>(ids.size());
      s.last_token = Clock::now();
    }
    verify(i);
  }

  void verify(std::size_t i) {
    RewardJob job;
    {
      std::lock_guard lock(s.mu);
      job = {s.prompt_of[i]->task->id, s.prompt_of[i]->task->path, s.traj[i].turns.back().response};
      ++s.stats->verify_jobs;
    }
    rewards_.submit(std::move(job), [this, i](Reward r) { on_reward(i, std::move(r)); });
  }

  void on_reward(std::size_t i, Reward r) {
    std::unique_lock lock(s.mu);
    Trajectory& t = s.traj[i];
    s.last_verdict = Clock::now();
    if (r.infra_error() && t.infra_retries < o_.infra_retries) {
      ++t.infra_retries;
      ++s.stats->infra_retries;
      lock.unlock();
      return verify(i);
    }
    t.turns.back().reward = std::move(r);
    if (t.turns.back().reward.infra_error()) {
      t.dropped = true;
      t.drop_reason = t.turns.back().reward.verdict.value("message", std::string("infra_error"));
      return done(lock);
    }
    ::musacoder::rl::PrimeEchoOptions pe;
    pe.max_turns = static_cast<std::size_t>(o_.max_turns);
    pe.stop_early_on_pass = o_.stop_on_pass;
    const auto scores = t.scores();
    if (!::musacoder::rl::should_continue(scores, pe)) return done(lock);
    auto facts = prompts::feedback_facts(t.turns.back().reward.verdict);
    prompts::Message fb = prompts::render_feedback(facts, codec_.prompt_options());
    const std::vector<int32_t> resp(t.ids.begin() + t.turns.back().begin, t.ids.end());
    auto tail = codec_.feedback_tail(t.messages, fb, resp);
    if (!tail.ok()) return fail_locked(tail.status(), lock);
    const auto next_len = static_cast<int64_t>(t.ids.size() + tail->size());
    if (next_len + std::min(o_.max_new_tokens, o_.min_turn_tokens) > engine_.max_model_len()) {
      t.context_stop = true;  // no room for another answer: the trajectory ends on this turn
      ++s.stats->context_stops;
      return done(lock);
    }
    t.ids.insert(t.ids.end(), tail->begin(), tail->end());
    t.rollout_logp.insert(t.rollout_logp.end(), tail->size(), 0.0f);
    t.messages.push_back(fb);
    lock.unlock();
    sample_turn(i);
  }

  // Notifies under the lock: run() may return and destroy this Driver as soon as the lock is released.
  void done(std::unique_lock<std::mutex>& lock) {
    --s.pending;
    s.cv.notify_all();
    lock.unlock();
  }
  void fail_locked(Status st, std::unique_lock<std::mutex>& lock) {
    if (s.error.ok()) s.error = std::move(st);
    done(lock);
  }
  void fail(Status st) {
    std::unique_lock lock(s.mu);
    fail_locked(std::move(st), lock);
  }

  engine::Engine& engine_;
  RewardEnv& rewards_;
  const ChatCodec& codec_;
  const RolloutOptions& o_;
  int64_t step_;
};

}  // namespace

Result<std::vector<Trajectory>> Rollout::run(const std::vector<RolloutPrompt>& prompts, int64_t step,
                                             RolloutStats& stats) {
  Driver d(engine_, rewards_, codec_, options_, step);
  d.s.stats = &stats;
  const int k = options_.samples_per_prompt;
  for (std::size_t g = 0; g < prompts.size(); ++g) {
    auto ids = codec_.encode_prompt(prompts[g].messages);
    if (!ids.ok()) return ids.status();
    for (int j = 0; j < k; ++j) {
      Trajectory t;
      t.group = static_cast<int>(g);
      t.sample = j;
      t.ids = *ids;
      t.rollout_logp.assign(ids->size(), 0.0f);
      t.messages = prompts[g].messages;
      d.s.traj.push_back(std::move(t));
      d.s.prompt_of.push_back(&prompts[g]);
    }
  }
  const auto t0 = Clock::now();
  d.s.pending = static_cast<int>(d.s.traj.size());
  d.s.last_token = d.s.last_verdict = t0;
  for (std::size_t i = 0; i < d.s.traj.size(); ++i) d.sample_turn(i);
  std::unique_lock lock(d.s.mu);
  d.s.cv.wait(lock, [&] { return d.s.pending == 0; });
  stats.generate_seconds += std::chrono::duration<double>(d.s.last_token - t0).count();
  stats.verify_wait_seconds += std::max(0.0, std::chrono::duration<double>(d.s.last_verdict - d.s.last_token).count());
  if (!d.s.error.ok()) return d.s.error;
  return std::move(d.s.traj);
}

}  // namespace musacoder::train::rl
