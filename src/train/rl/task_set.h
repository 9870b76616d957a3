// The tasks an RL run samples prompts from: every KernelBench-format module (`<name>.py`, with an optional
// `<name>.json` sidecar giving its description) under a folder — the bundled suite (tasks/), a KernelBench
// checkout's level folders, or a synthesized set. Ids are the path relative to the folder without ".py"
// ("activation/relu"), sorted, so the same folder gives the same order everywhere.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"

namespace musacoder::train::rl {

struct RlTask {
  std::string id;
  std::filesystem::path path;  // the module
  std::string source;          // its text (the prompt shows it)
  std::string description;     // the sidecar's "description" (may be empty)
};

// kNotFound when the folder does not exist; kInvalidArgument when it holds no task module.
Result<std::vector<RlTask>> load_task_set(const std::filesystem::path& folder);

}  // namespace musacoder::train::rl
