#include "train/common/metrics.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace musacoder::train {
namespace {

std::string clock_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--:--";
  const auto s = static_cast<int64_t>(seconds);
  char b[32];
  std::snprintf(b, sizeof(b), "%02lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  return b;
}

std::string scalars_text(const Scalars& shown) {
  std::string t;
  for (const auto& [name, value] : shown) {
    char b[96];
    std::snprintf(b, sizeof(b), " %s %.4g", name.c_str(), value);
    t += b;
  }
  return t;
}

}  // namespace

double model_flops_per_token(int64_t matmul_params, int64_t layers, int64_t hidden, double mean_context) {
  return 6.0 * static_cast<double>(matmul_params) +
         6.0 * static_cast<double>(layers) * static_cast<double>(hidden) * mean_context;
}

ProgressBar::ProgressBar(int64_t first_step, int64_t total_steps, bool tty)
    : first_(first_step), total_(total_steps), tty_(tty), start_(std::chrono::steady_clock::now()) {}

void ProgressBar::update(int64_t step, const Scalars& shown) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double done = static_cast<double>(step - first_);
  const double eta = done > 0 ? elapsed / done * static_cast<double>(total_ - step) : NAN;
  if (!tty_) {
    std::fprintf(stderr, "step %lld/%lld%s elapsed %s eta %s\n", static_cast<long long>(step),
                 static_cast<long long>(total_), scalars_text(shown).c_str(), clock_text(elapsed).c_str(),
                 clock_text(eta).c_str());
    return;
  }
  constexpr int kWidth = 30;
  const int filled = total_ > 0 ? static_cast<int>(kWidth * step / total_) : kWidth;
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::fprintf(stderr, "\r\033[K[%s] %lld/%lld%s | %s<%s", bar.c_str(), static_cast<long long>(step),
               static_cast<long long>(total_), scalars_text(shown).c_str(), clock_text(elapsed).c_str(),
               clock_text(eta).c_str());
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (tty_) std::fprintf(stderr, "\n");
}

Result<MetricsLogger> MetricsLogger::open(const std::filesystem::path& run_dir, bool tensorboard) {
  MetricsLogger m;
  m.jsonl_ = run_dir / "metrics.jsonl";
  if (tensorboard) {
    auto tb = TensorBoardWriter::open(run_dir / "tensorboard");
    if (!tb.ok()) return tb.status();
    m.tb_.emplace(std::move(*tb));
  }
  return m;
}

Status MetricsLogger::log(int64_t step, const std::string& split, const Scalars& scalars) {
  nlohmann::json j = {{"step", step}, {"split", split}};
  for (const auto& [name, value] : scalars) j[name] = std::isfinite(value) ? nlohmann::json(value) : nullptr;
  std::ofstream out(jsonl_, std::ios::app);
  out << j.dump() << "\n";
  out.flush();
  if (!out) return internal_error(jsonl_.string() + ": write failed: " + std::strerror(errno));
  if (!tb_) return {};
  Scalars tagged;
  for (const auto& [name, value] : scalars) tagged.emplace_back(split + "/" + name, value);
  return tb_->add_scalars(step, tagged);
}

}  // namespace musacoder::train
