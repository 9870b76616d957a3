#include "engine/openai_protocol.h"

namespace musacoder::engine {

using nlohmann::json;

json ApiError::to_json() const {
  return {{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code.empty() ? json() : json(code)}}}};
}

namespace {

ApiError bad(std::string message, std::string code = "invalid_request") {
  return {400, "invalid_request_error", std::move(code), std::move(message)};
}

// Reads an optional number field into `out`; false (with the error) when it is present but not a number.
template <typename T>
bool number(const json& b, const char* key, T& out, std::optional<ApiError>& err) {
  auto it = b.find(key);
  if (it == b.end() || it->is_null()) return true;
  if (!it->is_number() || (std::is_integral_v<T> && !it->is_number_integer())) {
    err = bad(std::string("'") + key + "' must be " + (std::is_integral_v<T> ? "an integer" : "a number"));
    return false;
  }
  out = it->get<T>();
  return true;
}

std::optional<ApiError> parse_prompt(const json& b, ParsedRequest& p) {
  auto it = b.find("prompt");
  if (it == b.end()) return bad("'prompt' is required");
  if (it->is_string()) {
    p.request.prompt = it->get<std::string>();
    if (p.request.prompt.empty()) return bad("'prompt' is empty");
    return std::nullopt;
  }
  if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
    p.request.prompt = (*it)[0].get<std::string>();
    return std::nullopt;
  }
  if (it->is_array() && !it->empty() && std::all_of(it->begin(), it->end(), [](const json& x) { return x.is_number_integer(); })) {
    for (const auto& x : *it) p.request.prompt_ids.push_back(x.get<int32_t>());
    return std::nullopt;
  }
  return bad("'prompt' must be a string, a one-string array or an array of token ids (one prompt per request)");
}

std::optional<ApiError> parse_messages(const json& b, ParsedRequest& p) {
  auto it = b.find("messages");
  if (it == b.end() || !it->is_array() || it->empty()) return bad("'messages' must be a non-empty array");
  for (const auto& m : *it) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) return bad("each message needs a 'role'");
    const auto& c = m.value("content", json());
    std::string text;
    if (c.is_string()) {
      text = c.get<std::string>();
    } else if (c.is_array()) {  // [{"type": "text", "text": ...}]
      for (const auto& part : c)
        if (part.is_object() && part.value("type", "") == "text" && part.contains("text") && part["text"].is_string())
          text += part["text"].get<std::string>();
    } else if (!c.is_null()) {
      return bad("message 'content' must be a string or an array of text parts");
    }
    p.messages.emplace_back(m["role"].get<std::string>(), std::move(text));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_stop(const json& b, SamplingParams& s) {
  auto it = b.find("stop");
  if (it == b.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    s.stop.push_back(it->get<std::string>());
  } else if (it->is_array() && it->size() <= 16 && std::all_of(it->begin(), it->end(), [](const json& x) { return x.is_string(); })) {
    for (const auto& x : *it) s.stop.push_back(x.get<std::string>());
  } else {
    return bad("'stop' must be a string or an array of at most 16 strings");
  }
  auto ids = b.find("stop_token_ids");
  if (ids != b.end() && ids->is_array())
    for (const auto& x : *ids)
      if (x.is_number_integer()) s.stop_token_ids.push_back(x.get<int32_t>());
  return std::nullopt;
}

std::optional<ApiError> parse_sampling(const json& b, bool chat, const ApiLimits& limits, ParsedRequest& p) {
  std::optional<ApiError> err;
  SamplingParams& s = p.request.sampling;
  s.max_new_tokens = limits.default_max_tokens;
  int64_t seed = -1;
  if (!number(b, "max_tokens", s.max_new_tokens, err) || !number(b, "max_completion_tokens", s.max_new_tokens, err) ||
      !number(b, "temperature", s.temperature, err) || !number(b, "top_p", s.top_p, err) ||
      !number(b, "top_k", s.top_k, err) || !number(b, "min_p", s.min_p, err) ||
      !number(b, "repetition_penalty", s.repetition_penalty, err) || !number(b, "n", s.n, err) ||
      !number(b, "seed", seed, err))
    return err;
  if (s.top_k < 0) s.top_k = 0;  // vLLM: -1 means off
  if (b.contains("seed") && !b["seed"].is_null()) s.seed = static_cast<uint64_t>(seed);
  if (s.max_new_tokens < 1) return bad("'max_tokens' must be >= 1");
  if (s.n < 1 || s.n > limits.max_n) return bad("'n' must be in [1, " + std::to_string(limits.max_n) + "]");
  if (s.temperature < 0 || s.temperature > 100) return bad("'temperature' must be in [0, 100]");
  if (!(s.top_p > 0 && s.top_p <= 1)) return bad("'top_p' must be in (0, 1]");
  s.ignore_eos = b.value("ignore_eos", false);
  if (auto e = parse_stop(b, s)) return e;
  const json lp = b.value("logprobs", json());
  if (chat) {
    p.want_logprobs = lp.is_boolean() && lp.get<bool>();
    int top = 0;
    if (!number(b, "top_logprobs", top, err)) return err;
    if (top < 0 || top > 20) return bad("'top_logprobs' must be in [0, 20]");
    s.top_logprobs = p.want_logprobs ? top : 0;
  } else if (!lp.is_null()) {
    if (!lp.is_number_integer() || lp.get<int>() < 0 || lp.get<int>() > 20) return bad("'logprobs' must be an integer in [0, 20]");
    p.want_logprobs = true;
    s.top_logprobs = lp.get<int>();
  }
  return std::nullopt;
}

std::string token_text(const tokenizer::Tokenizer* tok, int32_t id) {
  if (tok == nullptr) return "";
  auto t = tok->decode({id});
  return t.ok() ? *t : "";
}

json bytes_of(const std::string& s) {
  json a = json::array();
  for (unsigned char c : s) a.push_back(static_cast<int>(c));
  return a;
}

// Logprobs of sample tokens [from, to) in the chat or the completions shape.
json logprobs_json(const Sample& s, std::size_t from, std::size_t to, bool chat, const tokenizer::Tokenizer* tok) {
  if (chat) {
    json content = json::array();
    for (std::size_t i = from; i < to; ++i) {
      const std::string t = token_text(tok, s.token_ids[i]);
      json top = json::array();
      if (i < s.top_logprobs.size())
        for (const auto& tl : s.top_logprobs[i]) {
          const std::string tt = token_text(tok, tl.token_id);
          top.push_back({{"token", tt}, {"logprob", tl.logprob}, {"bytes", bytes_of(tt)}});
        }
      content.push_back({{"token", t}, {"logprob", s.raw_logprobs[i]}, {"bytes", bytes_of(t)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), lps = json::array(), tops = json::array();
  for (std::size_t i = from; i < to; ++i) {
    tokens.push_back(token_text(tok, s.token_ids[i]));
    lps.push_back(s.raw_logprobs[i]);
    json top = json::object();
    if (i < s.top_logprobs.size())
      for (const auto& tl : s.top_logprobs[i]) top[token_text(tok, tl.token_id)] = tl.logprob;
    tops.push_back(top);
  }
  return {{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}};
}

json finish_json(FinishReason r) {
  return r == FinishReason::kNone ? json() : json(r == FinishReason::kCancelled ? "abort" : finish_reason_name(r));
}

}  // namespace

std::pair<ParsedRequest, std::optional<ApiError>> parse_api_request(const json& b, bool chat, const ApiLimits& limits) {
  ParsedRequest p;
  p.chat = chat;
  if (!b.is_object()) return {p, bad("the body must be a JSON object")};
  const auto model = b.value("model", json());
  if (!model.is_string()) return {p, bad("'model' is required")};
  if (model.get<std::string>() != limits.model_name)
    return {p, ApiError{404, "invalid_request_error", "model_not_found",
                        "the model '" + model.get<std::string>() + "' does not exist (this server serves '" +
                            limits.model_name + "')"}};
  if (b.value("echo", false)) return {p, bad("'echo' is not supported")};
  p.stream = b.value("stream", false);
  if (auto e = chat ? parse_messages(b, p) : parse_prompt(b, p)) return {p, e};
  if (auto e = parse_sampling(b, chat, limits, p)) return {p, e};
  return {p, std::nullopt};
}

json completion_response(const RequestOutput& out, const ParsedRequest& req, const std::string& model,
                         const tokenizer::Tokenizer* tok, int64_t created) {
  json choices = json::array();
  int64_t completion_tokens = 0;
  for (const Sample& s : out.samples) {
    completion_tokens += static_cast<int64_t>(s.token_ids.size());
    json c = {{"index", s.index}, {"finish_reason", finish_json(s.finish_reason)}, {"token_ids", s.token_ids}};
    if (req.chat) c["message"] = {{"role", "assistant"}, {"content", s.text}};
    else c["text"] = s.text;
    c["logprobs"] = req.want_logprobs ? logprobs_json(s, 0, s.token_ids.size(), req.chat, tok) : json();
    if (req.want_logprobs) c["sampling_logprobs"] = s.logprobs;
    if (!s.stop_string.empty()) c["stop_reason"] = s.stop_string;
    choices.push_back(std::move(c));
  }
  return {{"id", (req.chat ? "chatcmpl-" : "cmpl-") + std::to_string(out.request_id)},
          {"object", req.chat ? "chat.completion" : "text_completion"},
          {"created", created},
          {"model", model},
          {"choices", choices},
          {"usage", {{"prompt_tokens", out.prompt_tokens}, {"completion_tokens", completion_tokens},
                     {"total_tokens", out.prompt_tokens + completion_tokens}}}};
}

json stream_chunk(const RequestOutput& out, const SampleDelta& d, const ParsedRequest& req, const std::string& model,
                  const tokenizer::Tokenizer* tok, int64_t created, bool first_for_choice) {
  const Sample& s = out.samples.at(static_cast<std::size_t>(d.index));
  json c = {{"index", d.index}, {"finish_reason", d.finished ? finish_json(s.finish_reason) : json()}};
  const std::size_t to = s.token_ids.size();
  c["token_ids"] = std::vector<int32_t>(s.token_ids.begin() + static_cast<std::ptrdiff_t>(std::min(d.first_token, to)), s.token_ids.end());
  if (req.chat) {
    c["delta"] = json::object();
    if (first_for_choice) c["delta"]["role"] = "assistant";
    c["delta"]["content"] = d.text;
  } else {
    c["text"] = d.text;
  }
  c["logprobs"] = req.want_logprobs ? logprobs_json(s, std::min(d.first_token, to), to, req.chat, tok) : json();
  return {{"id", (req.chat ? "chatcmpl-" : "cmpl-") + std::to_string(out.request_id)},
          {"object", req.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created},
          {"model", model},
          {"choices", json::array({c})}};
}

json api_request_body(const Request& r, const std::string& model, bool chat,
                      const std::vector<std::pair<std::string, std::string>>& messages) {
  const SamplingParams& s = r.sampling;
  json b = {{"model", model}, {"max_tokens", s.max_new_tokens}, {"temperature", s.temperature}, {"top_p", s.top_p},
            {"n", s.n}, {"stream", false}};
  if (s.top_k > 0) b["top_k"] = s.top_k;
  if (s.min_p > 0) b["min_p"] = s.min_p;
  if (s.repetition_penalty != 1.0) b["repetition_penalty"] = s.repetition_penalty;
  if (s.seed) b["seed"] = *s.seed;
  if (!s.stop.empty()) b["stop"] = s.stop;
  if (!s.stop_token_ids.empty()) b["stop_token_ids"] = s.stop_token_ids;
  if (s.ignore_eos) b["ignore_eos"] = true;
  if (chat) {
    json m = json::array();
    for (const auto& [role, content] : messages) m.push_back({{"role", role}, {"content", content}});
    b["messages"] = m;
    b["logprobs"] = true;
    if (s.top_logprobs > 0) b["top_logprobs"] = s.top_logprobs;
  } else {
    b["prompt"] = r.prompt_ids.empty() ? json(r.prompt) : json(r.prompt_ids);
    b["logprobs"] = s.top_logprobs;
  }
  return b;
}

Result<RequestOutput> parse_api_response(const json& b, bool chat) {
  try {
    RequestOutput out;
    out.finished = true;
    out.prompt_tokens = b.at("usage").value("prompt_tokens", 0);
    for (const auto& c : b.at("choices")) {
      Sample s;
      s.index = c.value("index", 0);
      s.text = chat ? c.at("message").value("content", "") : c.value("text", "");
      const std::string reason = c.value("finish_reason", json("")).is_string() ? c["finish_reason"].get<std::string>() : "";
      s.finish_reason = reason == "stop" ? FinishReason::kStop : reason == "length" ? FinishReason::kLength
                        : reason.empty() ? FinishReason::kNone : FinishReason::kCancelled;
      if (c.contains("token_ids") && c["token_ids"].is_array()) s.token_ids = c["token_ids"].get<std::vector<int32_t>>();
      const json& lp = c.value("logprobs", json());
      if (chat && lp.is_object() && lp.contains("content") && lp["content"].is_array())
        for (const auto& t : lp["content"]) s.raw_logprobs.push_back(t.value("logprob", 0.0f));
      if (!chat && lp.is_object() && lp.contains("token_logprobs"))
        for (const auto& t : lp["token_logprobs"]) s.raw_logprobs.push_back(t.is_number() ? t.get<float>() : 0.0f);
      if (c.contains("sampling_logprobs") && c["sampling_logprobs"].is_array())
        s.logprobs = c["sampling_logprobs"].get<std::vector<float>>();
      out.samples.push_back(std::move(s));
    }
    std::sort(out.samples.begin(), out.samples.end(), [](const Sample& a, const Sample& b) { return a.index < b.index; });
    return out;
  } catch (const std::exception& e) {
    return internal_error(std::string("unexpected response from the server: ") + e.what());
  }
}

}  // namespace musacoder::engine
