// run_quickstart: the stages of quickstart.h in order, each timed and logged; the learning check at the end.
#include "quickstart/quickstart.h"

#include <chrono>
#include <cstdio>

#include "quickstart/stages.h"

namespace musacoder::quickstart {
namespace fs = std::filesystem;
namespace {

using Log = std::function<void(const std::string&)>;

// Runs fn, records its wall time under `stage`, and names the stage in a failure.
template <typename Fn>
auto timed(QuickstartResult& r, const std::string& stage, const Log& log, Fn&& fn) -> decltype(fn()) {
  log("== " + stage);
  const auto start = std::chrono::steady_clock::now();
  auto out = fn();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.stage_seconds.emplace_back(stage, s);
  if (!out.ok()) return Status(out.status().code(), stage + ": " + out.status().message());
  char line[96];
  std::snprintf(line, sizeof line, "   %s: %.0f s", stage.c_str(), s);
  log(line);
  return out;
}

Status prepare_out_dir(const QuickstartOptions& o) {
  std::error_code ec;
  if (fs::exists(o.out_dir, ec) && !fs::is_empty(o.out_dir, ec)) {
    if (!o.overwrite)
      return failed_precondition(o.out_dir.string() +
                                 " already holds a run (pass --overwrite to replace it, or --out DIR)");
    fs::remove_all(o.out_dir, ec);
    if (ec) return internal_error("cannot remove " + o.out_dir.string() + ": " + ec.message());
  }
  fs::create_directories(o.out_dir, ec);
  if (ec) return internal_error("cannot create " + o.out_dir.string() + ": " + ec.message());
  return Status::ok_status();
}

// SFT must raise held-out Pass@k above the untrained model's; RL must not lower it. "" when both hold.
std::string learning_failure(const std::vector<EvalPoint>& p) {
  char msg[256] = "";
  if (p[1].pass_at_k <= p[0].pass_at_k)
    std::snprintf(msg, sizeof msg, "SFT did not help: held-out Pass@k %.1f%% before SFT, %.1f%% after",
                  100 * p[0].pass_at_k, 100 * p[1].pass_at_k);
  else if (p[2].pass_at_k < p[1].pass_at_k)
    std::snprintf(msg, sizeof msg, "RL lowered held-out Pass@k: %.1f%% after SFT, %.1f%% after RL",
                  100 * p[1].pass_at_k, 100 * p[2].pass_at_k);
  return msg;
}

}  // namespace

Result<QuickstartResult> run_quickstart(const QuickstartOptions& o, const Log& log) {
  MC_RETURN_IF_ERROR(validate(o));
  if (!o.base_model.empty()) MC_RETURN_IF_ERROR(check_base_model(o.base_model));  // before touching --out
  MC_RETURN_IF_ERROR(prepare_out_dir(o));
  QuickstartResult r;
  auto data = timed(r, "data", log, [&] { return make_data(o, o.out_dir / "data"); });
  if (!data.ok()) return data.status();
  r.train_pairs = data->train_pairs, r.heldout = data->heldout_tasks, r.overlaps = data->overlaps;
  const fs::path heldout = data->heldout / "tasks";
  const fs::path base = o.base_model.empty() ? o.out_dir / "model-init" : o.base_model;
  auto init = timed(r, "model", log, [&]() -> Result<bool> {
    if (o.base_model.empty()) MC_RETURN_IF_ERROR(make_tiny_model(o, data->train / "sft.jsonl", base));
    return true;
  });
  if (!init.ok()) return init.status();
  auto before = timed(r, "eval before SFT", log,
                      [&] { return evaluate(o, "before SFT", base, heldout, o.out_dir / "eval-base"); });
  if (!before.ok()) return before.status();
  auto sft = timed(r, "SFT", log,
                   [&] { return run_sft_stage(o, base, data->train / "sft.jsonl", o.out_dir / "sft"); });
  if (!sft.ok()) return sft.status();
  auto after_sft = timed(r, "eval after SFT", log,
                         [&] { return evaluate(o, "after SFT", *sft, heldout, o.out_dir / "eval-sft"); });
  if (!after_sft.ok()) return after_sft.status();
  auto rl =
      timed(r, "RL", log, [&] { return run_rl_stage(o, *sft, data->train / "tasks", o.out_dir / "rl"); });
  if (!rl.ok()) return rl.status();
  auto after_rl = timed(r, "eval after RL", log,
                        [&] { return evaluate(o, "after RL", *rl, heldout, o.out_dir / "eval-rl"); });
  if (!after_rl.ok()) return after_rl.status();
  r.points = {*before, *after_sft, *after_rl};
  r.learning_failure = learning_failure(r.points);
  MC_RETURN_IF_ERROR(write_outputs(o, r, o.out_dir / "sft", o.out_dir / "rl"));
  log(format_table(r));
  return r;
}

Status validate(const QuickstartOptions& o) {
  if (o.backend != "cpu" && o.backend != "cuda") return invalid_argument("--backend must be cpu or cuda");
  if (o.out_dir.empty()) return invalid_argument("--out must name a directory");
  if (o.train_tasks < 8) return invalid_argument("--train-tasks must be at least 8");
  if (o.heldout_tasks < 1) return invalid_argument("--heldout-tasks must be at least 1");
  if (o.sft_steps < 1) return invalid_argument("--steps must be at least 1");
  if (o.rl_steps < 1) return invalid_argument("--rl-steps must be at least 1");
  if (o.samples < 1) return invalid_argument("--samples must be at least 1");
  if (o.hidden_size < 128 || o.hidden_size % 64 != 0)
    return invalid_argument("--hidden-size must be a multiple of 64, at least 128");
  if (o.layers < 1) return invalid_argument("--layers must be at least 1");
  if (o.vocab_size < 512) return invalid_argument("--vocab-size must be at least 512");
  if (o.sft_learning_rate < 0 || o.rl_learning_rate < 0)
    return invalid_argument("--learning-rate and --rl-learning-rate must be positive (0: the default)");
  if (o.max_seq_len < 256) return invalid_argument("--max-seq-len must be at least 256");
  if (o.max_new_tokens < 0) return invalid_argument("--max-new-tokens must be positive (0: the default)");
  return Status::ok_status();
}

double sft_learning_rate(const QuickstartOptions& o) {
  if (o.sft_learning_rate > 0) return o.sft_learning_rate;
  return o.base_model.empty() ? 3e-3 : 5e-5;
}

double rl_learning_rate(const QuickstartOptions& o) {
  if (o.rl_learning_rate > 0) return o.rl_learning_rate;
  return o.base_model.empty() ? 1e-4 : 2e-6;
}

int64_t max_new_tokens(const QuickstartOptions& o) {
  if (o.max_new_tokens > 0) return o.max_new_tokens;
  return o.backend == "cuda" ? 3072 : 1024;
}

}  // namespace musacoder::quickstart
