#include "train/sft/dataset.h"

#include <fstream>

#include "core/files.h"

namespace musacoder::train::sft {
namespace {

using tokenizer::ChatMessage;
using tokenizer::ChatTemplateOptions;

constexpr const char* kQwenDefaultSystem =
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

Result<std::string> string_field(const nlohmann::json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) return invalid_argument(where + " has no \"" + key + "\"");
  if (!it->is_string()) return invalid_argument(where + "." + key + " must be a string");
  return it->get<std::string>();
}

Result<std::vector<ChatMessage>> parse_messages(const nlohmann::json& messages) {
  if (!messages.is_array() || messages.empty())
    return invalid_argument("\"messages\" must be a non-empty array");
  std::vector<ChatMessage> out;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!messages[i].is_object()) return invalid_argument(where + " must be an object");
    auto role = string_field(messages[i], "role", where);
    if (!role.ok()) return role.status();
    if (*role != "system" && *role != "user" && *role != "assistant") {
      return invalid_argument(where + ".role '" + *role + "' is not system, user or assistant");
    }
    auto content = string_field(messages[i], "content", where);
    if (!content.ok()) return content.status();
    out.push_back({*role, *content});
  }
  return out;
}

// Appends `text`'s tokens with the given trained flag.
Status append(SftExample& ex, const tokenizer::Tokenizer& tok, std::string_view text, bool trained) {
  if (text.empty()) return {};
  auto ids = tok.encode(text);
  if (!ids.ok()) return ids.status();
  ex.ids.insert(ex.ids.end(), ids->begin(), ids->end());
  ex.trained.insert(ex.trained.end(), ids->size(), trained ? 1 : 0);
  return {};
}

Result<std::string> render(const std::vector<ChatMessage>& m, std::size_t n, const ChatTemplateOptions& chat,
                           bool generation_prompt) {
  ChatTemplateOptions o = chat;
  o.add_generation_prompt = generation_prompt;
  return tokenizer::render_chat(std::vector<ChatMessage>(m.begin(), m.begin() + static_cast<long>(n)), o);
}

// Cuts an example to max_seq_len per options; false when it is dropped.
bool fit_length(SftExample& ex, const SftDataOptions& o, SftDataStats& stats) {
  if (static_cast<int64_t>(ex.ids.size()) <= o.max_seq_len) return true;
  if (o.too_long == TooLong::kDrop) {
    ++stats.dropped_too_long;
    return false;
  }
  ex.ids.resize(static_cast<std::size_t>(o.max_seq_len));
  ex.trained.resize(static_cast<std::size_t>(o.max_seq_len));
  if (ex.trained_tokens() == 0) {
    ++stats.dropped_too_long;
    return false;
  }
  ++stats.truncated;
  return true;
}

// One JSONL line to an example; errors without the location prefix.
Result<SftExample> example_of_line(const std::string& line, const tokenizer::Tokenizer& tok,
                                   const ChatTemplateOptions& chat, LossOn loss_on) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_argument("not valid JSON");
  auto messages = parse_record(j);
  if (!messages.ok()) return messages.status();
  return encode_conversation(*messages, tok, chat, loss_on);
}

}  // namespace

Result<LossOn> parse_loss_on(std::string_view name) {
  if (name == "all-assistant") return LossOn::kAllAssistant;
  if (name == "last-turn") return LossOn::kLastTurn;
  if (name == "all") return LossOn::kAll;
  return invalid_argument("unknown --loss-on '" + std::string(name) + "' (all-assistant, last-turn or all)");
}

const char* loss_on_name(LossOn l) {
  return l == LossOn::kLastTurn ? "last-turn" : l == LossOn::kAll ? "all" : "all-assistant";
}

Result<TooLong> parse_too_long(std::string_view name) {
  if (name == "truncate") return TooLong::kTruncate;
  if (name == "drop") return TooLong::kDrop;
  return invalid_argument("unknown too-long policy '" + std::string(name) + "' (truncate or drop)");
}

const char* too_long_name(TooLong t) {
  return t == TooLong::kDrop ? "drop" : "truncate";
}

int64_t SftExample::trained_tokens() const {
  int64_t n = 0;
  for (std::size_t t = 1; t < trained.size(); ++t) n += trained[t];  // token 0 is never predicted
  return n;
}

Result<ChatTemplateOptions> chat_template_for(const std::filesystem::path& model_dir,
                                              const tokenizer::Tokenizer& tok) {
  auto format = tokenizer::detect_chat_format(tok);
  if (!format.ok()) return format.status();
  ChatTemplateOptions o;
  o.format = *format;
  auto config = read_file(model_dir / "tokenizer_config.json");
  if (config.ok() && config->find(kQwenDefaultSystem) != std::string::npos)
    o.default_system = kQwenDefaultSystem;
  return o;
}

Result<std::vector<ChatMessage>> parse_record(const nlohmann::json& record) {
  if (!record.is_object()) return invalid_argument("a record must be a JSON object");
  if (record.contains("messages")) return parse_messages(record["messages"]);
  if (!record.contains("prompt") || !record.contains("completion")) {
    return invalid_argument("a record needs \"messages\", or \"prompt\" and \"completion\"");
  }
  std::vector<ChatMessage> out;
  if (record.contains("system")) {
    auto system = string_field(record, "system", "record");
    if (!system.ok()) return system.status();
    out.push_back({"system", *system});
  }
  auto prompt = string_field(record, "prompt", "record");
  if (!prompt.ok()) return prompt.status();
  auto completion = string_field(record, "completion", "record");
  if (!completion.ok()) return completion.status();
  out.push_back({"user", *prompt});
  out.push_back({"assistant", *completion});
  return out;
}

Result<SftExample> encode_conversation(const std::vector<ChatMessage>& m, const tokenizer::Tokenizer& tok,
                                       const ChatTemplateOptions& chat, LossOn loss_on) {
  std::size_t last = m.size();
  for (std::size_t i = 0; i < m.size(); ++i) last = m[i].role == "assistant" ? i : last;
  if (last == m.size())
    return invalid_argument("the conversation has no assistant turn (nothing to train on)");
  const bool everything = loss_on == LossOn::kAll;
  SftExample ex;
  std::string done;  // the rendered text already encoded
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (m[i].role != "assistant") continue;
    auto prompt = render(m, i, chat, /*generation_prompt=*/true);
    if (!prompt.ok()) return prompt.status();
    auto full = render(m, i + 1, chat, /*generation_prompt=*/false);
    if (!full.ok()) return full.status();
    if (!prompt->starts_with(done) || !full->starts_with(*prompt)) {
      return invalid_argument("the chat template does not render turn by turn (a turn changes earlier text)");
    }
    std::string answer = full->substr(prompt->size());
    std::size_t body = answer.find_last_not_of("\n");
    body = body == std::string::npos ? 0 : body + 1;
    const bool trained = loss_on != LossOn::kLastTurn || i == last;
    MC_RETURN_IF_ERROR(append(ex, tok, std::string_view(*prompt).substr(done.size()), everything));
    MC_RETURN_IF_ERROR(append(ex, tok, std::string_view(answer).substr(0, body), trained));
    MC_RETURN_IF_ERROR(append(ex, tok, std::string_view(answer).substr(body), everything));
    done = *full;
  }
  auto all = render(m, m.size(), chat, /*generation_prompt=*/false);
  if (!all.ok()) return all.status();
  MC_RETURN_IF_ERROR(append(ex, tok, std::string_view(*all).substr(done.size()), everything));
  if (ex.trained_tokens() == 0) return invalid_argument("the assistant turns render to no trainable tokens");
  return ex;
}

Result<int64_t> template_overhead(const tokenizer::Tokenizer& tok, const ChatTemplateOptions& chat) {
  auto text = render({{"user", ""}, {"assistant", ""}}, 2, chat, /*generation_prompt=*/false);
  if (!text.ok()) return text.status();
  auto ids = tok.encode(*text);
  if (!ids.ok()) return ids.status();
  return static_cast<int64_t>(ids->size());
}

Result<SftDataset> load_sft_dataset(const std::filesystem::path& path, const tokenizer::Tokenizer& tok,
                                    const ChatTemplateOptions& chat, const SftDataOptions& o) {
  auto overhead = template_overhead(tok, chat);
  if (!overhead.ok()) return overhead.status();
  if (o.max_seq_len <= *overhead) {
    return invalid_argument("--max-seq-len " + std::to_string(o.max_seq_len) +
                            " is not longer than the chat template's overhead (" + std::to_string(*overhead) +
                            " tokens for an empty user and assistant turn): no example could fit");
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return not_found("dataset " + path.string() + " does not exist");
  std::ifstream in(path);
  if (!in) return not_found("cannot open dataset " + path.string());
  SftDataset ds;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ++ds.stats.lines;
    auto ex = example_of_line(line, tok, chat, o.loss_on);
    if (!ex.ok()) {
      std::string where = path.string() + ":" + std::to_string(number) + ": " + ex.status().message();
      if (!o.skip_bad_rows) return invalid_argument(where + " (--skip-bad-rows skips such rows)");
      if (ds.stats.bad_rows++ == 0) ds.stats.first_bad_row = where;
      continue;
    }
    ex->line = number;
    if (!fit_length(*ex, o, ds.stats)) continue;
    ds.stats.tokens += static_cast<int64_t>(ex->ids.size());
    ds.stats.trained_tokens += ex->trained_tokens();
    ds.examples.push_back(std::move(*ex));
  }
  ds.stats.examples = static_cast<int64_t>(ds.examples.size());
  if (ds.stats.lines == 0) return invalid_argument("dataset " + path.string() + " is empty");
  if (ds.examples.empty()) {
    return invalid_argument("dataset " + path.string() + ": no example left (" +
                            std::to_string(ds.stats.bad_rows) + " bad rows, " +
                            std::to_string(ds.stats.dropped_too_long) + " too long for --max-seq-len " +
                            std::to_string(o.max_seq_len) + ")");
  }
  return ds;
}

}  // namespace musacoder::train::sft
