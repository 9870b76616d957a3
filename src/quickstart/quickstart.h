// musacoder quickstart: the framework's whole job, small enough for a CPU in minutes.
//
//   synthesize + verify (task -> kernel) pairs (data::run_synthesis, rule teacher, MooreEval)
//   + a held-out task split decontaminated against the training tasks (data::write_task_set)
//   -> a tokenizer trained on the corpus (tokenizer::train_bpe_tokenizer_json) and a tiny Qwen2 from scratch
//   -> held-out first-turn Pass@k before SFT (kernelbench::run_eval, built-in engine, MooreEval scorer)
//   -> SFT (train::sft::run_sft) -> held-out Pass@k
//   -> GRPO RL on the training tasks with PrimeEcho, BDR and MirrorPop on (train::rl::run_rl) -> held-out
//   Pass@k
//   -> before/after table, summary.json, curves.png, report.html under out_dir
//
// Its verifier (evaluation and RL rewards) takes the lean build path only: a source the lean headers cannot
// compile is a compile_error without the 30-60 s full build (the taught kernels are lean-path kernels; the
// full-size commands keep --build-path auto). Synthesis verifies with the default (auto).
// The held-out tasks are never trained on: they are drawn with the training tasks as the decontamination
// suite (canonical form and n-gram overlap, data/decontaminate.h), and the check is re-run on the final sets.
// The run's verdict on learning: QuickstartResult::learning_failure names, with the numbers, what did not
// hold (SFT must raise held-out Pass@k above the untrained model's; RL must not lower it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"

namespace musacoder::quickstart {

struct QuickstartOptions {
  std::filesystem::path out_dir = "runs/quickstart";
  bool overwrite = false;       // replace a finished or broken run in out_dir
  std::string backend = "cpu";  // cpu | cuda: the kernels' target, the verifier's backend, the model's device
  uint64_t seed = 1;
  // --- data
  int train_tasks = 96;    // synthesized, verified training tasks (SFT pairs and RL prompts)
  int heldout_tasks = 12;  // held-out tasks (evaluation only)
  std::vector<std::string> categories = {"elementwise", "activation"};
  // --- model: a pretrained checkpoint (--base-model: e.g. SmolLM2-135M-Instruct, build/models/smollm2-135m),
  // or, when empty, a Qwen2 from scratch with a tokenizer trained on the corpus (the sizes below)
  std::filesystem::path base_model;
  int64_t vocab_size = 2048;  // BPE trained on the corpus (fewer when the corpus runs out of merges)
  int64_t hidden_size = 128;
  int64_t layers = 4;
  // --- SFT
  int64_t sft_steps = 360;  // --steps
  double sft_learning_rate = 0;  // --learning-rate; 0: 3e-3 from scratch, 5e-5 for a --base-model
  int64_t max_seq_len = 2048;
  // --- RL
  int64_t rl_steps = 3;
  int rl_prompts_per_step = 2;
  int rl_samples_per_prompt = 4;
  double rl_learning_rate = 0;  // --rl-learning-rate; 0: 1e-4 from scratch, 2e-6 for a --base-model
  // --- evaluation (first turn, held-out)
  int samples = 4;  // the k of Pass@k
  double temperature = 0.7;
  int64_t max_new_tokens = 0;  // 0: 1024 for cpu kernels, 3072 for cuda (the teacher's run to ~3,000)
  // --- machine
  int verify_workers = 2;
  std::filesystem::path build_cache;  // verifier build cache (empty: ~/.cache/mooreeval/builds)
  bool progress = true;
};

// One row of the before/after table (held-out, first turn).
struct EvalPoint {
  std::string stage;  // "before SFT", "after SFT", "after RL"
  double pass_at_1 = 0, pass_at_k = 0, avg_at_k = 0, fast_1 = 0;
  double seconds = 0;            // generation + verification
  std::filesystem::path report;  // that evaluation's report.html
};

struct QuickstartResult {
  std::vector<EvalPoint> points;  // before SFT, after SFT, after RL
  int train_pairs = 0, heldout = 0, overlaps = 0;
  std::vector<std::pair<std::string, double>> stage_seconds;  // wall time per stage
  std::filesystem::path summary, curves, report;
  std::string learning_failure;  // empty: learning showed; else what did not hold, with the numbers
};

// Checks values (not files). kInvalidArgument naming the flag.
Status validate(const QuickstartOptions& options);

// The learning rates in effect (the options' unless 0: then the defaults above for the model's kind).
double sft_learning_rate(const QuickstartOptions& options);
double rl_learning_rate(const QuickstartOptions& options);
// New tokens per answer in effect (the option's unless 0: then the default above for the backend).
int64_t max_new_tokens(const QuickstartOptions& options);

// Runs the whole loop; `log` receives one line per stage and the table at the end. Errors: the failing
// stage's status with the stage named (a run that finished but did not learn is ok: see learning_failure).
Result<QuickstartResult> run_quickstart(const QuickstartOptions& options,
                                        const std::function<void(const std::string&)>& log);

}  // namespace musacoder::quickstart
