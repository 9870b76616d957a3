#include "train/rl/task_set.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/files.h"

namespace musacoder::train::rl {
namespace fs = std::filesystem;

Result<std::vector<RlTask>> load_task_set(const fs::path& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return not_found("--tasks " + folder.string() + " is not a folder");
  std::vector<RlTask> out;
  for (auto it = fs::recursive_directory_iterator(folder, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::path& p = it->path();
    if (!it->is_regular_file() || p.extension() != ".py" || p.filename().string().starts_with("_")) continue;
    auto source = read_file(p);
    if (!source.ok()) return source.status();
    if (source->find("class Model") == std::string::npos || source->find("def get_inputs") == std::string::npos) {
      continue;  // a helper module, not a task
    }
    RlTask t;
    t.id = fs::relative(p, folder).replace_extension().generic_string();
    t.path = p;
    t.source = std::move(*source);
    auto sidecar = read_file(fs::path(p).replace_extension(".json"));
    if (sidecar.ok()) {
      auto j = nlohmann::json::parse(*sidecar, nullptr, false);
      if (j.is_object() && j.contains("description") && j["description"].is_string()) t.description = j["description"];
    }
    out.push_back(std::move(t));
  }
  if (ec) return internal_error("cannot list " + folder.string() + ": " + ec.message());
  if (out.empty()) {
    return invalid_argument("--tasks " + folder.string() +
                            " holds no KernelBench task (a .py module defining Model and get_inputs)");
  }
  std::sort(out.begin(), out.end(), [](const RlTask& a, const RlTask& b) { return a.id < b.id; });
  return out;
}

}  // namespace musacoder::train::rl
