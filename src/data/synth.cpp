// The synthesizer's main path: draw the set, write the tasks, ask the teacher, verify, journal,
// compose the outputs.
#include "data/synth.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <algorithm>
#include <functional>

#include "core/files.h"
#include "data/synth_internal.h"
#include "data/task_source.h"
#include "prompts/prompts.h"

namespace musacoder::data {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

Status check_manifest(const SynthOptions& o, const std::string& teacher) {
  const fs::path path = o.out_dir / "manifest.json";
  const auto want = run_manifest(o, teacher);
  if (fs::exists(path)) {
    auto text = read_file(path);
    if (!text.ok()) return text.status();
    auto have = nlohmann::ordered_json::parse(*text, nullptr, false);
    if (have != want) {
      std::string diff;
      for (const auto& [k, v] : want.items())
        if (!have.is_object() || !have.contains(k) || have[k] != v) diff += (diff.empty() ? "" : ", ") + k;
      return invalid_argument(o.out_dir.string() + " holds a run with other settings (" + diff +
                              "): use another --out to start a new run");
    }
    return Status::ok_status();
  }
  return write_file_atomic(path, want.dump(2) + "\n");
}

Status write_tasks(const SynthOptions& o, const ProgramSet& set) {
  for (const SynthProgram& sp : set.programs) {
    const fs::path base = o.out_dir / "tasks" / sp.id;
    std::error_code ec;
    fs::create_directories(base.parent_path(), ec);
    MC_RETURN_IF_ERROR(write_file_atomic(fs::path(base.string() + ".py"), sp.source));
    MC_RETURN_IF_ERROR(write_file_atomic(fs::path(base.string() + ".json"), sp.sidecar));
  }
  std::string overlaps;
  for (const json& j : set.overlaps) overlaps += j.dump() + "\n";
  return write_file_atomic(o.out_dir / "decontamination.jsonl", overlaps);
}

// Progress on stderr: a redrawn bar on a terminal, a line per 10% otherwise.
class Progress {
 public:
  Progress(bool on, int total) : on_(on && total > 0), total_(total), tty_(isatty(2) != 0), start_(Clock::now()) {}
  void update(int done, int ok) {
    if (!on_) return;
    const double s = seconds_since(start_), rate = s > 0 ? done / s : 0;
    if (!tty_ && done != total_ && done * 10 / total_ == last_decile_) return;
    last_decile_ = done * 10 / total_;
    char bar[31];
    const int fill = done * 30 / total_;
    for (int i = 0; i < 30; ++i) bar[i] = i < fill ? '=' : ' ';
    bar[30] = '\0';
    const double eta = rate > 0 ? (total_ - done) / rate : 0;
    std::fprintf(stderr, "%ssynth [%s] %d/%d  ok %d  fail %d  %.2f pairs/s  ETA %.0fs%s", tty_ ? "\r" : "", bar, done,
                 total_, ok, done - ok, rate, eta, tty_ && done != total_ ? "" : "\n");
    std::fflush(stderr);
  }

 private:
  bool on_;
  int total_;
  bool tty_;
  Clock::time_point start_;
  int last_decile_ = -1;
};

struct Pending {
  const SynthProgram* program = nullptr;
  std::vector<TeacherAnswer> answers;
  std::string teacher_error;
  std::vector<json> verdicts;
  int remaining = 0;
};

// Teacher answers for every pending program, `threads` requests at a time.
void ask_teacher(const SynthOptions& o, Teacher& teacher, std::vector<Pending>& pending, int samples, int threads) {
  const prompts::Target target = *prompts::parse_target(o.backend);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < pending.size(); i = next++) {
      Pending& p = pending[i];
      prompts::PromptOptions po;
      po.target = target;
      TeacherRequest r{p.program->id, &p.program->program, prompts::render_task({p.program->source, describe(p.program->program)}, po),
                       target, samples, mix_seed(p.program->seed, 1)};
      auto a = teacher.answer(r);
      if (a.ok()) p.answers = std::move(a).value();
      else p.teacher_error = a.status().message();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, threads); ++t) pool.emplace_back(work);
  for (auto& t : pool) t.join();
}


// The submissions of every pending answer as files; answers with no code get their
// format_error verdict here (the verifier would give the same).
std::vector<VerifyJob> submissions(const SynthOptions& o, std::vector<Pending>& pending, bool fix,
                                   std::vector<std::pair<std::size_t, std::size_t>>& where, Status& status) {
  std::vector<VerifyJob> jobs;
  const fs::path dir = o.out_dir / ".work" / (fix ? "fixes" : "answers");
  std::error_code ec;
  fs::create_directories(dir, ec);
  for (std::size_t i = 0; i < pending.size(); ++i) {
    Pending& p = pending[i];
    p.verdicts.assign(p.answers.size(), json());
    p.remaining = 0;
    for (std::size_t k = 0; k < p.answers.size(); ++k) {
      auto code = prompts::extract_code(p.answers[k].response);
      if (!code.ok()) {
        p.verdicts[k] = {{"schema", "mooreeval.verdict/1"}, {"verdict", "format_error"}, {"stage", "extract"},
                         {"message", code.status().message()}, {"compiled", false}, {"trials", 0}, {"passed", 0}};
        continue;
      }
      const fs::path file = dir / (std::to_string(p.program->index) + "_" + std::to_string(k) + ".py");
      if (Status s = write_file_atomic(file, *code); !s.ok()) status = s;
      const fs::path task = o.out_dir / "tasks" / (p.program->id + ".py");
      jobs.push_back({p.program->id, task, file});
      where.emplace_back(i, k);
      ++p.remaining;
    }
  }
  return jobs;
}

json journal_entry(const Pending& p, const std::string& teacher) {
  json answers = json::array();
  for (std::size_t k = 0; k < p.answers.size(); ++k)
    answers.push_back({{"response", p.answers[k].response}, {"verdict", p.verdicts[k]}});
  return {{"index", p.program->index}, {"id", p.program->id}, {"teacher", teacher}, {"answers", answers},
          {"best", best_answer(answers)}, {"teacher_error", p.teacher_error}};
}

// Verifies every answer of `pending`; `on_program(i)` runs (serialised) once all of program
// i's answers have their verdicts.
Status verify_all(const SynthOptions& o, Verifier& verifier, std::vector<Pending>& pending, bool fix,
                  const std::function<void(std::size_t)>& on_program) {
  std::vector<std::pair<std::size_t, std::size_t>> where;
  Status status;
  std::vector<VerifyJob> jobs = submissions(o, pending, fix, where, status);
  MC_RETURN_IF_ERROR(status);
  for (std::size_t i = 0; i < pending.size(); ++i)
    if (pending[i].remaining == 0) on_program(i);
  verifier.verify(jobs, [&](std::size_t j, const json& verdict) {
    auto [i, k] = where[j];
    pending[i].verdicts[k] = verdict;
    if (--pending[i].remaining == 0) on_program(i);
  });
  return Status::ok_status();
}

Status write_outputs(const SynthOptions& o, const Outputs& out) {
  MC_RETURN_IF_ERROR(write_file_atomic(o.out_dir / "sft.jsonl", out.sft));
  MC_RETURN_IF_ERROR(write_file_atomic(o.out_dir / "rejected.jsonl", out.rejected));
  if (o.keep_wrong) MC_RETURN_IF_ERROR(write_file_atomic(o.out_dir / "repair.jsonl", out.repair));
  MC_RETURN_IF_ERROR(write_file_atomic(o.out_dir / "card.json", out.card.dump(2) + "\n"));
  return write_file_atomic(o.out_dir / "dataset_card.md", out.card_markdown);
}

Result<ProgramSet> prepare_set(const SynthOptions& o, SynthReport& report) {
  if (o.out_dir.empty()) return invalid_argument("--out is required");
  std::error_code ec;
  fs::create_directories(o.out_dir / "tasks", ec);
  if (ec) return invalid_argument("cannot create " + o.out_dir.string() + ": " + ec.message());
  auto set = draw_programs(o);
  if (!set.ok()) return set.status();
  MC_RETURN_IF_ERROR(write_tasks(o, *set));
  report.programs = static_cast<int>(set->programs.size());
  report.duplicates = set->duplicates;
  report.contaminated = static_cast<int>(set->overlaps.size());
  return set;
}

}  // namespace

Result<SynthReport> write_task_set(const SynthOptions& options) {
  SynthReport report;
  auto set = prepare_set(options, report);
  if (!set.ok()) return set.status();
  return report;
}

Result<SynthReport> run_synthesis(const SynthOptions& o, Teacher& teacher, Teacher* fixer, Verifier* verifier) {
  const auto start = Clock::now();
  if (!prompts::parse_target(o.backend).ok()) return prompts::parse_target(o.backend).status();
  if (o.samples < 1) return invalid_argument("--samples must be at least 1");
  SynthReport report;
  auto set = prepare_set(o, report);
  if (!set.ok()) return set.status();
  MC_RETURN_IF_ERROR(check_manifest(o, teacher.name()));
  auto journal = Journal::open(o.out_dir / "journal.jsonl");
  if (!journal.ok()) return journal.status();
  std::vector<Pending> pending;
  for (const SynthProgram& sp : set->programs)
    if (!journal->entries().count(sp.index)) pending.push_back({&sp, {}, "", {}, 0});
  report.resumed = report.programs - static_cast<int>(pending.size());
  if (!pending.empty() && verifier == nullptr) return failed_precondition("programs are left to verify but no verifier");
  const auto verify_start = Clock::now();
  if (!pending.empty()) {
    ask_teacher(o, teacher, pending, o.samples, o.verifier.workers);
    Progress progress(o.progress, static_cast<int>(pending.size()));
    int done = 0, ok = 0;
    Status journal_status;
    std::vector<Pending> to_fix;
    MC_RETURN_IF_ERROR(verify_all(o, *verifier, pending, false, [&](std::size_t i) {
      json entry = journal_entry(pending[i], teacher.name());
      const bool passed = entry["best"].get<int>() >= 0;
      if (!passed && o.keep_wrong && fixer != nullptr && !pending[i].answers.empty()) {
        to_fix.push_back({pending[i].program, {}, "", {}, 0});
      } else if (Status s = journal->append(entry); !s.ok()) {
        journal_status = s;
      }
      progress.update(++done, ok += passed ? 1 : 0);
    }));
    MC_RETURN_IF_ERROR(journal_status);
    if (!to_fix.empty()) {
      ask_teacher(o, *fixer, to_fix, 1, o.verifier.workers);
      MC_RETURN_IF_ERROR(verify_all(o, *verifier, to_fix, true, [&](std::size_t i) {
        auto it = std::find_if(pending.begin(), pending.end(), [&](const Pending& p) { return p.program == to_fix[i].program; });
        json entry = journal_entry(*it, teacher.name());
        if (!to_fix[i].answers.empty())
          entry["fix"] = {{"teacher", fixer->name()}, {"response", to_fix[i].answers[0].response}, {"verdict", to_fix[i].verdicts[0]}};
        if (Status s = journal->append(entry); !s.ok()) journal_status = s;
      }));
      MC_RETURN_IF_ERROR(journal_status);
    }
    report.verified = static_cast<int>(pending.size());
  }
  const double verify_seconds = seconds_since(verify_start);
  std::string version = verifier ? verifier->version() : "mooreeval.verdict/1";
  Outputs out = compose_outputs(o, set->programs, journal->entries(), version);
  MC_RETURN_IF_ERROR(write_outputs(o, out));
  report.kept = out.kept;
  report.rejected = out.rejected_count;
  report.repairs = out.repairs;
  report.seconds = seconds_since(start);
  report.pairs_per_second = verify_seconds > 0 ? report.verified / verify_seconds : 0;
  return report;
}

}  // namespace musacoder::data
