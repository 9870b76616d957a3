#include "kernelbench/eval_run.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/files.h"
#include "core/splitmix.h"
#include "kernelbench/aggregate.h"
#include "kernelbench/progress.h"
#include "kernelbench/report.h"

namespace musacoder::kernelbench {
namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

uint64_t turn_seed(uint64_t seed, const std::string& task_id, int sample, int turn) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : task_id) h = (h ^ c) * 0x100000001b3ull;
  return splitmix64_mix(
      ((seed * 1000000 + 1000 * static_cast<uint64_t>(sample) + static_cast<uint64_t>(turn)) ^ h) + kSplitMixGamma);
}

namespace {

struct Chain {
  const SuiteTask* task = nullptr;
  int sample = 0;
  int next_turn = 1;
  std::vector<prompts::Message> conversation;
};

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Shared by the chain workers and the progress thread.
struct RunState {
  const EvalOptions& options;
  ModelClient& model;
  Scorer& scorer;
  SampleLog& log;
  const EvalHooks& hooks;
  std::mutex mu;
  Chains live;                 // GUARDED_BY(mu): every record so far
  std::size_t done_here = 0;   // GUARDED_BY(mu): chains finished in this process
  Status write_error;          // GUARDED_BY(mu)
};

bool stopping(const RunState& s) { return s.hooks.stop && s.hooks.stop->load(); }

void extend_conversation(std::vector<prompts::Message>& conv, const TurnRecord& r, const prompts::PromptOptions& o) {
  conv.push_back({"assistant", r.response});
  conv.push_back(prompts::render_feedback(prompts::feedback_facts(r.verdict), o));
}

// Generates and judges one turn of `c`.
TurnRecord run_turn(RunState& s, const Chain& c) {
  const EvalOptions& o = s.options;
  TurnRecord r;
  r.task_id = c.task->id;
  r.level = c.task->level;
  r.sample = c.sample;
  r.turn = c.next_turn;
  r.prompt_hash = conversation_hash(c.conversation);
  Sampling sampling = o.sampling;
  sampling.seed = turn_seed(o.seed, c.task->id, c.sample, c.next_turn);
  const auto t0 = Clock::now();
  Completion out = s.model.complete(c.conversation, sampling);
  r.generate_seconds = since(t0);
  if (!out.status.ok()) {
    r.infra = "generation: " + out.status.message();
    r.verdict = local_verdict(c.task->id, "infra_error", r.infra);
    r.chain_done = true;
    return r;
  }
  r.response = out.text;
  r.finish_reason = out.finish_reason;
  auto code = prompts::extract_code(out.text);
  r.code_found = code.ok();
  const auto t1 = Clock::now();
  r.verdict = code.ok() ? s.scorer.score(*c.task, *code)
                        : local_verdict(c.task->id, "format_error", "no code in the answer: " + code.status().message());
  r.verify_seconds = since(t1);
  const VerdictFacts f = read_verdict(r.verdict);
  if (f.infra) r.infra = "verifier: " + r.verdict.value("message", std::string("infra_error"));
  r.chain_done = f.infra || (f.correct && o.stop_on_pass) || c.next_turn >= o.turns;
  return r;
}

void record(RunState& s, const TurnRecord& r) {
  Status st = s.log.append(r);
  std::lock_guard lock(s.mu);
  if (!st.ok() && s.write_error.ok()) s.write_error = st;
  auto& turns = s.live[{r.task_id, r.sample}];
  turns.resize(static_cast<std::size_t>(r.turn - 1));
  turns.push_back(r);
  if (r.chain_done) ++s.done_here;
}

void run_chain(RunState& s, Chain c) {
  while (!stopping(s)) {
    TurnRecord r = run_turn(s, c);
    if (stopping(s)) return;  // as if killed: the turn is not recorded
    record(s, r);
    if (s.hooks.on_record) s.hooks.on_record(r);
    if (r.chain_done) return;
    extend_conversation(c.conversation, r, s.options.prompt);
    ++c.next_turn;
  }
}

// The chains still to run, with their conversations rebuilt from the records.
std::vector<Chain> plan(const Suite& suite, const Chains& chains, const EvalOptions& o) {
  std::vector<Chain> out;
  for (const auto& t : suite.tasks) {
    if (!t.usable()) continue;
    for (int s = 0; s < o.samples; ++s) {
      Chain c{&t, s, 1, first_turn(t, o.prompt_template, o.prompt)};
      auto it = chains.find({t.id, s});
      std::vector<TurnRecord> kept = it == chains.end() ? std::vector<TurnRecord>{} : it->second;
      if (!kept.empty() && !kept.back().infra.empty() && o.retry_infra) kept.pop_back();
      if (!kept.empty() && kept.back().chain_done) continue;
      for (const auto& r : kept) extend_conversation(c.conversation, r, o.prompt);
      c.next_turn = static_cast<int>(kept.size()) + 1;
      out.push_back(std::move(c));
    }
  }
  return out;
}

Status check_run_json(const fs::path& path, const json& run) {
  std::error_code ec;
  if (fs::exists(path, ec)) {
    auto text = read_file(path);
    if (!text.ok()) return text.status();
    json old = json::parse(*text, nullptr, false);
    if (old.is_discarded() || !old.contains("protocol")) return invalid_argument(path.string() + " is not a run file");
    for (auto& [key, value] : run["protocol"].items())
      if (old["protocol"].value(key, json()) != value)
        return failed_precondition("the out dir holds a run with another " + key + " (" + old["protocol"].value(key, json()).dump() +
                                   ", now " + value.dump() + "): use another --out or the same settings");
  }
  return write_file_atomic(path, run.dump(2) + "\n");
}

ProgressCounts count(const Suite& suite, const Chains& live, const EvalOptions& o, std::size_t done_here,
                     std::size_t todo_here, double elapsed) {
  ProgressCounts c{0, 0, done_here, todo_here, 0, suite.usable_count(), elapsed};
  c.samples_total = suite.usable_count() * static_cast<std::size_t>(o.samples);
  for (const auto& t : suite.tasks) {
    if (!t.usable()) continue;
    int finished = 0;
    for (int s = 0; s < o.samples; ++s) {
      auto it = live.find({t.id, s});
      finished += it != live.end() && !it->second.empty() && it->second.back().chain_done ? 1 : 0;
    }
    c.samples_done += static_cast<std::size_t>(finished);
    c.tasks_done += finished == o.samples ? 1 : 0;
  }
  return c;
}

void report_progress(RunState& s, const Suite& suite, std::size_t todo, Clock::time_point start) {
  Chains live;
  std::size_t done = 0;
  {
    std::lock_guard lock(s.mu);
    live = s.live;
    done = s.done_here;
  }
  json summary = aggregate(suite, live, {s.options.samples, s.options.turns});
  s.hooks.progress(progress_line(count(suite, live, s.options, done, todo, since(start)),
                                 summary["views"]["best"]["overall"], s.options.samples));
}

void run_workers(RunState& s, const Suite& suite, std::vector<Chain> todo) {
  std::mutex qmu;
  std::size_t next = 0;
  auto worker = [&] {
    for (;;) {
      Chain c;
      {
        std::lock_guard lock(qmu);
        if (next >= todo.size()) return;
        c = std::move(todo[next++]);
      }
      run_chain(s, std::move(c));
    }
  };
  const auto start = Clock::now();
  const std::size_t total = todo.size();
  std::vector<std::thread> threads;
  const int n = std::max(1, std::min<int>(s.options.concurrency, static_cast<int>(todo.size())));
  for (int i = 0; i < n; ++i) threads.emplace_back(worker);
  std::mutex wmu;
  std::condition_variable wcv;
  bool finished = false;
  std::thread ticker([&] {
    if (!s.hooks.progress || s.options.progress_interval_seconds <= 0) return;
    std::unique_lock lock(wmu);
    while (!wcv.wait_for(lock, std::chrono::duration<double>(s.options.progress_interval_seconds), [&] { return finished; }))
      report_progress(s, suite, total, start);
  });
  for (auto& t : threads) t.join();
  {
    std::lock_guard lock(wmu);
    finished = true;
  }
  wcv.notify_all();
  ticker.join();
  if (s.hooks.progress) report_progress(s, suite, total, start);
}

}  // namespace

json protocol_json(const Suite& suite, const EvalOptions& o) {
  return {{"suite_id", suite.id}, {"suite_hash", suite.content_hash}, {"samples", o.samples}, {"turns", o.turns},
          {"stop_on_pass", o.stop_on_pass}, {"temperature", o.sampling.temperature}, {"top_p", o.sampling.top_p},
          {"max_new_tokens", o.sampling.max_new_tokens}, {"prompt_template", prompt_template_name(o.prompt_template)},
          {"prompt_contract", prompts::kContractVersion}, {"target", prompts::target_name(o.prompt.target)},
          {"max_log_tokens", o.prompt.max_log_tokens}, {"seed", o.seed}};
}

Result<json> write_reports(const Suite& suite, const fs::path& out_dir, const json& run) {
  auto chains = read_chains(out_dir / "samples.jsonl");
  if (!chains.ok()) return chains.status();
  const json& p = run["protocol"];
  json summary = aggregate(suite, *chains, {p.value("samples", 8), p.value("turns", 1)});
  summary["run"] = run;
  MC_RETURN_IF_ERROR(write_file_atomic(out_dir / "summary.json", summary.dump(1, ' ', false, json::error_handler_t::replace) + "\n"));
  MC_RETURN_IF_ERROR(write_file_atomic(out_dir / "summary.md", summary_markdown(summary)));
  MC_RETURN_IF_ERROR(write_file_atomic(out_dir / "report.html", report_html(summary, *chains)));
  return summary;
}

Result<json> run_eval(const Suite& suite, ModelClient& model, Scorer& scorer, const EvalOptions& o, const EvalHooks& hooks) {
  if (o.samples < 1 || o.turns < 1 || o.concurrency < 1) return invalid_argument("samples, turns and concurrency must be >= 1");
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) return internal_error("cannot create " + o.out_dir.string() + ": " + ec.message());
  json run = {{"schema", "musacoder.eval-run/1"}, {"protocol", protocol_json(suite, o)},
              {"model", model.describe()}, {"scorer", scorer.describe()}};
  MC_RETURN_IF_ERROR(check_run_json(o.out_dir / "run.json", run));
  auto log = SampleLog::open(o.out_dir / "samples.jsonl");
  if (!log.ok()) return log.status();
  RunState s{o, model, scorer, **log, hooks, {}, (*log)->chains(), 0, {}};
  const auto start = Clock::now();
  run_workers(s, suite, plan(suite, (*log)->chains(), o));
  if (!s.write_error.ok()) return s.write_error;
  run["wall_seconds_last_session"] = since(start);
  return write_reports(suite, o.out_dir, run);
}

}  // namespace musacoder::kernelbench
