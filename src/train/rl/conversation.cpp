#include "train/rl/conversation.h"

namespace musacoder::train::rl {
namespace {
std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}
}  // namespace

Result<std::string> ChatCodec::render(const std::vector<prompts::Message>& m, bool generation_prompt) const {
  std::vector<tokenizer::ChatMessage> chat;
  for (const auto& x : m) chat.push_back({x.role, x.content, std::nullopt});
  tokenizer::ChatTemplateOptions o = chat_;
  o.add_generation_prompt = generation_prompt;
  return tokenizer::render_chat(chat, o);
}

Result<std::vector<int32_t>> ChatCodec::encode_prompt(const std::vector<prompts::Message>& messages) const {
  auto text = render(messages, true);
  if (!text.ok()) return text.status();
  return tok_->encode(*text);
}

Result<std::vector<int32_t>> ChatCodec::feedback_tail(const std::vector<prompts::Message>& messages,
                                                      const prompts::Message& feedback,
                                                      const std::vector<int32_t>& response_ids) const {
  if (messages.empty() || messages.back().role != "assistant") {
    return invalid_argument("feedback_tail: the conversation must end with the assistant's turn");
  }
  std::vector<prompts::Message> before(messages.begin(), messages.end() - 1);
  std::vector<prompts::Message> after = messages;
  after.push_back(feedback);
  auto prompt = render(before, true);
  auto full = render(messages, false);
  auto next = render(after, true);
  if (!prompt.ok()) return prompt.status();
  if (!full.ok()) return full.status();
  if (!next.ok()) return next.status();
  if (!full->starts_with(*prompt) || !next->starts_with(*full)) {
    return invalid_argument("the chat template does not render turn by turn (a later turn changes earlier text); "
                            "multi-turn repair needs a template that appends");
  }
  const std::string content = trim(messages.back().content);
  std::size_t end = prompt->size();
  if (!content.empty()) {
    const std::size_t at = full->find(content, prompt->size());
    if (at == std::string::npos) return invalid_argument("the chat template rewrites the assistant's answer");
    end = at + content.size();
  }
  auto tail = tok_->encode(next->substr(end));
  if (!tail.ok()) return tail.status();
  if (!response_ids.empty() && !tail->empty() && tail->front() == response_ids.back()) tail->erase(tail->begin());
  return tail;
}

}  // namespace musacoder::train::rl
