#include "mooreeval/pipeline/inspect_cache.h"

#include "core/files.h"
#include "core/text.h"

namespace musacoder::eval {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFile = "inspect.json";

}  // namespace

InspectCache::InspectCache(build::BuildCache cache, const fs::path& runner_dir) : cache_(std::move(cache)) {
  // Unreadable runner code: no fingerprint, no cache (never a key that ignores the rules).
  if (auto tree = hash_tree(runner_dir / "mooreeval_runner"); tree.ok()) runner_fingerprint_ = *tree;
}

std::string InspectCache::key(std::string_view candidate_source, std::string_view task_source) const {
  std::string all = "mooreeval-inspect-v1";
  for (std::string_view part : {std::string_view(runner_fingerprint_), task_source, candidate_source}) {
    all += '\0' + std::to_string(part.size()) + '\0';
    all.append(part);
  }
  return "inspect-" + sha256_hex(all);
}

std::optional<json> InspectCache::lookup(const std::string& key) const {
  auto path = cache_.lookup(key, kFile);
  if (!path) return std::nullopt;
  auto text = read_file(*path);
  if (!text.ok()) return std::nullopt;
  json result = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!result.is_object() || result.value("status", "") != "ok") return std::nullopt;
  return result;
}

void InspectCache::remember(const std::string& key, const json& result, const fs::path& scratch) const {
  if (!enabled() || !result.is_object() || result.value("status", "") != "ok") return;
  const fs::path staged = scratch / kFile;
  if (write_file_atomic(staged, result.dump()).ok()) cache_.publish(key, staged);
}

}  // namespace musacoder::eval
