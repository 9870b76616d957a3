// The contract between the orchestrator (C++) and the Python runner (python/mooreeval_runner),
// in one place: the keys of a job file, the gates a runner announces on its control pipe, the
// commands it answers to, the progress phases it marks, and the names of the files of a job dir.
// Versioned by docs/runner-job.schema.json ("mooreeval.runner-job/1"); the Python mirror is
// python/mooreeval_runner/protocol.py. A unit test on each side compares its key list with the
// schema's, so neither side can add a key the other does not know.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

namespace musacoder::run {

inline constexpr std::string_view kJobSchema = "mooreeval.runner-job/1";

// Every key a job (or a candidate's late job) may hold. Modes: i inspect, r reference, c candidate,
// l late job file (written after the build).
enum class JobKey {
  kTaskPath,           // i r c  the task module
  kCandidatePath,      // i c    the candidate module
  kDeviceType,         // i      "cpu" | "cuda": what inspection answers device queries as
  kAllowedTorchOps,    // i      aten ops a forward may dispatch (the C++ default_allowed_ops())
  kForbidFallbackCode, // i      strict static rule for fallback blocks
  kDevice,             // r c    "cpu", "cuda:N", "musa:N"
  kTrialSeeds,         // r c    one seed per trial
  kInitSeed,           // r c    seed before constructing Model / ModelNew
  kCheckSeeds,         // r c    the consistency calls after the benchmark
  kRecheckSeed,        // r c    the second timing method's inputs
  kRecheckMaxBytes,    // r c    memory the re-check may spend on inputs
  kWarmupIters,        // r c
  kBenchmarkIters,     // r c
  kFlushL2,            // r c    cuda
  kHostHeadStart,      // r c    cuda: device-side wait before each timed call
  kTimingRounds,       // r c    rounds the benchmark is split into (the orchestrator alternates the sides)
  kBenchmark,          // r c    manual runs without a control pipe: benchmark after the trials
  kControlFd,          // r c    the control pipe's fd (gates and commands)
  kThreads,            // r c    torch intra-op threads (0: default)
  kOutputsPath,        // r c    trial outputs (tensor file format, verify/output_file.h)
  kChecksPath,         // r c    consistency-call outputs
  kTimingPath,         // r c    benchmark timings (JSON)
  kRecheckPath,        // r c    re-check timings (JSON)
  kPoisonBytes,        // c      cuda: allocator memory filled with NaN per trial
  kPoisonHost,         // c      glibc M_PERTURB during trials
  kMinOwnKernelShare,  // c      cuda: least device-time share of the candidate's own kernels
  kLateJobPath,        // c      where the late job appears
  kKernelNames,        // l      the candidate's kernel names (decoy detection)
  kExtensions,         // l      built libraries: [{name, path, lean_shim?}]
  kFallbackBlocks,     // l      forward's conditional blocks with PyTorch compute
};
std::string_view job_key_name(JobKey key);
const std::vector<JobKey>& all_job_keys();

// What a runner announces on its control pipe, and waits after for a command.
enum class Gate { kLoaded, kOutputsReady, kTimed };
std::string_view gate_name(Gate gate);

// The orchestrator's answers at a gate.
enum class Command { kRun, kBench, kExit, kRemeasure };
std::string_view command_name(Command command);

// Whose fault a runner's death is, from the last progress phase it marked: phases named
// candidate_* (candidate_loading, _running, _checking, _timing, _writing) mean candidate code had
// started; anything else (importing_torch, none) means ours.
enum class Fault { kInfrastructure, kCandidate };
Fault fault_of_phase(std::string_view phase);

// Which side of an evaluation a job dir belongs to.
enum class Side { kReference, kCandidate };

// File names in a job dir.
std::filesystem::path job_file(const std::filesystem::path& dir, std::string_view mode);     // <mode>.job.json
std::filesystem::path result_file(const std::filesystem::path& dir, std::string_view mode);  // <mode>.result.json
std::filesystem::path phase_file(const std::filesystem::path& dir, std::string_view mode);   // <mode>.phase
std::filesystem::path outputs_file(const std::filesystem::path& dir, Side side);  // reference.bin
std::filesystem::path checks_file(const std::filesystem::path& dir, Side side);   // reference_checks.bin
std::filesystem::path timing_file(const std::filesystem::path& dir, Side side);   // reference_timing.json
std::filesystem::path recheck_file(const std::filesystem::path& dir, Side side);  // reference_recheck.json
inline constexpr std::string_view kLateJobName = "late.json";                      // the candidate's late job

}  // namespace musacoder::run
