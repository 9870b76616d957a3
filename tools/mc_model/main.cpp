// mc-model: a thin CLI over src/tokenizer and src/model.
//   mc-model tokenize --tokenizer DIR|FILE --text TEXT [--chat]   ids (and the ChatML/Llama-3 prompt with
//   --chat) mc-model logits --model DIR --text TEXT [--device cuda] [--top 5]   next-token top-k after the
//   text
// Exit codes: 0 ok, 2 bad input or usage, 3 infrastructure failure.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "model/checkpoint.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace musacoder;

int fail(const Status& s) {
  std::fprintf(stderr, "mc-model: %s\n", s.to_string().c_str());
  return s.code() == StatusCode::kInternal || s.code() == StatusCode::kUnavailable ? 3 : 2;
}

Result<std::vector<int32_t>> encode(const std::string& path, std::string text, bool chat) {
  auto tok = tokenizer::Tokenizer::load(path);
  if (!tok.ok()) return tok.status();
  if (chat) {
    auto format = tokenizer::detect_chat_format(*tok);
    if (!format.ok()) return format.status();
    tokenizer::ChatTemplateOptions o;
    o.format = *format;
    auto prompt = tokenizer::render_chat({{"user", text}}, o);
    if (!prompt.ok()) return prompt.status();
    text = *prompt;
    std::printf("prompt: %s\n", text.c_str());
  }
  return tok->encode(text);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mc-model: tokenizer and model checks for Hugging Face checkpoints"};
  app.require_subcommand(1);
  std::string tokenizer_path, model_dir, text, device = "cpu";
  bool chat = false;
  int top = 5;
  auto* tokenize = app.add_subcommand("tokenize", "print the token ids of --text");
  tokenize->add_option("--tokenizer", tokenizer_path, "tokenizer.json or its directory")->required();
  tokenize->add_option("--text", text, "text to encode")->required();
  tokenize->add_flag("--chat", chat, "wrap the text as one user turn of the tokenizer's chat format");
  auto* logits = app.add_subcommand("logits", "top next tokens after --text (tokenizer.json from --model)");
  logits->add_option("--model", model_dir, "checkpoint directory (config.json, safetensors, tokenizer.json)")
      ->required();
  logits->add_option("--text", text, "prompt")->required();
  logits->add_option("--device", device, "cpu or cuda[:N]");
  logits->add_option("--top", top, "how many tokens to print")->check(CLI::Range(1, 100));
  logits->add_flag("--chat", chat, "wrap the text as one user turn of the chat format");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (*tokenize) {
    auto ids = encode(tokenizer_path, text, chat);
    if (!ids.ok()) return fail(ids.status());
    for (int32_t id : *ids) std::printf("%d ", id);
    std::printf("\n");
    return 0;
  }
  auto ids = encode(model_dir, text, chat);
  if (!ids.ok()) return fail(ids.status());
  if (ids->empty()) return fail(invalid_argument("--text encodes to no tokens"));
  auto tok = tokenizer::Tokenizer::load(model_dir);
  model::ModelOptions o;
  o.device = device;
  auto model = model::load_pretrained(model_dir, o);
  if (!model.ok()) return fail(model.status());
  try {
    torch::NoGradGuard no_grad;
    std::vector<int64_t> ids64(ids->begin(), ids->end());
    torch::Tensor input = torch::tensor(ids64, torch::kLong).unsqueeze(0).to(torch::Device(device));
    torch::Tensor last = (*model)->forward({input})[0][-1].to(torch::kFloat).cpu();
    auto [values, indices] = torch::topk(torch::log_softmax(last, -1), top);
    for (int64_t k = 0; k < top; ++k) {
      int32_t id = static_cast<int32_t>(indices[k].item<int64_t>());
      auto piece = tok->decode({id});
      std::printf("%6d  %9.4f  %s\n", id, values[k].item<double>(), piece.ok() ? piece->c_str() : "?");
    }
  } catch (const std::exception& e) {
    return fail(internal_error(e.what()));
  }
  return 0;
}
