// One RL step: prompts → rollouts → credit → BDR → MirrorPop → PPO-clip + KL update (trainer.h lists the order).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <random>

#include "rl/advantages.h"
#include "rl/policy_loss.h"
#include "train/rl/credit.h"
#include "train/rl/model_copies.h"
#include "train/rl/policy_update.h"
#include "train/rl/rollout.h"
#include "train/rl/run_state.h"

namespace musacoder::train::rl {
namespace mrl = ::musacoder::rl;
namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// --- prompts -------------------------------------------------------------------------------------------------

// Task index at stream position `pos`: each epoch is a permutation of the tasks seeded by (seed, epoch),
// drawn from mt19937_64 output directly so every standard library gives the same order.
std::size_t task_at(const RlRun& r, int64_t pos) {
  const auto n = static_cast<int64_t>(r.tasks.size());
  std::vector<std::size_t> order(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 rng(r.o.seed ^ (0x5eedULL * static_cast<uint64_t>(pos / n + 1)));
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  return order[static_cast<std::size_t>(pos % n)];
}

const RlTask* find_task(const RlRun& r, const std::string& id) {
  for (const auto& t : r.tasks) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

std::vector<prompts::Message> task_messages(const RlRun& r, const RlTask& t) {
  return prompts::render_task({t.source, t.description}, r.codec->prompt_options());
}

// BDR's repair task (the paper's variant): the task, the first failed attempt as the assistant's answer, and its
// verdict as the feedback turn.
RolloutPrompt repair_prompt(const RlRun& r, const RlTask& t, const mrl::BufferedPrompt& b) {
  RolloutPrompt p{&t, task_messages(r, t), true};
  if (b.failed_attempts.empty()) return p;
  const mrl::Attempt& a = b.failed_attempts.front();
  p.messages.push_back({"assistant", a.code});  // the response as the model wrote it
  auto verdict = nlohmann::json::parse(a.verdict, nullptr, false);
  p.messages.push_back(prompts::render_feedback(prompts::feedback_facts(verdict), r.codec->prompt_options()));
  return p;
}

std::vector<RolloutPrompt> step_prompts(const RlRun& r) {
  std::vector<RolloutPrompt> out;
  for (int i = 0; i < r.o.prompts_per_step; ++i) {
    const RlTask& t = r.tasks[task_at(r, r.step * r.o.prompts_per_step + i)];
    out.push_back({&t, task_messages(r, t), false});
  }
  if (!r.bdr) return out;
  for (const auto& id : r.bdr->due(static_cast<std::size_t>(r.step))) {
    const RlTask* t = find_task(r, id);
    const mrl::BufferedPrompt* b = r.bdr->find(id);
    if (t && b) out.push_back(repair_prompt(r, *t, *b));
  }
  return out;
}

// --- BDR -----------------------------------------------------------------------------------------------------

mrl::ScoredGroup scored_group(const std::vector<Trajectory>& traj, std::size_t g, int k, const std::string& id) {
  mrl::ScoredGroup s{id, {}};
  for (std::size_t i = g * static_cast<std::size_t>(k); i < (g + 1) * static_cast<std::size_t>(k); ++i) {
    if (traj[i].dropped || traj[i].turns.empty()) continue;
    double best = 0;
    for (double x : traj[i].scores()) best = std::max(best, x);
    s.attempts.push_back({traj[i].turns.front().response, traj[i].turns.front().reward.verdict.dump(), best});
  }
  return s;
}

struct GroupCounts {
  int64_t groups = 0, in_update = 0, buffered = 0, recovered = 0, retried = 0;
};

// Which groups join the update: without BDR all; with BDR regular groups with signal and recovered retries.
Result<std::vector<uint8_t>> decide_groups(RlRun& r, const std::vector<RolloutPrompt>& prompts,
                                           const std::vector<Trajectory>& traj, GroupCounts& c) {
  std::vector<uint8_t> join(prompts.size(), 1);
  c.groups = static_cast<int64_t>(prompts.size());
  for (std::size_t g = 0; g < prompts.size() && r.bdr; ++g) {
    mrl::ScoredGroup s = scored_group(traj, g, r.o.samples_per_prompt, prompts[g].task->id);
    if (s.attempts.empty()) {
      join[g] = 0;
      continue;
    }
    if (prompts[g].retry) {
      ++c.retried;
      auto o = r.bdr->report_retry(s);
      if (!o.ok()) return invalid_argument("BDR: " + o.status().message());
      join[g] = o.value() == mrl::RetryOutcome::kRecovered;
      c.recovered += join[g];
    } else {
      auto o = r.bdr->offer(s);
      if (!o.ok()) return invalid_argument("BDR: " + o.status().message());
      join[g] = o.value() == mrl::OfferOutcome::kHasSignal;
      c.buffered += o.value() == mrl::OfferOutcome::kBuffered;
    }
  }
  for (uint8_t j : join) c.in_update += j;
  if (r.bdr) r.bdr->record_update_groups(static_cast<std::size_t>(c.in_update));
  return join;
}

// --- rows ----------------------------------------------------------------------------------------------------

struct Rows {
  std::vector<RowTokens> tokens;
  std::vector<std::size_t> traj;       // trajectory index of each row
  RowValues rollout_logp;              // per row, per target
  std::vector<double> group_pass_rate; // per row
  std::vector<uint8_t> injected_target;  // per row: 1 when any turn was injected (no rollout logprobs)
};

double group_pass_rate(const std::vector<Trajectory>& traj, std::size_t g, int k) {
  int passed = 0, kept = 0;
  for (std::size_t i = g * static_cast<std::size_t>(k); i < (g + 1) * static_cast<std::size_t>(k); ++i) {
    if (traj[i].dropped) continue;
    ++kept;
    for (const auto& t : traj[i].turns) {
      if (t.reward.passed()) {
        ++passed;
        break;
      }
    }
  }
  return kept ? static_cast<double>(passed) / kept : 0.0;
}

Rows update_rows(const std::vector<Trajectory>& traj, const std::vector<SampleCredit>& credit,
                 const std::vector<uint8_t>& join, int k) {
  Rows rows;
  for (std::size_t i = 0; i < traj.size(); ++i) {
    const std::size_t g = i / static_cast<std::size_t>(k);
    const bool any = std::any_of(credit[i].mask.begin(), credit[i].mask.end(), [](uint8_t m) { return m != 0; });
    if (!join[g] || !credit[i].in_update || !any) continue;
    rows.tokens.push_back({traj[i].ids, credit[i].mask, credit[i].advantage});
    rows.traj.push_back(i);
    std::vector<double> lp;
    for (std::size_t t = 1; t < traj[i].ids.size(); ++t) lp.push_back(traj[i].rollout_logp[t]);
    rows.rollout_logp.push_back(std::move(lp));
    rows.group_pass_rate.push_back(group_pass_rate(traj, g, k));
    bool inj = false;
    for (const auto& t : traj[i].turns) inj = inj || t.injected;
    rows.injected_target.push_back(inj);
  }
  return rows;
}

// --- MirrorPop -----------------------------------------------------------------------------------------------

struct PopOutcome {
  std::vector<std::size_t> keep;  // rows trained
  double mean_divergence = 0;
};

Result<PopOutcome> mirror_pop(RlRun& r, const Rows& rows, const TokenBatch& batch, const RowValues& old_logp) {
  PopOutcome out;
  for (std::size_t i = 0; i < rows.tokens.size(); ++i) out.keep.push_back(i);
  if (!r.pop || rows.tokens.empty()) return out;
  const mrl::TokenBatchShape shape{static_cast<std::size_t>(batch.rows), static_cast<std::size_t>(batch.cols)};
  const std::vector<double> logp = to_grid(old_logp, batch);
  std::vector<uint8_t> keep;
  if (r.o.mirrorpop_mode == "paper") {
    std::vector<double> ratio = logp;
    const std::vector<double> roll = to_grid(rows.rollout_logp, batch);
    for (std::size_t c = 0; c < ratio.size(); ++c) {
      const std::size_t row = c / static_cast<std::size_t>(batch.cols);
      ratio[c] = rows.injected_target[row] ? 0.0 : ratio[c] - roll[c];  // injected text has no rollout logprobs
    }
    auto m = mrl::paper_sequence_mask(ratio, batch.mask, shape, r.o.mirrorpop_delta);
    if (!m.ok()) return invalid_argument("MirrorPop (paper): " + m.status().message());
    keep = m.value();
  } else {
    const std::vector<double> mirror =
        to_grid(score_rows(*r.mirror, *r.forward, rows.tokens, r.shape), batch);
    auto div = mrl::sequence_divergence(logp, mirror, batch.mask, shape);
    if (!div.ok()) return invalid_argument("MirrorPop divergence: " + div.status().message());
    std::vector<mrl::SampleSignal> s;
    for (std::size_t i = 0; i < rows.tokens.size(); ++i) {
      s.push_back({div.value()[i], rows.group_pass_rate[i], batch.tokens[i]});
      out.mean_divergence += div.value()[i] / static_cast<double>(rows.tokens.size());
    }
    auto f = r.pop->filter(s);
    if (!f.ok()) return invalid_argument("MirrorPop: " + f.status().message());
    keep = f.value().keep;
  }
  out.keep.clear();
  for (std::size_t i = 0; i < keep.size(); ++i) {
    if (keep[i]) out.keep.push_back(i);
  }
  return out;
}

// --- update --------------------------------------------------------------------------------------------------

mrl::PolicyLossOptions loss_options(const RlOptions& o) {
  mrl::PolicyLossOptions p;
  p.clip = {o.clip_low, o.clip_high};
  p.kl = {mrl::KlEstimator::kK3, o.kl_coef};
  if (o.algorithm == "dr_grpo") p.aggregation = mrl::LossAggregation::kSequenceSumOverMaxLen;
  return p;
}

Result<LossStats> update_policy(RlRun& r, const Rows& rows, const std::vector<std::size_t>& keep,
                                const RowValues& old_all, const RowValues& ref_all, double& grad_norm) {
  LossStats last;
  if (keep.empty()) return last;
  const std::vector<RowTokens> kept = pick(rows.tokens, keep);
  TokenBatch batch = make_token_batch(kept, r.device);
  const RowValues old = pick(old_all, keep), ref = ref_all.empty() ? RowValues() : pick(ref_all, keep);
  for (int e = 0; e < r.o.ppo_epochs; ++e) {
    // Before the first optimizer step the policy is the one that scored old_logp.
    const RowValues logp = e == 0 ? old : score_rows(*r.policy, *r.forward, kept, r.shape);
    auto l =
        backward_policy_loss(*r.policy, *r.forward, kept, batch, logp, old, ref, loss_options(r.o), r.shape);
    if (!l.ok()) return l.status();
    last = *l;
    r.opt->accumulate_grads();
    grad_norm = r.opt->clip_grad_norm(r.o.max_grad_norm).item<double>();
    MC_RETURN_IF_ERROR(r.engine->update_weights([&](model::Decoder&) {
      r.opt->step(r.o.learning_rate);
      return Status();
    }));
  }
  return last;
}

Status update_mirror(RlRun& r) {
  if (!r.ema || !r.mirror) return {};
  if (auto d = r.ema->decay_at(static_cast<std::size_t>(r.step))) return ema_update_model(*r.mirror, *r.policy, *d);
  return {};
}

// --- metrics -------------------------------------------------------------------------------------------------

void rollout_metrics(const std::vector<Trajectory>& traj, int max_turns, Scalars& s) {
  std::vector<double> best;
  std::map<std::string, double> verdicts;
  std::vector<int> reached(static_cast<std::size_t>(max_turns), 0), passed(static_cast<std::size_t>(max_turns), 0);
  double speedup_sum = 0, speedups = 0, length = 0, turns = 0, dropped = 0;
  for (const auto& t : traj) {
    if (t.dropped) {
      ++dropped;
      continue;
    }
    double b = 0;
    for (std::size_t j = 0; j < t.turns.size(); ++j) {
      const Reward& rw = t.turns[j].reward;
      b = std::max(b, rw.score);
      verdicts[rw.verdict_class] += 1;
      ++reached[j];
      passed[j] += rw.passed();
      if (rw.passed() && rw.verdict.contains("speedup") && rw.verdict["speedup"].is_number()) {
        speedup_sum += rw.verdict["speedup"].get<double>();
        ++speedups;
      }
      length += static_cast<double>(t.turns[j].end - t.turns[j].begin);
      ++turns;
    }
    best.push_back(b);
  }
  double mean = 0, var = 0;
  for (double x : best) mean += x / std::max<double>(1, static_cast<double>(best.size()));
  for (double x : best) var += (x - mean) * (x - mean) / std::max<double>(1, static_cast<double>(best.size()));
  s.push_back({"reward/mean", mean});
  s.push_back({"reward/std", std::sqrt(var)});
  for (int j = 0; j < max_turns; ++j) {
    const auto u = static_cast<std::size_t>(j);
    s.push_back({"pass_rate/turn" + std::to_string(j + 1), reached[u] ? static_cast<double>(passed[u]) / reached[u] : 0.0});
  }
  s.push_back({"pass_rate/first_turn", reached[0] ? static_cast<double>(passed[0]) / reached[0] : 0.0});
  for (const char* v : {"ok", "format_error", "compile_error", "runtime_error", "timeout", "wrong_answer", "illegal",
                        "infra_error"}) {
    s.push_back({std::string("verdicts/") + v, verdicts[v]});
  }
  s.push_back({"speedup/passing_mean", speedups ? speedup_sum / speedups : 0.0});
  s.push_back({"response_length", turns ? length / turns : 0.0});
  s.push_back({"samples/dropped_infra", dropped});
}

void component_metrics(const RlRun& r, Scalars& s) {
  if (r.bdr) {
    const auto c = r.bdr->counters();
    s.push_back({"bdr/buffer_size", static_cast<double>(c.buffered)});
    s.push_back({"bdr/recovered_groups", static_cast<double>(c.recovered_groups)});
    s.push_back({"bdr/recovered_share", c.recovered_share()});
    s.push_back({"bdr/evicted", static_cast<double>(c.evicted_stale + c.evicted_capacity)});
    s.push_back({"bdr/retries", static_cast<double>(c.retries)});
  }
  if (r.pop) {
    const auto& c = r.pop->counters();
    s.push_back({"mirrorpop/learned", static_cast<double>(c.learned)});
    s.push_back({"mirrorpop/learned_share", c.samples_seen ? static_cast<double>(c.learned) / c.samples_seen : 0.0});
    s.push_back({"mirrorpop/skipped", static_cast<double>(c.skipped)});
    s.push_back({"mirrorpop/samples_seen", static_cast<double>(c.samples_seen)});
    s.push_back({"mirrorpop/compute_saved", c.compute_saved()});
  }
}

// One line per trajectory in <output_dir>/samples.jsonl: what was generated, scored and credited.
Status log_samples(const RlRun& r, const std::vector<RolloutPrompt>& prompts, const std::vector<Trajectory>& traj,
                   const std::vector<SampleCredit>& credit, const std::vector<uint8_t>& join) {
  std::ofstream out(r.o.output_dir / "samples.jsonl", std::ios::app);
  for (std::size_t i = 0; i < traj.size(); ++i) {
    const std::size_t g = i / static_cast<std::size_t>(r.o.samples_per_prompt);
    nlohmann::json turns = nlohmann::json::array();
    for (std::size_t j = 0; j < traj[i].turns.size(); ++j) {
      const auto& t = traj[i].turns[j];
      turns.push_back({{"verdict", t.reward.verdict_class}, {"score", t.reward.score}, {"tokens", t.end - t.begin},
                       {"injected", t.injected},
                       {"reward", j < credit[i].turn_reward.size() ? credit[i].turn_reward[j] : 0.0},
                       {"advantage", j < credit[i].turn_advantage.size() ? credit[i].turn_advantage[j] : 0.0}});
    }
    out << nlohmann::json{{"step", r.step + 1}, {"task", prompts[g].task->id}, {"group", g},
                          {"sample", traj[i].sample}, {"retry", prompts[g].retry}, {"in_update", join[g] != 0},
                          {"dropped", traj[i].dropped}, {"context_stop", traj[i].context_stop},
                          {"prompt_tokens", traj[i].turns.empty() ? 0 : traj[i].turns[0].begin},
                          {"turns", turns}}.dump() << "\n";
  }
  return out ? Status() : internal_error("cannot append to samples.jsonl");
}

CreditOptions credit_options(const RlOptions& o) {
  CreditOptions c;
  c.prime_echo = o.enable_prime_echo;
  c.echo.mode = o.prime_echo_mode == "paper" ? mrl::PrimeEchoMode::kPaper : mrl::PrimeEchoMode::kLesson;
  c.echo.gamma = o.prime_echo_gamma;
  c.echo.eta = o.prime_echo_eta;
  c.echo.max_turns = static_cast<std::size_t>(o.max_turns);
  c.advantage.estimator = o.algorithm == "rloo"      ? mrl::AdvantageEstimator::kRloo
                          : o.algorithm == "dr_grpo" ? mrl::AdvantageEstimator::kDrGrpo
                                                     : mrl::AdvantageEstimator::kGrpo;
  return c;
}

}  // namespace

Result<Scalars> run_step(RlRun& r) {
  MC_RETURN_IF_ERROR(update_mirror(r));
  const std::vector<RolloutPrompt> prompts = step_prompts(r);
  RolloutOptions ro;
  ro.samples_per_prompt = r.o.samples_per_prompt;
  ro.max_turns = r.o.max_turns;
  ro.temperature = r.o.temperature;
  ro.top_p = r.o.top_p;
  ro.max_new_tokens = r.o.max_new_tokens;
  ro.infra_retries = r.o.infra_retries;
  ro.seed = r.o.seed;
  ro.inject = r.hooks.inject;
  RolloutStats rs;
  auto traj = Rollout(*r.engine, *r.rewards, *r.codec, ro).run(prompts, r.step, rs);
  if (!traj.ok()) return traj.status();
  std::size_t dropped = 0;
  for (const auto& t : *traj) dropped += t.dropped;
  if (dropped == traj->size()) {
    return unavailable("every sample of step " + std::to_string(r.step + 1) + " got infra_error after " +
                       std::to_string(r.o.infra_retries) + " retries (no sample was scored): " +
                       traj->front().drop_reason);
  }
  auto credit = assign_credit(*traj, r.o.samples_per_prompt, credit_options(r.o));
  if (!credit.ok()) return credit.status();
  GroupCounts gc;
  auto join = decide_groups(r, prompts, *traj, gc);
  if (!join.ok()) return join.status();
  MC_RETURN_IF_ERROR(log_samples(r, prompts, *traj, *credit, *join));
  const auto t_update = Clock::now();
  Rows rows = update_rows(*traj, *credit, *join, r.o.samples_per_prompt);
  RowValues old_logp, ref_logp, entropy;
  PopOutcome pop;
  if (!rows.tokens.empty()) {
    TokenBatch batch = make_token_batch(rows.tokens, r.device);
    old_logp = score_rows(*r.policy, *r.forward, rows.tokens, r.shape, &entropy);
    if (r.reference) ref_logp = score_rows(*r.reference, *r.forward, rows.tokens, r.shape);
    auto p = mirror_pop(r, rows, batch, old_logp);
    if (!p.ok()) return p.status();
    pop = std::move(*p);
  }
  double grad_norm = 0;
  auto loss = update_policy(r, rows, pop.keep, old_logp, ref_logp, grad_norm);
  if (!loss.ok()) return loss.status();
  const double update_seconds = since(t_update);
  ++r.step;
  if (r.bdr && (r.step * r.o.prompts_per_step) / static_cast<int64_t>(r.tasks.size()) !=
                   ((r.step - 1) * r.o.prompts_per_step) / static_cast<int64_t>(r.tasks.size())) {
    r.bdr->advance_epoch();
  }
  Scalars s = {{"loss", loss->loss}, {"pg_loss", loss->pg_loss}, {"kl", loss->kl},
               {"clip_fraction", loss->clip_fraction}, {"grad_norm", grad_norm}};
  double ent = 0, ent_n = 0, adv_sum = 0, adv_abs = 0, adv_n = 0;
  for (std::size_t i = 0; i < rows.tokens.size(); ++i) {
    for (std::size_t t = 0; t + 1 < rows.tokens[i].ids.size(); ++t) {
      if (!rows.tokens[i].mask[t + 1]) continue;
      ent += entropy[i][t];
      ++ent_n;
      adv_sum += rows.tokens[i].advantage[t + 1];
      adv_abs += std::abs(rows.tokens[i].advantage[t + 1]);
      ++adv_n;
    }
  }
  s.push_back({"entropy", ent_n ? ent / ent_n : 0.0});
  s.push_back({"advantage/mean", adv_n ? adv_sum / adv_n : 0.0});
  s.push_back({"advantage/abs_mean", adv_n ? adv_abs / adv_n : 0.0});
  rollout_metrics(*traj, r.o.max_turns, s);
  component_metrics(r, s);
  s.push_back({"mirrorpop/mean_divergence", pop.mean_divergence});
  s.push_back({"groups/in_update", static_cast<double>(gc.in_update)});
  s.push_back({"groups/bdr_buffered", static_cast<double>(gc.buffered)});
  s.push_back({"groups/bdr_recovered", static_cast<double>(gc.recovered)});
  s.push_back({"rows/trained", static_cast<double>(pop.keep.size())});
  s.push_back({"time/generate_s", rs.generate_seconds});
  s.push_back({"time/verify_wait_s", rs.verify_wait_seconds});
  s.push_back({"time/update_s", update_seconds});
  s.push_back({"tokens_per_second", rs.generate_seconds > 0 ? static_cast<double>(rs.generated_tokens) / rs.generate_seconds : 0.0});
  s.push_back({"verify/jobs", static_cast<double>(rs.verify_jobs)});
  s.push_back({"verify/infra_retries", static_cast<double>(rs.infra_retries)});
  s.push_back({"turns/context_stops", static_cast<double>(rs.context_stops)});
  return s;
}

}  // namespace musacoder::train::rl
