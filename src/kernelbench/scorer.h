// Scoring answers with MooreEval. This file pair is the harness's only door to the verifier: in-process
// through data::Verifier, or a MooreEval service (`mooreeval serve`) through POST /v1/evaluate. When the
// verifier's front door (src/mooreeval/mooreeval.h) lands, only scorer.cpp changes.
//
// score() takes the code already extracted from the answer (prompts::extract_code) and blocks until its
// verdict, as JSON in the verdict schema (docs/verdict.schema.json). Anything that keeps the verifier from
// judging (a task it cannot load, the service down or past its deadline, a reply that is not a verdict)
// comes back as an `infra_error` verdict whose message says why: it is never the model's fault.
//
// Thread-safety: score() may be called from many threads; the in-process scorer collects concurrent calls
// into batches that the verifier runs `workers` at a time, so generation of other samples goes on while
// a batch builds and runs.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/status.h"
#include "data/verifier.h"
#include "kernelbench/suite.h"

namespace musacoder::kernelbench {

struct ScorerSettings {
  data::VerifierSettings verifier;      // in-process verifier (when service_url is empty)
  std::string service_url;              // "http://host:port": a MooreEval service instead
  std::string service_token;            // Authorization: Bearer ... for the service (may be empty)
  double service_deadline_seconds = 900;
  std::filesystem::path scratch_dir;    // submission files for the in-process verifier (required then)
};

class Scorer {
 public:
  // Starts the verifier (in-process: toolchain probe and warm runners) or checks the service's /healthz.
  static Result<std::unique_ptr<Scorer>> create(const ScorerSettings& settings);
  virtual ~Scorer() = default;
  virtual nlohmann::json score(const SuiteTask& task, const std::string& code) = 0;
  virtual std::string describe() const = 0;  // "in-process cpu" / "service http://..."
};

// What the harness reads from a verdict.
struct VerdictFacts {
  std::string verdict_class;      // "ok", "wrong_answer", ..., "infra_error"
  bool infra = false;             // infra_error, or no verdict class at all
  bool correct = false;           // "ok"
  std::optional<double> speedup;  // reference time / candidate time, when measured
};
VerdictFacts read_verdict(const nlohmann::json& verdict);

// A verdict made here: infra_error when nothing could be judged, format_error when the answer held no code.
nlohmann::json local_verdict(const std::string& task_id, const std::string& verdict_class, const std::string& message);

}  // namespace musacoder::kernelbench
