#include "kernelbench/aggregate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>

#include "kernelbench/metrics.h"
#include "kernelbench/scorer.h"

namespace musacoder::kernelbench {
using nlohmann::json;

namespace {

struct Outcome {
  enum State { kScored, kInfra, kMissing } state = kMissing;
  std::string verdict;
  bool correct = false;
  std::optional<double> speedup;
  int turns = 0;
};

Outcome from_record(const TurnRecord& r, int turns) {
  Outcome o;
  o.turns = turns;
  const VerdictFacts f = read_verdict(r.verdict);
  o.state = !r.infra.empty() || f.infra ? Outcome::kInfra : Outcome::kScored;
  o.verdict = o.state == Outcome::kInfra ? "infra_error" : f.verdict_class;
  o.correct = o.state == Outcome::kScored && f.correct;
  o.speedup = f.speedup;
  return o;
}

// view_turn >= 1: the chain after that turn; 0: best of turns.
Outcome outcome_at(const std::vector<TurnRecord>* turns, int view_turn) {
  if (turns == nullptr || turns->empty()) return {};
  const int size = static_cast<int>(turns->size());
  const bool done = turns->back().chain_done;
  if (view_turn > 0) {
    if (size < view_turn && !done) return {};
    return from_record((*turns)[std::min(view_turn, size) - 1], std::min(view_turn, size));
  }
  const TurnRecord* best = nullptr;
  for (const auto& r : *turns) {
    VerdictFacts f = read_verdict(r.verdict);
    if (!r.infra.empty() || !f.correct) continue;
    if (!best || f.speedup.value_or(0) > read_verdict(best->verdict).speedup.value_or(0)) best = &r;
  }
  if (best) return from_record(*best, size);
  if (!done) return {};
  return from_record(turns->back(), size);
}

json interval(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  const double half = v.size() > 1 ? 1.96 * std::sqrt(var / static_cast<double>(v.size() - 1)) /
                                         std::sqrt(static_cast<double>(v.size()))
                                   : 0.0;
  return {{"mean", mean}, {"low", std::max(0.0, mean - half)}, {"high", std::min(1.0, mean + half)}};
}

using TaskOutcomes = std::pair<const SuiteTask*, std::vector<Outcome>>;

json group_metrics(const std::vector<const TaskOutcomes*>& tasks, std::size_t k) {
  std::vector<double> p1, pk, avg, speedups;
  std::map<std::string, std::vector<double>> fast;
  std::size_t samples = 0, infra = 0, missing = 0, short_k = 0, scored_tasks = 0;
  std::map<std::string, int> verdicts;
  for (const TaskOutcomes* t : tasks) {
    std::vector<SampleOutcome> so;
    for (const Outcome& o : t->second) {
      if (o.state == Outcome::kMissing) { ++missing; continue; }
      ++verdicts[o.verdict];
      if (o.state == Outcome::kInfra) { ++infra; continue; }
      const bool measured = o.correct && o.speedup && std::isfinite(*o.speedup) && *o.speedup > 0;
      so.push_back({o.correct, measured ? *o.speedup : std::numeric_limits<double>::min()});
      if (measured) speedups.push_back(*o.speedup);
    }
    if (so.empty()) continue;
    ++scored_tasks;
    samples += so.size();
    const std::size_t c = static_cast<std::size_t>(std::count_if(so.begin(), so.end(), [](auto& s) { return s.correct; }));
    p1.push_back(pass_at_k(so.size(), c, 1).value());
    if (so.size() >= k) pk.push_back(pass_at_k(so.size(), c, k).value());
    else ++short_k;
    avg.push_back(avg_at_k(so).value());
    for (double p : kFastP) fast[fast_p_key(p)].push_back(fast_p(so, p).value());
  }
  json g = {{"tasks", scored_tasks}, {"samples", samples}, {"infra", infra}, {"missing", missing},
            {"tasks_short_of_k", short_k}, {"pass_at_1", interval(p1)}, {"pass_at_k", interval(pk)},
            {"avg_at_k", interval(avg)}, {"verdicts", verdicts}, {"speedups", speedups}};
  json f = json::object();
  for (auto& [key, v] : fast) f[key] = interval(v);
  g["fast_p"] = f;
  double log_sum = 0;
  for (double s : speedups) log_sum += std::log(s);
  g["geomean_speedup"] = speedups.empty() ? json(nullptr) : json(std::exp(log_sum / static_cast<double>(speedups.size())));
  return g;
}

json view(const std::vector<TaskOutcomes>& all, std::size_t k) {
  std::map<int, std::vector<const TaskOutcomes*>> by_level;
  std::vector<const TaskOutcomes*> every;
  for (const auto& t : all) {
    by_level[t.first->level].push_back(&t);
    every.push_back(&t);
  }
  json v = {{"overall", group_metrics(every, k)}};
  for (auto& [level, tasks] : by_level) v["level" + std::to_string(level)] = group_metrics(tasks, k);
  return v;
}

std::vector<TaskOutcomes> outcomes(const Suite& suite, const Chains& chains, int samples, int view_turn) {
  std::vector<TaskOutcomes> out;
  for (const auto& t : suite.tasks) {
    if (!t.usable()) continue;
    TaskOutcomes to{&t, {}};
    for (int s = 0; s < samples; ++s) {
      auto it = chains.find({t.id, s});
      to.second.push_back(outcome_at(it == chains.end() ? nullptr : &it->second, view_turn));
    }
    out.push_back(std::move(to));
  }
  return out;
}

json suite_block(const Suite& suite) {
  json unloadable = json::array();
  for (const auto& t : suite.tasks)
    if (!t.usable()) unloadable.push_back({{"id", t.id}, {"error", t.load_error}});
  return {{"id", suite.id}, {"content_hash", suite.content_hash}, {"tasks", suite.tasks.size()},
          {"usable", suite.usable_count()}, {"unloadable", unloadable}};
}

json infra_block(const Chains& chains) {
  int generation = 0, verifier = 0;
  for (const auto& [key, turns] : chains)
    for (const auto& r : turns) {
      if (r.infra.empty()) continue;
      (r.infra.starts_with("generation") ? generation : verifier)++;
    }
  return {{"generation", generation}, {"verifier", verifier}};
}

// Sum, median and maximum of v (zeros when empty).
json seconds_stats(std::vector<double> v) {
  if (v.empty()) return {{"sum", 0.0}, {"median", 0.0}, {"max", 0.0}};
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {{"sum", std::accumulate(v.begin(), v.end(), 0.0)}, {"median", median}, {"max", v.back()}};
}

json time_block(const Chains& chains) {
  std::vector<double> generate, verify;
  for (const auto& [key, turns] : chains)
    for (const auto& r : turns) {
      generate.push_back(r.generate_seconds);
      verify.push_back(r.verify_seconds);
    }
  const auto n = static_cast<int64_t>(generate.size());
  return {{"turns", n},
          {"generate_seconds", seconds_stats(std::move(generate))},
          {"verify_seconds", seconds_stats(std::move(verify))}};
}

}  // namespace

std::string fast_p_key(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", p);
  return buf;
}

json aggregate(const Suite& suite, const Chains& chains, const AggregateOptions& o) {
  const std::size_t k = static_cast<std::size_t>(std::max(1, o.samples));
  json views = json::object();
  for (int t = 1; t <= o.turns; ++t) views["turn" + std::to_string(t)] = view(outcomes(suite, chains, o.samples, t), k);
  const auto best = outcomes(suite, chains, o.samples, 0);
  views["best"] = view(best, k);
  json tasks = json::array();
  for (const auto& [task, samples] : best) {
    json row = {{"id", task->id}, {"level", task->level}, {"samples", json::array()}};
    for (std::size_t s = 0; s < samples.size(); ++s)
      row["samples"].push_back({{"sample", s}, {"verdict", samples[s].state == Outcome::kMissing ? "missing" : samples[s].verdict},
                                {"speedup", samples[s].speedup ? json(*samples[s].speedup) : json(nullptr)},
                                {"turns", samples[s].turns}});
    tasks.push_back(row);
  }
  return {{"schema", kSummarySchema},    {"k", o.samples}, {"turns", o.turns},
          {"suite", suite_block(suite)}, {"views", views}, {"infra", infra_block(chains)},
          {"time", time_block(chains)},  {"tasks", tasks}};
}

}  // namespace musacoder::kernelbench
