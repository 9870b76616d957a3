// Hand-made eval-model records for the harness's tests (aggregate, reports, the rendered page): one turn of
// one sample with a scripted verdict, as the scorer would have written it.
#pragma once

#include <optional>
#include <string>

#include "kernelbench/records.h"
#include "kernelbench/scorer.h"

namespace musacoder::kernelbench {

// `cls` is the verdict class (its message too unless `message` is given); `speedup` goes into the verdict;
// `done` ends the sample's chain; `infra` is the infrastructure failure, if any.
inline TurnRecord scripted_turn(const std::string& task, int level, int sample, int turn,
                                const std::string& cls, std::optional<double> speedup, bool done,
                                const std::string& infra = "", const std::string& message = "") {
  TurnRecord r;
  r.task_id = task;
  r.level = level;
  r.sample = sample;
  r.turn = turn;
  r.verdict = local_verdict(task, cls, message.empty() ? cls : message);
  if (speedup) r.verdict["speedup"] = *speedup;
  r.infra = infra;
  r.chain_done = done;
  return r;
}

}  // namespace musacoder::kernelbench
