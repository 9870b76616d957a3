// Chat templates as text, for the two formats these model families use (the output equals
// transformers' apply_chat_template(..., tokenize=False) with the checkpoints' own Jinja templates for
// system/user/assistant conversations without tools):
//   ChatML (Qwen2/2.5/3):  <|im_start|>{role}\n{content}<|im_end|>\n ... [<|im_start|>assistant\n]
//   Llama 3:  <|begin_of_text|><|start_header_id|>{role}<|end_header_id|>\n\n{trim(content)}<|eot_id|> ...
//             [<|start_header_id|>assistant<|end_header_id|>\n\n]
// Encode the result with Tokenizer::encode (special tokens are matched there).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace musacoder::tokenizer {

class Tokenizer;

enum class ChatFormat { kChatML, kLlama3 };

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

struct ChatTemplateOptions {
  ChatFormat format = ChatFormat::kChatML;
  // Append the header that opens the assistant's turn.
  bool add_generation_prompt = true;
  // ChatML only: a system message inserted when the conversation has none. Qwen2/2.5 templates use
  // "You are Qwen, created by Alibaba Cloud. You are a helpful assistant." (Qwen2.5-Coder: the same);
  // Qwen3's template inserts none (empty).
  std::string default_system;
  // Llama 3 only: the BOS text put before the first message.
  std::string bos_token = "<|begin_of_text|>";
};

// The prompt text. kInvalidArgument for an unknown role or an empty conversation without a
// generation prompt.
Result<std::string> render_chat(const std::vector<ChatMessage>& messages, const ChatTemplateOptions& options);

// ChatML when the tokenizer has <|im_start|>, Llama 3 when it has <|start_header_id|>, else kNotFound.
Result<ChatFormat> detect_chat_format(const Tokenizer& tokenizer);

}  // namespace musacoder::tokenizer
