// Training observability: one JSON object per logged step appended to <run>/metrics.jsonl, the same scalars as
// TensorBoard events under <run>/tensorboard/, and a progress line on stderr (a redrawn bar with ETA on a
// terminal, one plain line per logged step otherwise). Only rank 0 logs. Thread-safety: none.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "train/common/tensorboard.h"

namespace musacoder::train {

// Named scalars of one step, in the order they are printed ("loss", "lr", "grad_norm", ...).
using Scalars = std::vector<std::pair<std::string, double>>;

// Model FLOPs utilisation (MFU) = tokens/s · model_flops_per_token / peak FLOP/s, with training FLOPs per token
//   6·N + 6·L·C·T_mean     N = matmul parameters (embedding lookup excluded, LM head included), L layers, C hidden,
// T_mean = mean number of keys a query attends to (causal: about half the sequence). Recomputation by activation
// checkpointing is not counted (the usual convention: MFU measures useful work).
double model_flops_per_token(int64_t matmul_params, int64_t layers, int64_t hidden, double mean_context);

class ProgressBar {
 public:
  // Steps [first_step, total_steps) remain; `tty` selects the redrawn bar.
  ProgressBar(int64_t first_step, int64_t total_steps, bool tty);
  // Called after update `step` (1-based count of updates done) with the scalars to show.
  void update(int64_t step, const Scalars& shown);
  void finish();

 private:
  int64_t first_, total_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
};

class MetricsLogger {
 public:
  // Opens (appends to) <run_dir>/metrics.jsonl and, when `tensorboard`, a new event file.
  static Result<MetricsLogger> open(const std::filesystem::path& run_dir, bool tensorboard);
  // {"step": step, "split": split, name: value, ...} to JSONL; TensorBoard tags "<split>/<name>".
  Status log(int64_t step, const std::string& split, const Scalars& scalars);

 private:
  std::filesystem::path jsonl_;
  std::optional<TensorBoardWriter> tb_;
};

}  // namespace musacoder::train
