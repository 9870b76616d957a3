#include "kernelbench/suite.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/files.h"
#include "core/text.h"

namespace musacoder::kernelbench {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxTaskBytes = 1u << 20;

std::optional<int> parse_int(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// Reads the task module and its sidecar into `t`; problems go to t.load_error. Returns the sidecar text.
std::string read_task(SuiteTask& t) {
  auto src = read_file(t.path, kMaxTaskBytes);
  if (!src.ok()) {
    t.load_error = "cannot read: " + src.status().message();
    return {};
  }
  if (!is_valid_utf8(*src)) t.load_error = "not UTF-8";
  else t.source = *src;
  if (t.load_error.empty()) t.load_error = task_source_problem(t.source);
  fs::path sidecar = fs::path(t.path).replace_extension(".json");
  std::error_code ec;
  if (!fs::exists(sidecar, ec)) return {};
  auto text = read_file(sidecar, kMaxTaskBytes);
  if (!text.ok()) return {};
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    if (t.load_error.empty()) t.load_error = "sidecar is not a JSON object";
    return *text;
  }
  if (j.contains("description") && j["description"].is_string()) t.description = j["description"];
  if (j.contains("difficulty") && j["difficulty"].is_number_integer() && t.problem_id == 0)
    t.level = j["difficulty"].get<int>();
  return *text;
}

void finish(Suite& s, const std::map<std::string, std::string>& sidecars) {
  std::sort(s.tasks.begin(), s.tasks.end(), [](const SuiteTask& a, const SuiteTask& b) {
    return std::tie(a.level, a.problem_id, a.id) < std::tie(b.level, b.problem_id, b.id);
  });
  std::string all;
  std::vector<const SuiteTask*> by_id;
  for (const auto& t : s.tasks) by_id.push_back(&t);
  std::sort(by_id.begin(), by_id.end(), [](auto* a, auto* b) { return a->id < b->id; });
  for (const SuiteTask* t : by_id) {
    auto side = sidecars.find(t->id);
    all += sha256_hex(t->id) + sha256_hex(t->source) + sha256_hex(side == sidecars.end() ? "" : side->second);
  }
  s.content_hash = sha256_hex(all);
}

std::string join_ints(const std::set<int>& v) {
  // Compact ranges: {1,2,3,7} -> "1-3,7".
  std::string out;
  for (auto it = v.begin(); it != v.end();) {
    int a = *it, b = a;
    for (++it; it != v.end() && *it == b + 1; ++it) b = *it;
    out += (out.empty() ? "" : ",") + std::to_string(a) + (a == b ? "" : "-" + std::to_string(b));
  }
  return out;
}

}  // namespace

std::size_t Suite::usable_count() const {
  return static_cast<std::size_t>(std::count_if(tasks.begin(), tasks.end(), [](auto& t) { return t.usable(); }));
}

Result<std::set<int>> parse_id_list(std::string_view text) {
  std::set<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = std::min(text.find(',', start), text.size());
    std::string_view item = text.substr(start, end - start);
    std::size_t dash = item.find('-');
    auto a = parse_int(item.substr(0, dash));
    auto b = dash == std::string_view::npos ? a : parse_int(item.substr(dash + 1));
    if (!a || !b || *a < 1 || *a > *b)
      return invalid_argument("bad id list item '" + std::string(item) + "' in '" + std::string(text) +
                              "' (expected N or A-B with 1 <= A <= B)");
    for (int i = *a; i <= *b; ++i) out.insert(i);
    start = end + 1;
  }
  return out;
}

std::string task_source_problem(std::string_view source) {
  static const std::regex model(R"((^|\n)class\s+Model\s*[\(:])");
  static const std::regex inputs(R"((^|\n)def\s+get_inputs\s*\()");
  static const std::regex init(R"((^|\n)def\s+get_init_inputs\s*\()");
  const std::string s(source);
  if (!std::regex_search(s, model)) return "no `class Model`";
  if (!std::regex_search(s, inputs)) return "no `def get_inputs()`";
  if (!std::regex_search(s, init)) return "no `def get_init_inputs()`";
  return {};
}

Result<Suite> load_task_folder(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return not_found("task folder " + dir.string() + " is not a directory");
  Suite s;
  s.root = dir;
  std::map<std::string, std::string> sidecars;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file() || it->path().extension() != ".py") continue;
    if (it->path().filename().string().starts_with("__")) continue;  // __init__.py
    SuiteTask t;
    t.path = it->path();
    t.id = fs::relative(t.path, dir).replace_extension("").generic_string();
    sidecars[t.id] = read_task(t);
    s.tasks.push_back(std::move(t));
  }
  if (ec) return internal_error("listing " + dir.string() + ": " + ec.message());
  s.id = "folder:" + fs::weakly_canonical(dir, ec).filename().string();
  finish(s, sidecars);
  return s;
}

Result<Suite> load_kernelbench(const fs::path& dir, const KernelBenchSelection& sel) {
  std::error_code ec;
  fs::path root = fs::is_directory(dir / "KernelBench", ec) ? dir / "KernelBench" : dir;
  Suite s;
  s.root = root;
  std::map<std::string, std::string> sidecars;
  std::map<std::pair<int, int>, std::string> seen;  // (level, problem) -> id
  static const std::regex name(R"(^(\d+)_.+\.py$)");
  bool any_level = false;
  for (int level : sel.levels) {
    fs::path ldir = root / ("level" + std::to_string(level));
    if (!fs::is_directory(ldir, ec)) continue;
    any_level = true;
    std::vector<fs::path> files;  // by name, so that which of two duplicates is flagged does not vary
    for (const auto& e : fs::directory_iterator(ldir, ec))
      if (e.is_regular_file() && e.path().extension() == ".py" && !e.path().filename().string().starts_with("__"))
        files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& path : files) {
      const std::string file = path.filename().string();
      SuiteTask t;
      t.path = path;
      t.level = level;
      t.id = "level" + std::to_string(level) + "/" + path.stem().string();
      std::smatch m;
      if (std::regex_match(file, m, name)) t.problem_id = std::stoi(m[1].str().substr(0, 9));
      if (!sel.problems.empty() && t.problem_id != 0 && !sel.problems.count(t.problem_id)) continue;
      sidecars[t.id] = read_task(t);
      if (t.problem_id == 0 && t.load_error.empty()) t.load_error = "file name has no numeric problem id";
      auto [it, fresh] = seen.emplace(std::pair{level, t.problem_id}, t.id);
      if (!fresh && t.problem_id != 0 && t.load_error.empty()) t.load_error = "duplicate problem id (also " + it->second + ")";
      s.tasks.push_back(std::move(t));
    }
  }
  if (!any_level) return not_found(root.string() + " has none of the selected level<N>/ folders");
  s.id = "kernelbench:L" + join_ints(sel.levels) + (sel.problems.empty() ? "" : "/p" + join_ints(sel.problems));
  finish(s, sidecars);
  return s;
}

}  // namespace musacoder::kernelbench
