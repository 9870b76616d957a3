#include "mooreeval/runner/protocol.h"

#include <string>

namespace musacoder::run {

namespace fs = std::filesystem;

std::string_view job_key_name(JobKey key) {
  switch (key) {
    case JobKey::kTaskPath: return "task_path";
    case JobKey::kCandidatePath: return "candidate_path";
    case JobKey::kDeviceType: return "device_type";
    case JobKey::kAllowedTorchOps: return "allowed_torch_ops";
    case JobKey::kForbidFallbackCode: return "forbid_fallback_code";
    case JobKey::kDevice: return "device";
    case JobKey::kTrialSeeds: return "trial_seeds";
    case JobKey::kInitSeed: return "init_seed";
    case JobKey::kCheckSeeds: return "check_seeds";
    case JobKey::kRecheckSeed: return "recheck_seed";
    case JobKey::kRecheckMaxBytes: return "recheck_max_bytes";
    case JobKey::kWarmupIters: return "warmup_iters";
    case JobKey::kBenchmarkIters: return "benchmark_iters";
    case JobKey::kFlushL2: return "flush_l2";
    case JobKey::kHostHeadStart: return "host_head_start";
    case JobKey::kTimingRounds: return "timing_rounds";
    case JobKey::kBenchmark: return "benchmark";
    case JobKey::kControlFd: return "control_fd";
    case JobKey::kThreads: return "threads";
    case JobKey::kOutputsPath: return "outputs_path";
    case JobKey::kChecksPath: return "checks_path";
    case JobKey::kTimingPath: return "timing_path";
    case JobKey::kRecheckPath: return "recheck_path";
    case JobKey::kPoisonBytes: return "poison_bytes";
    case JobKey::kPoisonHost: return "poison_host";
    case JobKey::kMinOwnKernelShare: return "min_own_kernel_share";
    case JobKey::kLateJobPath: return "late_job_path";
    case JobKey::kKernelNames: return "kernel_names";
    case JobKey::kExtensions: return "extensions";
    case JobKey::kFallbackBlocks: return "fallback_blocks";
  }
  return "";
}

const std::vector<JobKey>& all_job_keys() {
  static const std::vector<JobKey> keys = [] {
    std::vector<JobKey> k;
    for (int i = 0; i <= static_cast<int>(JobKey::kFallbackBlocks); ++i) k.push_back(static_cast<JobKey>(i));
    return k;
  }();
  return keys;
}

std::string_view gate_name(Gate gate) {
  switch (gate) {
    case Gate::kLoaded: return "loaded";
    case Gate::kOutputsReady: return "outputs_ready";
    case Gate::kTimed: return "timed";
  }
  return "";
}

std::string_view command_name(Command command) {
  switch (command) {
    case Command::kRun: return "run";
    case Command::kBench: return "bench";
    case Command::kExit: return "exit";
    case Command::kRemeasure: return "remeasure";
  }
  return "";
}

Fault fault_of_phase(std::string_view phase) {
  return phase.starts_with("candidate_") ? Fault::kCandidate : Fault::kInfrastructure;
}

namespace {
std::string side_name(Side side) { return side == Side::kReference ? "reference" : "candidate"; }
}  // namespace

fs::path job_file(const fs::path& dir, std::string_view mode) { return dir / (std::string(mode) + ".job.json"); }
fs::path result_file(const fs::path& dir, std::string_view mode) {
  return dir / (std::string(mode) + ".result.json");
}
fs::path phase_file(const fs::path& dir, std::string_view mode) { return dir / (std::string(mode) + ".phase"); }
fs::path outputs_file(const fs::path& dir, Side side) { return dir / (side_name(side) + ".bin"); }
fs::path checks_file(const fs::path& dir, Side side) { return dir / (side_name(side) + "_checks.bin"); }
fs::path timing_file(const fs::path& dir, Side side) { return dir / (side_name(side) + "_timing.json"); }
fs::path recheck_file(const fs::path& dir, Side side) { return dir / (side_name(side) + "_recheck.json"); }

}  // namespace musacoder::run
