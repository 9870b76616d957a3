// Verified SFT data synthesis (`musacoder synth`; docs/synthesis.md):
//
//   grammar (seed) -> operator programs -> dedup (canonical form) -> decontaminate (--exclude-suite)
//   -> KernelBench task files + sidecars (<out>/tasks: also the RL task set)
//   -> teacher answers (K per task) -> MooreEval verdicts (parallel, journaled: resumable)
//   -> <out>/sft.jsonl (verified pairs in the prompt contract), rejected.jsonl, repair.jsonl,
//      decontamination.jsonl, card.json + dataset_card.md
//
// Determinism: the same options give byte-identical tasks, prompts, answers and record order
// (records are written in program order from the journal, whatever order verification ends
// in). Measured values (speedup, times) vary run to run; with `stable_metadata` they stay in
// the journal only, and every output file is byte-identical.
//
// Resumability: each finished program is appended to <out>/journal.jsonl (flushed line by
// line); a rerun with the same settings skips what the journal holds (a torn last line is
// dropped), so a killed run continues without duplicates. Different settings are refused.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/status.h"
#include "data/decontaminate.h"
#include "data/grammar.h"
#include "data/teacher.h"
#include "data/verifier.h"

namespace musacoder::data {

struct SynthOptions {
  // --- what to make
  uint64_t seed = 0;                    // --seed: programs, prompts and answers follow from it
  int count = 100;                      // --count: programs (tasks) to synthesize
  GrammarOptions grammar;               // --categories, --dtypes
  std::filesystem::path out_dir;        // --out
  std::filesystem::path exclude_suite;  // --exclude-suite: benchmark checkout to decontaminate against
  DecontaminationOptions decontamination;
  // --- teacher and verification
  std::string backend = "cpu";          // --backend: cpu | cuda (the prompt's target and the verifier's)
  int samples = 1;                      // --samples: answers per task (K); the best verified is kept
  bool keep_wrong = false;              // --keep wrong: failures become repair data (repair.jsonl)
  bool stable_metadata = false;         // --stable-metadata: no measured values in the outputs
  bool progress = true;                 // progress bar on stderr
  VerifierSettings verifier;            // --workers, --benchmark-iters, ...
};

struct SynthReport {
  int programs = 0;        // tasks in the set
  int duplicates = 0;      // draws dropped as duplicates of an earlier program
  int contaminated = 0;    // draws dropped by decontamination
  int resumed = 0;         // programs found done in the journal
  int verified = 0;        // programs verified by this run
  int kept = 0;            // verified pairs in sft.jsonl
  int rejected = 0;        // programs without a verified answer
  int repairs = 0;         // multi-turn repair records
  double seconds = 0;      // this run's wall time (verification included)
  double pairs_per_second = 0;  // programs verified by this run per second of verification
};

// Runs the pipeline. `teacher` writes the answers; `fixer` (may be null) writes the fixed
// version of a failed answer for repair data (--keep wrong), usually the rule teacher.
// `verifier` may be null only when nothing is left to verify (a finished run's outputs are
// rewritten); otherwise kFailedPrecondition.
Result<SynthReport> run_synthesis(const SynthOptions& options, Teacher& teacher, Teacher* fixer, Verifier* verifier);

// Only the task set: programs -> dedup -> decontamination -> <out>/tasks (no teacher, no verifier).
Result<SynthReport> write_task_set(const SynthOptions& options);

}  // namespace musacoder::data
