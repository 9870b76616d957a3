#include "tokenizer/chat_template.h"

#include <tuple>
#include <utility>

#include "tokenizer/tokenizer.h"

namespace musacoder::tokenizer {
namespace {

// Jinja's |trim: Python's str.strip() (Unicode whitespace; the ASCII set covers the templates' use).
std::string trim(const std::string& s) {
  const char* ws = " \t\n\r\v\f";
  auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

// Python's str.rstrip('\n') / lstrip('\n').
std::string rstrip_newlines(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}
std::string lstrip_newlines(const std::string& s) {
  auto b = s.find_first_not_of('\n');
  return b == std::string::npos ? "" : s.substr(b);
}

// The text before the first "</think>" (after its last "<think>") and the answer after the last one.
std::pair<std::string, std::string> split_thinking(const std::string& content) {
  const std::string close = "</think>";
  std::string before = content.substr(0, content.find(close));
  auto open = before.rfind("<think>");
  if (open != std::string::npos) before = before.substr(open + 7);
  std::string after = content.substr(content.rfind(close) + close.size());
  return {lstrip_newlines(rstrip_newlines(before)), lstrip_newlines(after)};
}

Result<std::string> render_qwen35(const std::vector<ChatMessage>& messages, const ChatTemplateOptions& o) {
  if (messages.empty()) return invalid_argument("chat template: no messages");
  std::size_t last_user = std::string::npos;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].role == "user") last_user = i;
    if (messages[i].role == "system" && i != 0)
      return invalid_argument("chat template: a system message must be the first message");
  }
  std::string out;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    std::string text = trim(m.content);
    if (m.role == "system" || m.role == "user") {
      out += "<|im_start|>" + m.role + "\n" + text + "<|im_end|>\n";
      continue;
    }
    std::string thought;
    if (m.reasoning_content) {
      thought = *m.reasoning_content;
    } else if (text.find("</think>") != std::string::npos) {
      std::tie(thought, text) = split_thinking(text);
    }
    if (last_user == std::string::npos || i > last_user) {
      out += "<|im_start|>assistant\n<think>\n" + trim(thought) + "\n</think>\n\n" + text + "<|im_end|>\n";
    } else {
      out += "<|im_start|>assistant\n" + text + "<|im_end|>\n";
    }
  }
  if (o.add_generation_prompt) {
    out += o.enable_thinking ? "<|im_start|>assistant\n<think>\n" : "<|im_start|>assistant\n<think>\n\n</think>\n\n";
  }
  return out;
}

}  // namespace

Result<std::string> render_chat(const std::vector<ChatMessage>& messages, const ChatTemplateOptions& o) {
  for (const auto& m : messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant") {
      return invalid_argument("chat template: unknown role '" + m.role + "' (system, user, assistant)");
    }
  }
  if (messages.empty() && !o.add_generation_prompt) return invalid_argument("chat template: no messages");
  if (o.format == ChatFormat::kQwen35) return render_qwen35(messages, o);
  std::string out;
  if (o.format == ChatFormat::kChatML) {
    if (!o.default_system.empty() && (messages.empty() || messages[0].role != "system")) {
      out += "<|im_start|>system\n" + o.default_system + "<|im_end|>\n";
    }
    for (const auto& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (o.add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
  }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (i == 0) out += o.bos_token;
    out += "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n" + trim(messages[i].content) +
           "<|eot_id|>";
  }
  if (o.add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

Result<ChatFormat> detect_chat_format(const Tokenizer& tokenizer) {
  if (tokenizer.token_to_id("<|im_start|>") && tokenizer.token_to_id("<think>") &&
      tokenizer.vocab_size() >= 248044) {
    return ChatFormat::kQwen35;
  }
  if (tokenizer.token_to_id("<|im_start|>")) return ChatFormat::kChatML;
  if (tokenizer.token_to_id("<|start_header_id|>")) return ChatFormat::kLlama3;
  return not_found("tokenizer has neither <|im_start|> (ChatML) nor <|start_header_id|> (Llama 3)");
}

}  // namespace musacoder::tokenizer
