// The list of musacoder subcommands: one declaration and one line in commands.cpp per command.
#pragma once

#include <vector>

#include "command.h"

namespace musacoder::tool {

Command add_tokenize_command(CLI::App& app);
Command add_synth_command(CLI::App& app);
Command add_port_command(CLI::App& app);
Command add_port_suite_command(CLI::App& app);
Command add_generate_command(CLI::App& app);
Command add_serve_model_command(CLI::App& app);
Command add_train_sft_command(CLI::App& app);
Command add_train_rl_command(CLI::App& app);
Command add_plot_command(CLI::App& app);
Command add_eval_model_command(CLI::App& app);
Command add_compare_command(CLI::App& app);
Command add_quickstart_command(CLI::App& app);

// Adds every subcommand to the app, in the order `musacoder --help` lists them.
std::vector<Command> add_all_commands(CLI::App& app);

}  // namespace musacoder::tool
