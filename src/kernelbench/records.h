// samples.jsonl: one line per (task, sample, turn), appended as each turn is judged. It is the run's
// ground truth: metrics and reports are recomputed from it, and a rerun on the same out dir resumes from it.
//
//   {"schema":"musacoder.eval-sample/1","task":"level1/19_ReLU","level":1,"sample":3,"turn":1,
//    "prompt_hash":"<sha256 of the conversation sent>","response":"...","finish_reason":"stop",
//    "code_found":true,"verdict":{...verdict schema...},"infra":"", "generate_seconds":4.2,
//    "verify_seconds":1.9,"chain_done":true}
//
// `infra` is non-empty when no honest verdict exists (generation failed after retries, or the verifier
// reported infra_error): such a turn is counted apart and never scored. `chain_done` marks the sample's last
// turn (it passed, or the turn budget is spent, or it hit an infra failure).
//
// Thread-safety: SampleLog::append is serialised internally; reading happens before any append.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "core/status.h"

namespace musacoder::kernelbench {

inline constexpr const char* kSampleSchema = "musacoder.eval-sample/1";

struct TurnRecord {
  std::string task_id;
  int level = 1;
  int sample = 0;  // 0-based
  int turn = 1;    // 1-based
  std::string prompt_hash;
  std::string response;
  std::string finish_reason;
  bool code_found = false;
  nlohmann::json verdict;  // verdict schema (made locally for format_error / infra_error)
  std::string infra;       // non-empty: infrastructure failure, why
  double generate_seconds = 0, verify_seconds = 0;
  bool chain_done = false;
};

nlohmann::json to_json(const TurnRecord& r);
Result<TurnRecord> turn_record_from_json(const nlohmann::json& j);

// Records keyed by (task, sample); each chain's turns in order. A later line for the same (task, sample,
// turn) replaces an earlier one (a resumed run retries infra failures).
using ChainKey = std::pair<std::string, int>;
using Chains = std::map<ChainKey, std::vector<TurnRecord>>;

class SampleLog {
 public:
  // Opens (creating) `path` for appending. Existing lines are read into chains(); a torn last line
  // (a run killed mid-write) is cut off the file; any other malformed line is an error (kInvalidArgument).
  static Result<std::unique_ptr<SampleLog>> open(const std::filesystem::path& path);
  const Chains& chains() const { return chains_; }
  std::size_t lines_read() const { return lines_read_; }
  // Writes one line and flushes it. Errors: kInternal when the write fails.
  Status append(const TurnRecord& r);

 private:
  std::filesystem::path path_;
  Chains chains_;
  std::size_t lines_read_ = 0;
  std::mutex mu_;
  std::ofstream out_;  // GUARDED_BY(mu_)
};

// Every chain in a log file (read-only; a torn last line is skipped).
Result<Chains> read_chains(const std::filesystem::path& path);

}  // namespace musacoder::kernelbench
