#include "config_file.h"

#include <vector>

#include "command.h"

namespace musacoder::tool {

Status apply_config(CLI::App* sub, const std::string& file) {
  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigTOML().from_file(file);
  } catch (const std::exception& e) {
    return invalid_argument("--config " + file + ": " + e.what());
  }
  for (const CLI::ConfigItem& item : items) {
    if (item.name == "++" || item.name == "--") continue;  // section open/close markers
    if (!item.parents.empty() && item.parents != std::vector<std::string>{sub->get_name()}) continue;
    CLI::Option* opt = nullptr;
    try {
      opt = sub->get_option("--" + item.name);
    } catch (const CLI::Error&) {
      return invalid_argument("--config " + file + ": unknown key '" + item.name + "'");
    }
    if (opt->count() > 0 || item.name == "config") continue;  // the command line wins
    try {
      opt->add_result(item.inputs);
      opt->run_callback();
    } catch (const CLI::Error& e) {
      return invalid_argument("--config " + file + ": " + item.name + ": " + e.what());
    }
  }
  return {};
}

void take_last_values(CLI::App* sub) {
  for (CLI::Option* opt : sub->get_options()) {
    if (opt->get_items_expected_max() == 1) opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

int run_with_config(const char* command, CLI::App* sub, const std::string& file,
                    const std::function<int()>& run) {
  if (!file.empty()) {
    Status st = apply_config(sub, file);
    if (!st.ok()) return fail(command, st);
  }
  return run();
}

}  // namespace musacoder::tool
