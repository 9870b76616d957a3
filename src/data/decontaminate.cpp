#include "data/decontaminate.h"

#include <algorithm>
#include <map>
#include <vector>

#include "core/files.h"
#include "data/python_canon.h"

namespace musacoder::data {

namespace fs = std::filesystem;

Result<Decontaminator> Decontaminator::load(const fs::path& suite_dir, const DecontaminationOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(suite_dir, ec)) return not_found("exclude suite " + suite_dir.string() + " is not a directory");
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(suite_dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file() && it->path().extension() == ".py") files.push_back(it->path());
  if (ec) return invalid_argument("cannot list " + suite_dir.string() + ": " + ec.message());
  if (files.empty()) return invalid_argument("exclude suite " + suite_dir.string() + " holds no .py file");
  std::sort(files.begin(), files.end());
  Decontaminator d;
  d.options_ = options;
  for (const fs::path& f : files) {
    auto text = read_file(f);
    if (!text.ok()) return text.status();
    const std::string rel = fs::relative(f, suite_dir).string();
    PythonCanon c = canonicalize_task(*text);
    d.canonical_.emplace(c.canonical, rel);
    for (std::string& s : shingles(c.tokens, options.ngram)) d.shingle_.emplace(std::move(s), rel);
    ++d.files_;
  }
  return d;
}

std::optional<Overlap> Decontaminator::check(const std::string& task_source) const {
  PythonCanon c = canonicalize_task(task_source);
  if (auto it = canonical_.find(c.canonical); it != canonical_.end()) return Overlap{"canonical", it->second, 1.0};
  std::vector<std::string> mine = shingles(c.tokens, options_.ngram);
  if (mine.empty()) return std::nullopt;
  std::map<std::string, std::size_t> by_file;
  std::size_t seen = 0;
  for (const std::string& s : mine)
    if (auto it = shingle_.find(s); it != shingle_.end()) ++seen, ++by_file[it->second];
  const double score = static_cast<double>(seen) / static_cast<double>(mine.size());
  if (score < options_.ngram_threshold) return std::nullopt;
  auto best = std::max_element(by_file.begin(), by_file.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  return Overlap{"ngram", best->first, score};
}

}  // namespace musacoder::data
