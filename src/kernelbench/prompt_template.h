// The first turn the model sees for a task, in one of two templates:
//   musacoder    the project's prompt contract (src/prompts: system + user, one python block answer);
//                what MusaCoder models were trained on and the default.
//   kernelbench  a one-shot prompt in the manner of KernelBench's own (a single user message: the job,
//                a worked example of a reference model and its load_inline rewrite, then the task), in our
//                words, for comparing a model with numbers published under KernelBench's prompt.
// Feedback turns (multi-turn repair) are the contract's in both (prompts::render_feedback).
// Pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "kernelbench/suite.h"
#include "prompts/prompts.h"

namespace musacoder::kernelbench {

enum class PromptTemplate { kMusacoder, kKernelBench };
const char* prompt_template_name(PromptTemplate t);             // "musacoder", "kernelbench"
Result<PromptTemplate> parse_prompt_template(std::string_view);  // inverse

std::vector<prompts::Message> first_turn(const SuiteTask& task, PromptTemplate t, const prompts::PromptOptions& o);

// SHA-256 (hex) of a conversation as JSON: the "prompt hash" of every sample record.
std::string conversation_hash(const std::vector<prompts::Message>& conversation);

}  // namespace musacoder::kernelbench
