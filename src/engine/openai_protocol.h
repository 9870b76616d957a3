// The OpenAI wire format, both ways: request bodies of /v1/completions and /v1/chat/completions parsed
// into engine Requests (with the reason for a 4xx when they are bad), and engine outputs written as
// response objects or SSE chunks. Used by the server (requests in, responses out) and by RemoteEngine
// (requests out, responses in).
//
// Field mapping: max_tokens (or max_completion_tokens) -> max_new_tokens; temperature, top_p, n, stop, seed
// as named; extensions accepted as vLLM names them: top_k, min_p, repetition_penalty, stop_token_ids,
// ignore_eos. "logprobs" in responses are the raw model distribution's (Sample::raw_logprobs); each choice
// also carries "token_ids" and, when logprobs were asked for, "sampling_logprobs" (extensions).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"

namespace musacoder::engine {

struct ApiError {
  int http_status = 400;
  std::string type = "invalid_request_error";
  std::string code;  // "model_not_found", "invalid_json", ...
  std::string message;
  nlohmann::json to_json() const;
};

struct ParsedRequest {
  bool chat = false;
  bool stream = false;
  Request request;  // prompt text or ids; for chat, the rendered prompt
  std::vector<std::pair<std::string, std::string>> messages;  // chat: (role, content)
  bool want_logprobs = false;
};

struct ApiLimits {
  std::string model_name;
  int max_n = 64;
  int64_t default_max_tokens = 256;
};

// Returns the request or the error to send. Chat prompts are rendered by the caller (it has the template).
std::pair<ParsedRequest, std::optional<ApiError>> parse_api_request(const nlohmann::json& body, bool chat,
                                                                    const ApiLimits& limits);

// Responses. `tok` may be null (then token strings are empty).
nlohmann::json completion_response(const RequestOutput& out, const ParsedRequest& req, const std::string& model,
                                   const tokenizer::Tokenizer* tok, int64_t created);
nlohmann::json stream_chunk(const RequestOutput& out, const SampleDelta& delta, const ParsedRequest& req,
                            const std::string& model, const tokenizer::Tokenizer* tok, int64_t created,
                            bool first_for_choice);

// Request body for a remote server, and its response parsed back (RemoteEngine).
nlohmann::json api_request_body(const Request& r, const std::string& model, bool chat,
                                const std::vector<std::pair<std::string, std::string>>& messages);
Result<RequestOutput> parse_api_response(const nlohmann::json& body, bool chat);

}  // namespace musacoder::engine
