// Internals of the synthesizer (synth.h), shared by its translation units and its tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/decontaminate.h"
#include "data/program.h"
#include "data/synth.h"

namespace musacoder::data {

// One program of the set, rendered.
struct SynthProgram {
  int index = 0;      // position in the set (records are written in this order)
  std::string id;     // task id: "<category>/p<index, 5 digits>"
  uint64_t seed = 0;  // the grammar seed it was drawn from
  Program program;
  std::string source, sidecar;  // the task module and its sidecar JSON
};

struct ProgramSet {
  std::vector<SynthProgram> programs;
  int duplicates = 0;
  std::vector<nlohmann::json> overlaps;  // decontamination.jsonl lines
};

// Draws programs until `count` distinct, uncontaminated ones (at most 50 draws per program).
Result<ProgramSet> draw_programs(const SynthOptions& options);

// journal.jsonl: one JSON object per finished program ({"index", "id", "teacher", "answers":
// [{"response", "verdict"}], "best", "teacher_error", "fix"}), appended and flushed per line.
// Thread-safety: append() is serialised internally.
class Journal {
 public:
  // Reads an existing journal (a torn last line is dropped and the file rewritten without it).
  static Result<Journal> open(const std::filesystem::path& path);
  Status append(const nlohmann::json& entry);
  const std::map<int, nlohmann::json>& entries() const { return entries_; }

 private:
  std::filesystem::path path_;
  std::map<int, nlohmann::json> entries_;  // by index
  std::unique_ptr<std::mutex> mu_ = std::make_unique<std::mutex>();
};

// The answer to keep: the `ok` one with the highest speedup (ties: the first); -1 when none.
int best_answer(const nlohmann::json& answers);

// Output files from the journal, in program order.
struct Outputs {
  std::string sft, rejected, repair;  // JSONL texts
  nlohmann::ordered_json card;        // card.json
  std::string card_markdown;          // dataset_card.md
  int kept = 0, rejected_count = 0, repairs = 0;
};
Outputs compose_outputs(const SynthOptions& options, const std::vector<SynthProgram>& programs,
                        const std::map<int, nlohmann::json>& journal, const std::string& verifier_version);

// The settings a journal belongs to (manifest.json): a rerun must match them to resume.
nlohmann::ordered_json run_manifest(const SynthOptions& options, const std::string& teacher);

}  // namespace musacoder::data
