// The musacoder tool's subcommands. Each subcommand lives in its own file (cmd_<name>.cpp) and exposes one
// function `Command add_<name>_command(CLI::App& app)` that adds its CLI11 subcommand (flags bound to an
// options struct it owns) and returns the action main() runs when that subcommand was chosen.
//
// Exit codes, shared by every subcommand: 0 ok, 1 the job ran but its result is a failure (e.g. a target
// missed), 2 bad input or usage, 3 infrastructure failure.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "core/status.h"

namespace musacoder::tool {

struct Command {
  CLI::App* subcommand = nullptr;  // owned by the app
  std::function<int()> run;        // called after parsing when subcommand was chosen
};

// Prints "musacoder <name>: <message>" to stderr and maps the status to an exit code (2 for what the user
// can fix, 3 for infrastructure).
int fail(const char* command, const Status& status);

}  // namespace musacoder::tool
