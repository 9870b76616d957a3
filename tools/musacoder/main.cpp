// musacoder: the learner's command line — one subcommand per step of the user journey
// (synth → train-sft → train-rl → eval-model → serve-model), each in its own cmd_<name>.cpp.
// The verifier has its own tool, tools/mooreeval.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <vector>

#include "command.h"
#include "commands.h"

namespace musacoder::tool {

int fail(const char* command, const Status& status) {
  std::fprintf(stderr, "musacoder %s: %s\n", command, status.to_string().c_str());
  return status.code() == StatusCode::kInternal || status.code() == StatusCode::kUnavailable ? 3 : 2;
}

}  // namespace musacoder::tool

int main(int argc, char** argv) {
  using namespace musacoder::tool;
  CLI::App app{"musacoder: train and evaluate models that write GPU kernels"};
  app.require_subcommand(1);
  std::vector<Command> commands = add_all_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  for (const Command& c : commands) {
    if (c.subcommand->parsed()) return c.run();
  }
  return 2;
}
