// The prompt contract: ONE rendering of a task, of a model's answer and of a verdict, shared
// by SFT data (src/data), RL rollouts and evaluation, so a model is trained on exactly the
// text it is later asked with (DESIGN.md §7; docs/prompts.md).
//
//   task     -> [system, user]: the KernelBench reference in one ```python block, asking for ONE
//               complete Python module defining `ModelNew` that builds its kernel with load_inline
//               (a single block: splitting the answer into sections cost the released model
//               correctness in a public re-run).
//   response -> code: the last ```python (or untagged) block that defines `class ModelNew`,
//               looking only after the last `</think>` when the response has one.
//   verdict  -> feedback user turn: the verdict's facts as JSON (compiler/runner log
//               middle-truncated to a token budget) and "fix correctness first / optimise if
//               already correct". Earlier turns stay in the conversation; the caller appends.
//
// Pure functions of their arguments (thread-safe, deterministic); no libtorch, no I/O.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace musacoder::prompts {

// Bumped whenever any rendered byte changes: datasets record it, trainers and evaluators
// check that they render with the version their data was made with.
inline constexpr const char* kContractVersion = "musacoder.prompt/1";

// What the kernel must run on. Selects the system prompt's backend rules.
enum class Target { kCuda, kCpu, kMusa };
const char* target_name(Target t);             // "cuda", "cpu", "musa"
Result<Target> parse_target(std::string_view);  // inverse of target_name

struct Message {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
  bool operator==(const Message&) const = default;
};
nlohmann::json to_json(const std::vector<Message>& messages);  // [{"role":..,"content":..}, ...]

struct PromptOptions {
  Target target = Target::kCuda;  // backend the kernel must run on
  // Feedback turns: the log is cut in the middle to this many tokens (head and tail kept).
  std::size_t max_log_tokens = 1024;
  // Counts tokens of a log for the budget above; empty: 4 bytes per token (a conservative
  // estimate for code and compiler output with BPE vocabularies).
  std::function<std::size_t(std::string_view)> count_tokens;
};

// A task as the prompt shows it.
struct TaskPrompt {
  std::string reference_source;  // the KernelBench task module (Model, get_inputs, get_init_inputs)
  std::string description;       // optional one line (the sidecar's); empty: not shown
};

// [system, user] for a task.
std::vector<Message> render_task(const TaskPrompt& task, const PromptOptions& options);

// The assistant turn that answers a task with `code` (a complete module), optionally after a
// short reasoning preamble: "<preamble>\n\n```python\n<code>```".
std::string render_answer(std::string_view code, std::string_view preamble = {});

// The code of a response: see the contract above. Errors (kInvalidArgument) say why none
// was found (no block, no block defining ModelNew, nothing after </think>).
Result<std::string> extract_code(std::string_view response);

// The facts of a verdict that a feedback turn shows.
struct FeedbackFacts {
  std::string status;              // verdict class: ok, compile_error, wrong_answer, ...
  bool compiled = false;           // the extension built
  int trials = 0, passed = 0;      // numeric trials run / within tolerance
  std::optional<double> speedup;   // reference time / candidate time (only when correct)
  std::string stage;               // the stage that decided: build, run, verify, ...
  std::string message;             // one line: why this verdict
  std::string log;                 // compiler or runner output (truncated when rendered)
};

// From a verdict as JSON (docs/verdict.schema.json, "mooreeval.verdict/1"): what the verifier,
// its service and saved result files all produce. Missing fields stay at their defaults.
FeedbackFacts feedback_facts(const nlohmann::json& verdict);

// The user turn that follows a failed (or slow) answer.
Message render_feedback(const FeedbackFacts& facts, const PromptOptions& options);

}  // namespace musacoder::prompts
