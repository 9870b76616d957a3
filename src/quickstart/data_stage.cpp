// The quickstart's data: verified (task -> kernel) pairs for SFT and RL, and a held-out split drawn with the
// training tasks as the decontamination suite, then checked again task by task.

#include "core/files.h"
#include "data/decontaminate.h"
#include "data/synth.h"
#include "data/teacher.h"
#include "data/verifier.h"
#include "mooreeval/mooreeval.h"
#include "quickstart/stages.h"

namespace musacoder::quickstart {
namespace fs = std::filesystem;

fs::path build_cache(const QuickstartOptions& o) {
  return o.build_cache.empty() ? mooreeval::default_cache_dir() : o.build_cache;
}

data::VerifierSettings verifier_settings(const QuickstartOptions& o) {
  data::VerifierSettings v;
  v.backend = o.backend;
  v.workers = o.verify_workers;
  v.run_slots = data::default_run_slots(o.backend);
  v.benchmark_iters = 10;
  v.warmup_iters = 3;
  v.cache_dir = build_cache(o);
  return v;
}

namespace {

data::SynthOptions synth_options(const QuickstartOptions& o, const fs::path& out, uint64_t seed, int count) {
  data::SynthOptions s;
  s.seed = seed;
  s.count = count;
  s.grammar.categories = o.categories;
  s.grammar.dtypes = {data::DType::kFloat32};
  s.out_dir = out;
  s.backend = o.backend;
  s.stable_metadata = true;
  s.progress = o.progress;
  s.verifier = verifier_settings(o);
  s.verifier.seed = data::mix_seed(seed, 0x5eed);
  return s;
}

// Held-out task modules that the decontamination check finds in the training tasks (expected: none).
Result<int> count_overlaps(const fs::path& train_tasks, const fs::path& heldout_tasks) {
  auto d = data::Decontaminator::load(train_tasks, {});
  if (!d.ok()) return d.status();
  int overlaps = 0;
  for (const auto& e : fs::recursive_directory_iterator(heldout_tasks)) {
    if (e.path().extension() != ".py") continue;
    auto text = read_file(e.path());
    if (!text.ok()) return text.status();
    if (d->check(*text)) ++overlaps;
  }
  return overlaps;
}

}  // namespace

Result<DataSets> make_data(const QuickstartOptions& o, const fs::path& dir) {
  DataSets d{dir / "train", dir / "heldout"};
  data::SynthOptions train = synth_options(o, d.train, o.seed, o.train_tasks);
  auto verifier = data::Verifier::create(train.verifier);
  if (!verifier.ok()) return verifier.status();
  auto teacher = data::make_rule_teacher();
  auto made = data::run_synthesis(train, *teacher, nullptr, verifier->get());
  if (!made.ok()) return made.status();
  d.train_pairs = made->kept;
  if (d.train_pairs < 8)
    return failed_precondition("only " + std::to_string(d.train_pairs) + " verified training pairs");

  data::SynthOptions held = synth_options(o, d.heldout, data::mix_seed(o.seed, 0x4e1d), o.heldout_tasks);
  held.exclude_suite = d.train / "tasks";
  auto tasks = data::write_task_set(held);
  if (!tasks.ok()) return tasks.status();
  d.heldout_tasks = tasks->programs;
  auto overlaps = count_overlaps(d.train / "tasks", d.heldout / "tasks");
  if (!overlaps.ok()) return overlaps.status();
  d.overlaps = *overlaps;
  if (d.overlaps > 0)
    return internal_error(std::to_string(d.overlaps) + " held-out tasks overlap the training tasks");
  return d;
}

}  // namespace musacoder::quickstart
