// Token assembly of a multi-turn repair conversation, token-faithful: the sequence the trainer scores is the
// exact tokens the engine saw and produced, turn after turn:
//
//   ids = prompt(system, user) · response₁ · tail₁ · response₂ · tail₂ · response₃
//   tailᵢ = the chat template's close of assistant turn i + the feedback user turn + the generation prompt
//
// Only response tokens are ever trained (turn index ≥ 0); prompt and feedback tokens have turn −1. The tail is
// the text the template adds after the assistant's content (found by rendering the conversation with and
// without the feedback turn), so a response that ended on the template's end-of-turn token (<|im_end|>,
// <|eot_id|>) keeps that token as its own trained last token and the tail starts after it.
// Thread-safety: const methods, safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "prompts/prompts.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace musacoder::train::rl {

class ChatCodec {
 public:
  ChatCodec(const tokenizer::Tokenizer& tok, tokenizer::ChatTemplateOptions chat, prompts::PromptOptions prompt)
      : tok_(&tok), chat_(std::move(chat)), prompt_(std::move(prompt)) {}

  // The first prompt of a task: [system, user] rendered with the generation prompt, as tokens.
  Result<std::vector<int32_t>> encode_prompt(const std::vector<prompts::Message>& messages) const;
  // The tokens between assistant turn `messages.back()` (its content as generated) and the next response:
  // the template's close of that turn, `feedback` and the generation prompt. `response_ids` are the
  // response's tokens; a leading token of the tail equal to their last token (the end-of-turn token the
  // model generated) is dropped.
  Result<std::vector<int32_t>> feedback_tail(const std::vector<prompts::Message>& messages,
                                             const prompts::Message& feedback,
                                             const std::vector<int32_t>& response_ids) const;
  Result<std::vector<int32_t>> encode_text(const std::string& text) const { return tok_->encode(text); }
  const prompts::PromptOptions& prompt_options() const { return prompt_; }

 private:
  Result<std::string> render(const std::vector<prompts::Message>& m, bool generation_prompt) const;
  const tokenizer::Tokenizer* tok_;
  tokenizer::ChatTemplateOptions chat_;
  prompts::PromptOptions prompt_;
};

}  // namespace musacoder::train::rl
