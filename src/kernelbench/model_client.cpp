#include "kernelbench/model_client.h"

#include "tokenizer/chat_template.h"

namespace musacoder::kernelbench {
namespace {

engine::SamplingParams to_params(const Sampling& s) {
  engine::SamplingParams p;
  p.temperature = s.temperature;
  p.top_p = s.top_p;
  p.max_new_tokens = s.max_new_tokens;
  p.seed = s.seed;
  p.n = 1;
  return p;
}

Completion from_output(const engine::RequestOutput& out) {
  Completion c;
  c.status = out.status;
  if (!out.status.ok()) return c;
  if (out.samples.empty()) {
    c.status = internal_error("the model returned no sample");
    return c;
  }
  const engine::Sample& s = out.samples.front();
  c.text = s.text;
  c.finish_reason = engine::finish_reason_name(s.finish_reason);
  c.tokens = static_cast<int64_t>(s.token_ids.size());
  return c;
}

class EndpointClient : public ModelClient {
 public:
  explicit EndpointClient(engine::RemoteOptions o) : options_(o), remote_(std::move(o)) {}

  Completion complete(const std::vector<prompts::Message>& conversation, const Sampling& sampling) override {
    std::vector<std::pair<std::string, std::string>> messages;
    for (const auto& m : conversation) messages.emplace_back(m.role, m.content);
    auto out = remote_.chat(messages, to_params(sampling));
    if (!out.ok()) return {out.status(), {}, {}, 0};
    return from_output(*out);
  }
  std::string describe() const override { return "endpoint " + options_.base_url + " model=" + options_.model; }

 private:
  engine::RemoteOptions options_;
  engine::RemoteEngine remote_;
};

class EngineClient : public ModelClient {
 public:
  EngineClient(std::unique_ptr<engine::Engine> e, tokenizer::ChatTemplateOptions t, std::string dir)
      : engine_(std::move(e)), chat_(std::move(t)), dir_(std::move(dir)) {}

  Completion complete(const std::vector<prompts::Message>& conversation, const Sampling& sampling) override {
    std::vector<tokenizer::ChatMessage> messages;
    for (const auto& m : conversation) messages.push_back({m.role, m.content, std::nullopt});
    auto text = tokenizer::render_chat(messages, chat_);
    if (!text.ok()) return {text.status(), {}, {}, 0};
    engine::Request r;
    r.prompt = *text;
    r.sampling = to_params(sampling);
    return from_output(engine_->generate({std::move(r)}).front());
  }
  std::string describe() const override { return "engine " + dir_; }

 private:
  std::unique_ptr<engine::Engine> engine_;
  tokenizer::ChatTemplateOptions chat_;
  std::string dir_;
};

}  // namespace

std::unique_ptr<ModelClient> make_endpoint_client(const engine::RemoteOptions& options) {
  return std::make_unique<EndpointClient>(options);
}

Result<std::unique_ptr<ModelClient>> make_engine_client(const EngineClientOptions& o) {
  auto e = engine::Engine::load(o.model_dir, o.model, o.engine);
  if (!e.ok()) return e.status();
  if ((*e)->tokenizer() == nullptr) return invalid_argument(o.model_dir.string() + " has no tokenizer.json");
  auto format = tokenizer::detect_chat_format(*(*e)->tokenizer());
  if (!format.ok()) return format.status();
  tokenizer::ChatTemplateOptions t;
  t.format = *format;
  t.enable_thinking = o.enable_thinking;
  return std::unique_ptr<ModelClient>(std::make_unique<EngineClient>(std::move(*e), t, o.model_dir.string()));
}

}  // namespace musacoder::kernelbench
