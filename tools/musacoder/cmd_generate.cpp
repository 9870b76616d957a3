// musacoder generate --model DIR --prompt TEXT [--n 8] [--chat] [--json] ...: samples completions of one
// prompt with the engine and prints them (text, or one JSON object per sample with token ids, raw and
// sampling logprobs and the finish reason).
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.h"
#include "commands.h"
#include "engine_flags.h"
#include "tokenizer/chat_template.h"

namespace musacoder::tool {
namespace {

struct GenerateFlags {
  EngineFlags engine;
  std::string prompt;
  engine::SamplingParams sampling;
  int64_t seed = -1;
  bool chat = false, json = false;
};

Result<std::string> chat_prompt(const engine::Engine& e, const std::string& text) {
  if (e.tokenizer() == nullptr) return invalid_argument("--chat needs the model's tokenizer.json");
  auto format = tokenizer::detect_chat_format(*e.tokenizer());
  if (!format.ok()) return format.status();
  tokenizer::ChatTemplateOptions o;
  o.format = *format;
  return tokenizer::render_chat({{"user", text}}, o);
}

int run_generate(GenerateFlags& f) {
  auto e = load_engine(f.engine);
  if (!e.ok()) return fail("generate", e.status());
  engine::Request r;
  r.prompt = f.prompt;
  if (f.chat) {
    auto p = chat_prompt(**e, f.prompt);
    if (!p.ok()) return fail("generate", p.status());
    r.prompt = *p;
  }
  r.sampling = f.sampling;
  if (f.seed >= 0) r.sampling.seed = static_cast<uint64_t>(f.seed);
  auto out = (*e)->generate({r})[0];
  if (!out.status.ok()) return fail("generate", out.status);
  for (const auto& s : out.samples) {
    if (f.json) {
      nlohmann::json j = {{"index", s.index}, {"text", s.text}, {"token_ids", s.token_ids},
                          {"raw_logprobs", s.raw_logprobs}, {"sampling_logprobs", s.logprobs},
                          {"finish_reason", engine::finish_reason_name(s.finish_reason)},
                          {"prompt_tokens", out.prompt_tokens}};
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
      std::printf("--- sample %d (%zu tokens, %s)\n%s\n", s.index, s.token_ids.size(),
                  engine::finish_reason_name(s.finish_reason), s.text.c_str());
    }
  }
  return 0;
}

}  // namespace

Command add_generate_command(CLI::App& app) {
  auto f = std::make_shared<GenerateFlags>();
  CLI::App* sub = app.add_subcommand("generate", "sample completions of a prompt with the engine");
  add_engine_flags(sub, f->engine);
  sub->add_option("--prompt", f->prompt, "the prompt text")->required();
  sub->add_option("--n", f->sampling.n, "samples")->capture_default_str();
  sub->add_option("--max-tokens", f->sampling.max_new_tokens, "new tokens per sample")->capture_default_str();
  sub->add_option("--temperature", f->sampling.temperature, "0: greedy")->capture_default_str();
  sub->add_option("--top-p", f->sampling.top_p, "nucleus mass")->capture_default_str();
  sub->add_option("--top-k", f->sampling.top_k, "0: off")->capture_default_str();
  sub->add_option("--min-p", f->sampling.min_p, "0: off")->capture_default_str();
  sub->add_option("--repetition-penalty", f->sampling.repetition_penalty, "1: off")->capture_default_str();
  sub->add_option("--seed", f->seed, "sampling seed (-1: random)")->capture_default_str();
  sub->add_option("--stop", f->sampling.stop, "stop string (repeatable)");
  sub->add_flag("--chat", f->chat, "wrap the prompt as one user turn of the model's chat template");
  sub->add_flag("--json", f->json, "one JSON object per sample");
  return {sub, [f] { return run_generate(*f); }};
}

}  // namespace musacoder::tool
