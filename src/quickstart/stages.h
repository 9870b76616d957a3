// The quickstart's stages (quickstart.cpp runs them in order). Internal to src/quickstart.
#pragma once

#include <filesystem>
#include <string>

#include "core/status.h"
#include "data/verifier.h"
#include "quickstart/quickstart.h"

namespace musacoder::quickstart {

// --build-cache, else mooreeval::default_cache_dir(): every stage's verifier shares it.
std::filesystem::path build_cache(const QuickstartOptions& o);

// The data and evaluation stages' verifier: --backend, --verify-workers, the shared build cache, the
// backend's run slots (data::default_run_slots), 10 timed calls after 3 warm-ups (the data's outputs keep no
// timings; the evaluations' fast_p needs no more).
data::VerifierSettings verifier_settings(const QuickstartOptions& o);

struct DataSets {
  std::filesystem::path train;    // synth out dir: tasks/ and sft.jsonl
  std::filesystem::path heldout;  // tasks-only synth out dir: tasks/
  int train_pairs = 0, heldout_tasks = 0;
  int overlaps = 0;  // held-out tasks the decontamination check finds in the training tasks
};

// data_stage.cpp: verified training pairs, then the decontaminated held-out split.
Result<DataSets> make_data(const QuickstartOptions& o, const std::filesystem::path& dir);

// tiny_model.cpp: a --base-model directory loads as a model with a chat template (kNotFound /
// kInvalidArgument naming what is missing).
Status check_base_model(const std::filesystem::path& dir);

// tiny_model.cpp: tokenizer trained on the SFT corpus + a randomly initialised Qwen2 in `dir`.
Status make_tiny_model(const QuickstartOptions& o, const std::filesystem::path& sft_jsonl,
                       const std::filesystem::path& dir);

// eval_stage.cpp: first-turn held-out evaluation of a checkpoint (report under `out`).
Result<EvalPoint> evaluate(const QuickstartOptions& o, const std::string& stage,
                           const std::filesystem::path& model, const std::filesystem::path& heldout_tasks,
                           const std::filesystem::path& out);

// train_stages.cpp: the two trainers, configured for the quickstart; each returns its final model.
Result<std::filesystem::path> run_sft_stage(const QuickstartOptions& o, const std::filesystem::path& base,
                                            const std::filesystem::path& dataset,
                                            const std::filesystem::path& out);
Result<std::filesystem::path> run_rl_stage(const QuickstartOptions& o, const std::filesystem::path& base,
                                           const std::filesystem::path& tasks,
                                           const std::filesystem::path& out);

// report.cpp: the before/after table as text; summary.json, curves.png (matplotlib) and report.html.
std::string format_table(const QuickstartResult& r);
Status write_outputs(const QuickstartOptions& o, QuickstartResult& r, const std::filesystem::path& sft_run,
                     const std::filesystem::path& rl_run);

}  // namespace musacoder::quickstart
