#include "mooreeval/task/task.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/files.h"
#include "core/text.h"

namespace musacoder::task {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::size_t kMaxTaskBytes = 1 << 20;

bool has_definition(const std::string& source, const std::string& pattern) {
  return std::regex_search(source, std::regex(pattern, std::regex::multiline));
}

std::optional<double> module_constant(const std::string& source, const std::string& name) {
  std::smatch m;
  std::regex re("^" + name + R"(\s*=\s*([0-9.eE+-]+)\s*(#.*)?$)", std::regex::multiline);
  if (std::regex_search(source, m, re)) {
    try {
      return std::stod(m[1].str());
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

Status apply_sidecar(const fs::path& sidecar, TaskSpec& spec) {
  auto text = read_file(sidecar, kMaxTaskBytes);
  if (!text.ok()) return text.status();
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument(sidecar.string() + ": not a JSON object");
  try {
    if (j.contains("difficulty")) spec.difficulty = j.at("difficulty").get<int>();
    spec.trials = trials_for_difficulty(spec.difficulty);
    if (j.contains("trials") && !j.at("trials").is_null()) spec.trials = j.at("trials").get<int>();
    if (j.contains("rtol")) spec.rtol = j.at("rtol").get<double>();
    if (j.contains("atol")) spec.atol = j.at("atol").get<double>();
    if (j.contains("dtype")) spec.dtype = j.at("dtype").get<std::string>();
    if (j.contains("description")) spec.description = j.at("description").get<std::string>();
    if (j.contains("allow_libraries")) spec.allow_libraries = j.at("allow_libraries").get<std::vector<std::string>>();
  } catch (const json::exception& e) {
    return invalid_argument(sidecar.string() + ": " + e.what());
  }
  return {};
}

Status validate(const TaskSpec& spec) {
  const std::string where = spec.path.string();
  if (spec.difficulty < 1 || spec.difficulty > 3)
    return invalid_argument(where + ": difficulty must be 1..3");
  if (spec.trials < 1 || spec.trials > 256) return invalid_argument(where + ": trials must be 1..256");
  for (auto tol : {spec.rtol, spec.atol})
    if (tol && !(*tol >= 0 && *tol < 1)) return invalid_argument(where + ": tolerances must be in [0, 1)");
  return {};
}

}  // namespace

int trials_for_difficulty(int difficulty) {
  if (difficulty <= 1) return 8;
  if (difficulty == 2) return 16;
  return 32;
}

Result<TaskSpec> load_task(const fs::path& path, const std::string& id) {
  auto source = read_file(path, kMaxTaskBytes);
  if (!source.ok()) return Status(source.status().code(), "task: " + source.status().message());
  const std::string where = path.string();
  if (!is_valid_utf8(*source)) return invalid_argument("task " + where + " is not valid UTF-8");
  if (!has_definition(*source, R"(^class\s+Model\s*[(:])"))
    return invalid_argument("task " + where + " defines no `class Model` (KernelBench format)");
  if (!has_definition(*source, R"(^def\s+get_inputs\s*\()"))
    return invalid_argument("task " + where + " defines no get_inputs()");
  if (!has_definition(*source, R"(^def\s+get_init_inputs\s*\()"))
    return invalid_argument("task " + where + " defines no get_init_inputs()");

  TaskSpec spec;
  std::error_code ec;
  spec.path = fs::absolute(path, ec);
  spec.id = id.empty() ? path.stem().string() : id;
  fs::path sidecar = path;
  sidecar.replace_extension(".json");
  if (fs::exists(sidecar)) {
    MC_RETURN_IF_ERROR(apply_sidecar(sidecar, spec));
  } else {
    if (auto d = module_constant(*source, "MOOREEVAL_DIFFICULTY")) spec.difficulty = static_cast<int>(*d);
    spec.trials = trials_for_difficulty(spec.difficulty);
    if (auto t = module_constant(*source, "MOOREEVAL_TRIALS")) spec.trials = static_cast<int>(*t);
    spec.rtol = module_constant(*source, "MOOREEVAL_RTOL");
    spec.atol = module_constant(*source, "MOOREEVAL_ATOL");
  }
  MC_RETURN_IF_ERROR(validate(spec));
  return spec;
}

Result<std::vector<TaskSpec>> load_suite(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return not_found("task suite directory not found: " + dir.string());
  std::vector<TaskSpec> tasks;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file() || it->path().extension() != ".py") continue;
    if (it->path().filename().string().starts_with("__")) continue;
    fs::path rel = fs::relative(it->path(), dir);
    rel.replace_extension();
    auto spec = load_task(it->path(), rel.generic_string());
    if (!spec.ok()) return spec.status();
    tasks.push_back(std::move(spec).value());
  }
  if (ec) return internal_error("cannot list " + dir.string() + ": " + ec.message());
  if (tasks.empty()) return not_found("no task files (*.py) under " + dir.string());
  std::sort(tasks.begin(), tasks.end(), [](const TaskSpec& a, const TaskSpec& b) { return a.id < b.id; });
  return tasks;
}

Result<TaskSpec> resolve_task(const std::string& name_or_path, const fs::path& suite_dir) {
  if (name_or_path.empty()) return invalid_argument("no task given");
  fs::path direct(name_or_path);
  std::error_code ec;
  if (fs::is_regular_file(direct, ec)) return load_task(direct);
  fs::path in_suite = suite_dir / (name_or_path + ".py");
  if (fs::is_regular_file(in_suite, ec)) return load_task(in_suite, name_or_path);
  return not_found("task not found: '" + name_or_path + "' (neither a file nor a task id under " +
                   suite_dir.string() + ")");
}

}  // namespace musacoder::task
