// verdict -> feedback turn.
#include <string>

#include "core/text.h"
#include "prompts/prompts.h"

namespace musacoder::prompts {
namespace {

std::size_t tokens_of(std::string_view s, const PromptOptions& o) {
  return o.count_tokens ? o.count_tokens(s) : (s.size() + 3) / 4;
}

// The log cut in the middle until it fits the token budget (head and tail both survive: the
// first error and the final summary). Byte budgets shrink until the count fits.
std::string truncated_log(const std::string& log, const PromptOptions& o) {
  if (tokens_of(log, o) <= o.max_log_tokens) return log;
  std::size_t bytes = o.max_log_tokens * 4;
  std::string cut = sanitize_utf8(truncate_middle(log, bytes));
  while (bytes > 64 && tokens_of(cut, o) > o.max_log_tokens) {
    bytes = bytes * 3 / 4;
    cut = sanitize_utf8(truncate_middle(log, bytes));
  }
  return cut;
}

std::string instruction(const FeedbackFacts& f) {
  if (f.status == "ok")
    return "Your kernel is correct. Optimise it: make it faster while keeping every output "
           "within tolerance. Reply with the complete improved module in one ```python block.";
  return "Your answer is not correct yet. Fix correctness first (make it compile, run and match "
         "the reference in every trial); optimise only once it is correct. Reply with the "
         "complete corrected module in one ```python block.";
}

}  // namespace

FeedbackFacts feedback_facts(const nlohmann::json& v) {
  FeedbackFacts f;
  if (!v.is_object()) return f;
  f.status = v.value("verdict", "");
  f.compiled = v.value("compiled", false);
  f.trials = v.value("trials", 0);
  f.passed = v.value("passed", 0);
  if (v.contains("speedup") && v["speedup"].is_number()) f.speedup = v["speedup"].get<double>();
  f.stage = v.value("stage", "");
  f.message = v.value("message", "");
  f.log = v.value("log", "");
  return f;
}

Message render_feedback(const FeedbackFacts& f, const PromptOptions& options) {
  nlohmann::json facts = {{"status", f.status},
                          {"compiled", f.compiled},
                          {"correctness", std::to_string(f.passed) + "/" + std::to_string(f.trials)},
                          {"speedup", f.speedup ? nlohmann::json(*f.speedup) : nlohmann::json(nullptr)},
                          {"error_class", f.status == "ok" ? "" : f.status},
                          {"stage", f.stage},
                          {"message", sanitize_utf8(f.message)}};
  if (!f.log.empty()) facts["log"] = truncated_log(f.log, options);
  std::string content = "The verifier's result for your last answer:\n```json\n" + facts.dump(2) + "\n```\n\n" +
                        instruction(f);
  return {"user", std::move(content)};
}

}  // namespace musacoder::prompts
