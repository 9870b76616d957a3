// A Kineto (PyTorch profiler) trace around a stretch of a benchmark: the CPU ops of the calling thread and,
// on a CUDA build, every GPU kernel, copy and launch (CUPTI, also inside CUDA graph replays). The trace is a
// Chrome trace JSON file; perf/common/trace_summary.py prints its GPU kernel time by kernel and the share of
// the stretch the GPU was busy.
#pragma once

#include <string>

namespace musacoder::perf {

// Starts tracing in the constructor, writes `path` in stop() (or the destructor). An empty path traces
// nothing, so a benchmark can hold one unconditionally.
class ProfileTrace {
 public:
  ProfileTrace(std::string path, bool cuda);
  ~ProfileTrace();
  ProfileTrace(const ProfileTrace&) = delete;
  ProfileTrace& operator=(const ProfileTrace&) = delete;
  void stop();

 private:
  std::string path_;
  bool active_ = false;
};

}  // namespace musacoder::perf
