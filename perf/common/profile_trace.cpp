#include "profile_trace.h"

#include <torch/csrc/autograd/profiler_kineto.h>

#include <cstdio>
#include <filesystem>
#include <set>

namespace musacoder::perf {
namespace {

namespace prof = torch::profiler::impl;

std::set<prof::ActivityType> activities(bool cuda) {
  std::set<prof::ActivityType> a = {prof::ActivityType::CPU};
  if (cuda) a.insert(prof::ActivityType::CUDA);
  return a;
}

}  // namespace

ProfileTrace::ProfileTrace(std::string path, bool cuda) : path_(std::move(path)) {
  if (path_.empty()) return;
  // The trace's folder is made here: Kineto only logs a failed open and the run would end without a trace.
  if (const auto dir = std::filesystem::path(path_).parent_path(); !dir.empty())
    std::filesystem::create_directories(dir);
  const prof::ProfilerConfig config(prof::ProfilerState::KINETO);
  torch::autograd::profiler::prepareProfiler(config, activities(cuda));
  torch::autograd::profiler::enableProfiler(config, activities(cuda));
  active_ = true;
}

ProfileTrace::~ProfileTrace() {
  try {
    stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "profile trace %s: %s\n", path_.c_str(), e.what());
  }
}

void ProfileTrace::stop() {
  if (!active_) return;
  active_ = false;
  auto result = torch::autograd::profiler::disableProfiler();
  if (result) result->save(path_);
  std::fprintf(stderr, "profile trace: %s\n", path_.c_str());
}

}  // namespace musacoder::perf
