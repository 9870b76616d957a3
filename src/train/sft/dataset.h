// SFT data: JSONL conversations rendered with the model's chat template, tokenized, with a per-token mask of
// the tokens the loss trains on.
//
// One JSON object per line (blank lines ignored), either
//   {"messages": [{"role": "system"|"user"|"assistant", "content": "..."}, ...]}     chat
//   {"prompt": "...", "completion": "..." [, "system": "..."]}                        pair: user → assistant
// Rendering (tokenizer/chat_template.h) is done turn by turn: for assistant turn i the text is split into
//   prompt_i = render(messages[:i], generation prompt)  — not trained
//   answer_i = render(messages[:i+1])[len(prompt_i):]   — trained: the content and the end-of-turn token
// (trailing newlines of answer_i are not trained). Each piece is encoded on its own, which is exactly how the
// model sees a conversation at generation time (the prompt ends at the assistant header).
// --loss-on all-assistant trains every assistant turn, last-turn only the last one, all every token.
// Too-long examples (> max_seq_len tokens) are truncated to max_seq_len or dropped; a truncated example whose
// trained tokens were all cut is dropped too. Both are counted.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace musacoder::train::sft {

// all: every token of the conversation, prompts included (language-model training on the corpus, e.g. a model
// trained from scratch that must first learn to read its prompts).
enum class LossOn { kAllAssistant, kLastTurn, kAll };
Result<LossOn> parse_loss_on(std::string_view name);  // "all-assistant" | "last-turn" | "all"
const char* loss_on_name(LossOn l);

enum class TooLong { kTruncate, kDrop };
Result<TooLong> parse_too_long(std::string_view name);  // "truncate" | "drop"
const char* too_long_name(TooLong t);

struct SftDataOptions {
  LossOn loss_on = LossOn::kAllAssistant;
  int64_t max_seq_len = 8192;  // tokens per example (and per packed row)
  TooLong too_long = TooLong::kTruncate;
  bool skip_bad_rows = false;  // false: the first malformed line fails the load, naming its line
};

// One tokenized conversation. trained[t] = 1 when token t is a loss target (predicted from tokens < t).
struct SftExample {
  std::vector<int32_t> ids;
  std::vector<uint8_t> trained;
  int64_t line = 0;  // 1-based line in the JSONL file
  int64_t trained_tokens() const;
};

struct SftDataStats {
  int64_t lines = 0;             // non-blank lines read
  int64_t examples = 0;          // kept
  int64_t bad_rows = 0;          // malformed, skipped (skip_bad_rows)
  int64_t truncated = 0;         // cut to max_seq_len and kept
  int64_t dropped_too_long = 0;  // dropped (too_long = drop, or nothing trainable left after truncation)
  int64_t tokens = 0;            // in kept examples
  int64_t trained_tokens = 0;
  std::string first_bad_row;  // the first skipped row's message
};

struct SftDataset {
  std::vector<SftExample> examples;
  SftDataStats stats;
};

// The chat template of a checkpoint directory: the format from the tokenizer's special tokens, and the
// default system prompt of Qwen2/2.5 templates (found in tokenizer_config.json's chat_template).
Result<tokenizer::ChatTemplateOptions> chat_template_for(const std::filesystem::path& model_dir,
                                                         const tokenizer::Tokenizer& tok);

// The messages of one JSONL record (either form above); the error names the offending field.
Result<std::vector<tokenizer::ChatMessage>> parse_record(const nlohmann::json& record);

// Tokens and loss mask of one conversation (no length limit). kInvalidArgument without an assistant turn.
Result<SftExample> encode_conversation(const std::vector<tokenizer::ChatMessage>& messages,
                                       const tokenizer::Tokenizer& tok,
                                       const tokenizer::ChatTemplateOptions& chat, LossOn loss_on);

// Tokens of the smallest conversation (empty user turn, empty assistant turn): the template's overhead.
Result<int64_t> template_overhead(const tokenizer::Tokenizer& tok,
                                  const tokenizer::ChatTemplateOptions& chat);

// Reads a JSONL file. Fails for a missing or empty file, a malformed line (unless skip_bad_rows: "FILE:LINE:
// message"), max_seq_len not above the template overhead, or when no example is left.
Result<SftDataset> load_sft_dataset(const std::filesystem::path& path, const tokenizer::Tokenizer& tok,
                                    const tokenizer::ChatTemplateOptions& chat,
                                    const SftDataOptions& options);

}  // namespace musacoder::train::sft
