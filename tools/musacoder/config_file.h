// --config FILE.toml for any subcommand: every key is a long flag name (`learning-rate = 5e-6`), at top level
// or under a [<subcommand>] table; flags given on the command line win.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "core/status.h"

namespace musacoder::tool {

// Sets every option named in the TOML file that the command line did not give. CLI11's own set_config does
// not reach a subcommand's options in the CLI11 we build against, so the file is read with its TOML reader
// and applied here. kInvalidArgument for an unreadable file, an unknown key or a bad value.
Status apply_config(CLI::App* sub, const std::string& file);

// Call once every flag of `sub` is declared: a single-value flag given twice (in --config and on the command
// line, or twice on the command line) takes its last value.
void take_last_values(CLI::App* sub);

// Applies `file` to `sub` when it is not empty, then runs `run`; a bad file fails as `command` (fail()'s
// code).
int run_with_config(const char* command, CLI::App* sub, const std::string& file,
                    const std::function<int()>& run);

}  // namespace musacoder::tool
