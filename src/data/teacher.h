// Teachers write the kernel for a task. The synthesizer asks one for up to K answers per task
// (rejection sampling: every answer is verified and the best verified one is kept), so a
// sampling teacher — an OpenAI-compatible endpoint today, our own engine once it exists — and
// the deterministic rule-based generator plug in the same way.
//
// Thread-safety: answer() may be called from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/program.h"
#include "prompts/prompts.h"

namespace musacoder::data {

struct TeacherRequest {
  std::string task_id;
  const Program* program = nullptr;         // the grammar program (null for tasks from elsewhere)
  std::vector<prompts::Message> messages;  // [system, user] in the prompt contract
  prompts::Target target = prompts::Target::kCpu;
  int samples = 1;                          // answers wanted (K)
  uint64_t seed = 0;                        // sampling seed of this request
};

struct TeacherAnswer {
  std::string response;  // the assistant turn as the teacher wrote it (prose + fenced module)
};

class Teacher {
 public:
  virtual ~Teacher() = default;
  // Recorded in every record ("rule", "endpoint:<model>", "engine:<checkpoint>").
  virtual std::string name() const = 0;
  // Up to request.samples answers (a deterministic teacher may give one). Errors are the
  // teacher's infrastructure (kUnavailable: endpoint down, kInvalidArgument: it cannot handle
  // the request); the synthesizer records them as rejections and goes on.
  virtual Result<std::vector<TeacherAnswer>> answer(const TeacherRequest& request) = 0;
};

// The rule-based generator (rule_kernels.h): one answer per program, needs request.program.
// `reasoning`: start the answer with a short description of the kernel's plan.
std::unique_ptr<Teacher> make_rule_teacher(bool reasoning = true);

struct EndpointOptions {
  std::string base_url;             // "https://host/v1" (POST <base_url>/chat/completions)
  std::string model;                // the "model" field
  std::string api_key;              // Bearer token (empty: none); main() reads it from the environment
  double temperature = 0.7;         // the paper's sampling protocol
  double top_p = 0.95;
  int max_tokens = 8192;
  int timeout_seconds = 600;        // per request
};

// Any OpenAI-compatible chat completions endpoint (vLLM, SGLang, hosted APIs): `n` = samples.
// kInvalidArgument for a malformed base_url.
Result<std::unique_ptr<Teacher>> make_endpoint_teacher(const EndpointOptions& options);

}  // namespace musacoder::data
