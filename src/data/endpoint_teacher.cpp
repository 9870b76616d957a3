// A teacher behind any OpenAI-compatible chat completions endpoint (https through the
// pkg-config target's CPPHTTPLIB_OPENSSL_SUPPORT).
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "data/teacher.h"

namespace musacoder::data {
namespace {

class EndpointTeacher : public Teacher {
 public:
  EndpointTeacher(EndpointOptions o, std::string origin, std::string path)
      : o_(std::move(o)), origin_(std::move(origin)), path_(std::move(path)) {}

  std::string name() const override { return "endpoint:" + o_.model; }

  Result<std::vector<TeacherAnswer>> answer(const TeacherRequest& r) override {
    nlohmann::json body = {{"model", o_.model},
                           {"messages", prompts::to_json(r.messages)},
                           {"temperature", o_.temperature},
                           {"top_p", o_.top_p},
                           {"max_tokens", o_.max_tokens},
                           {"n", r.samples},
                           {"seed", r.seed}};
    httplib::Client client(origin_);  // one per request: answer() runs on many threads
    client.set_read_timeout(o_.timeout_seconds, 0);
    client.set_write_timeout(60, 0);
    client.set_connection_timeout(30, 0);
    httplib::Headers headers;
    if (!o_.api_key.empty()) headers.emplace("Authorization", "Bearer " + o_.api_key);
    auto res = client.Post(path_, headers, body.dump(), "application/json");
    if (!res) return unavailable(name() + ": " + origin_ + path_ + ": " + httplib::to_string(res.error()));
    if (res->status != 200)
      return unavailable(name() + ": HTTP " + std::to_string(res->status) + ": " + res->body.substr(0, 300));
    auto reply = nlohmann::json::parse(res->body, nullptr, false);
    if (reply.is_discarded() || !reply.contains("choices") || !reply["choices"].is_array())
      return unavailable(name() + ": the reply is not a chat completion");
    std::vector<TeacherAnswer> answers;
    for (const auto& choice : reply["choices"]) {
      const auto& content = choice.contains("message") ? choice["message"].value("content", nlohmann::json()) : nlohmann::json();
      if (content.is_string()) answers.push_back({content.get<std::string>()});
    }
    if (answers.empty()) return unavailable(name() + ": the reply has no message content");
    return answers;
  }

 private:
  EndpointOptions o_;
  std::string origin_, path_;  // "https://host:port", "/v1/chat/completions"
};

}  // namespace

Result<std::unique_ptr<Teacher>> make_endpoint_teacher(const EndpointOptions& options) {
  static const std::regex re(R"(^(https?://[^/]+)(/.*)?$)");
  std::smatch m;
  if (!std::regex_match(options.base_url, m, re))
    return invalid_argument("--teacher-url '" + options.base_url + "' is not http(s)://host[:port][/path]");
  if (options.model.empty()) return invalid_argument("an endpoint teacher needs --teacher-model");
  std::string path = m[2].str();
  while (!path.empty() && path.back() == '/') path.pop_back();
  return std::unique_ptr<Teacher>(std::make_unique<EndpointTeacher>(options, m[1].str(), path + "/chat/completions"));
}

}  // namespace musacoder::data
