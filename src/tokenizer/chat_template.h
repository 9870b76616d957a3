// Chat templates as text, for the two formats these model families use (the output equals
// transformers' apply_chat_template(..., tokenize=False) with the checkpoints' own Jinja templates for
// system/user/assistant conversations without tools):
//   ChatML (Qwen2/2.5/3):  <|im_start|>{role}\n{content}<|im_end|>\n ... [<|im_start|>assistant\n]
//   Llama 3:  <|begin_of_text|><|start_header_id|>{role}<|end_header_id|>\n\n{trim(content)}<|eot_id|> ...
//             [<|start_header_id|>assistant<|end_header_id|>\n\n]
//   Qwen3.5 / Qwen3.6 (ChatML with thinking; contents trimmed):
//             <|im_start|>system\n{system}<|im_end|>\n  <|im_start|>user\n{user}<|im_end|>\n
//             assistant turns after the last user turn: <|im_start|>assistant\n<think>\n{reasoning}\n</think>\n\n
//             {answer}<|im_end|>\n; earlier ones: <|im_start|>assistant\n{answer}<|im_end|>\n (reasoning dropped).
//             reasoning = reasoning_content when given, else the text before </think> in the content.
//             Generation prompt: <|im_start|>assistant\n<think>\n (thinking on, the default) or
//             <|im_start|>assistant\n<think>\n\n</think>\n\n (enable_thinking = false).
// Encode the result with Tokenizer::encode (special tokens are matched there).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace musacoder::tokenizer {

class Tokenizer;

enum class ChatFormat { kChatML, kLlama3, kQwen35 };

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
  // Qwen3.5 only: an assistant turn's thinking, when kept apart from content (transformers'
  // message["reasoning_content"]); unset: taken from a "<think>...</think>" prefix of content.
  std::optional<std::string> reasoning_content;
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
  // Qwen3.5 only: the generation prompt opens a think block (true) or carries an empty one (false).
  bool enable_thinking = true;
};

// The prompt text. kInvalidArgument for an unknown role or an empty conversation without a
// generation prompt; for Qwen3.5 also for a system message that is not first or an empty conversation
// (its template raises on both).
Result<std::string> render_chat(const std::vector<ChatMessage>& messages, const ChatTemplateOptions& options);

// Qwen3.5 when the tokenizer has <|im_start|> and <think> with a vocabulary of at least 248,044 (the
// Qwen3.5/3.6 family), ChatML when it has <|im_start|>, Llama 3 when it has <|start_header_id|>, else
// kNotFound.
Result<ChatFormat> detect_chat_format(const Tokenizer& tokenizer);

}  // namespace musacoder::tokenizer
