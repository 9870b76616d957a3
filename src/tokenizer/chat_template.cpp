#include "tokenizer/chat_template.h"

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

}  // namespace

Result<std::string> render_chat(const std::vector<ChatMessage>& messages, const ChatTemplateOptions& o) {
  for (const auto& m : messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant") {
      return invalid_argument("chat template: unknown role '" + m.role + "' (system, user, assistant)");
    }
  }
  if (messages.empty() && !o.add_generation_prompt) return invalid_argument("chat template: no messages");
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
  if (tokenizer.token_to_id("<|im_start|>")) return ChatFormat::kChatML;
  if (tokenizer.token_to_id("<|start_header_id|>")) return ChatFormat::kLlama3;
  return not_found("tokenizer has neither <|im_start|> (ChatML) nor <|start_header_id|> (Llama 3)");
}

}  // namespace musacoder::tokenizer
