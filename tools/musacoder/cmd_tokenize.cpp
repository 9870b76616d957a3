// musacoder tokenize --tokenizer DIR|FILE --text TEXT [--chat]: the token ids of a text (and the rendered
// chat prompt with --chat), for checking a checkpoint's tokenizer and chat template.
#include <cstdio>
#include <memory>
#include <string>

#include "command.h"
#include "commands.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace musacoder::tool {
namespace {

struct TokenizeFlags {
  std::string tokenizer_path, text;
  bool chat = false;
};

int run_tokenize(const TokenizeFlags& f) {
  auto tok = tokenizer::Tokenizer::load(f.tokenizer_path);
  if (!tok.ok()) return fail("tokenize", tok.status());
  std::string text = f.text;
  if (f.chat) {
    auto format = tokenizer::detect_chat_format(*tok);
    if (!format.ok()) return fail("tokenize", format.status());
    tokenizer::ChatTemplateOptions o;
    o.format = *format;
    auto prompt = tokenizer::render_chat({{"user", text}}, o);
    if (!prompt.ok()) return fail("tokenize", prompt.status());
    text = *prompt;
    std::printf("prompt: %s\n", text.c_str());
  }
  auto ids = tok->encode(text);
  if (!ids.ok()) return fail("tokenize", ids.status());
  for (int32_t id : *ids) std::printf("%d ", id);
  std::printf("\n");
  return 0;
}

}  // namespace

Command add_tokenize_command(CLI::App& app) {
  auto flags = std::make_shared<TokenizeFlags>();
  CLI::App* sub = app.add_subcommand("tokenize", "print the token ids of --text");
  sub->add_option("--tokenizer", flags->tokenizer_path, "tokenizer.json or its directory")->required();
  sub->add_option("--text", flags->text, "text to encode")->required();
  sub->add_flag("--chat", flags->chat, "wrap the text as one user turn of the tokenizer's chat format");
  return {sub, [flags] { return run_tokenize(*flags); }};
}

}  // namespace musacoder::tool
