#include "commands.h"

namespace musacoder::tool {

std::vector<Command> add_all_commands(CLI::App& app) {
  std::vector<Command> commands;
  commands.push_back(add_tokenize_command(app));
  commands.push_back(add_synth_command(app));
  commands.push_back(add_port_command(app));
  commands.push_back(add_port_suite_command(app));
  commands.push_back(add_generate_command(app));
  commands.push_back(add_serve_model_command(app));
  commands.push_back(add_train_sft_command(app));
  commands.push_back(add_train_rl_command(app));
  commands.push_back(add_plot_command(app));
  commands.push_back(add_eval_model_command(app));
  commands.push_back(add_compare_command(app));
  commands.push_back(add_quickstart_command(app));
  return commands;
}

}  // namespace musacoder::tool
