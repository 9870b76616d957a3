// Porting whole trees and the KernelBench suite, with their manifests.
#include <algorithm>
#include <regex>

#include "core/files.h"
#include "rules_internal.h"

namespace musacoder::musa {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json findings_json(const std::vector<Finding>& fs) {
  json a = json::array();
  for (const auto& f : fs) a.push_back({{"line", f.line}, {"symbol", f.symbol}, {"message", f.message}});
  return a;
}

bool inside(const fs::path& child, const fs::path& parent) {
  const fs::path c = fs::weakly_canonical(child), p = fs::weakly_canonical(parent);
  auto [pe, ce] = std::mismatch(p.begin(), p.end(), c.begin(), c.end());
  return pe == p.end();
}

// Ports one file to `dst`; returns its record.
Result<json> port_one(const fs::path& src, const fs::path& dst, const std::string& rel,
                      const TreePortOptions& o) {
  auto kind = source_kind_of(src);
  if (!kind.ok()) return kind.status();
  auto text = read_file(src);
  if (!text.ok()) return text.status();
  PortResult r = port_source(*text, *kind, o.direction);
  // Files that build nothing (a KernelBench reference task) have no sources for the header: text back.
  if (o.shim && o.direction == Direction::kToCuda && *kind == SourceKind::kPython &&
      text->find("torch_musa.utils.musa_extension import load_inline") != std::string::npos) {
    auto shimmed = shim_submission(*text);
    if (!shimmed.ok()) return invalid_argument(src.string() + ": " + shimmed.status().message());
    r.text = *shimmed;
  }
  std::error_code ec;
  fs::create_directories(dst.parent_path(), ec);
  if (auto s = write_file_atomic(dst, r.text); !s.ok()) return s;
  json rec = file_record(rel, fs::path(rel).parent_path() / dst.filename(), *text, r);
  if (o.shim) rec["shimmed"] = true;
  return rec;
}

}  // namespace

json file_record(const std::string& file, const std::string& ported_file, std::string_view input,
                 const PortResult& r) {
  return {{"file", file},
          {"ported_file", ported_file},
          {"changed", r.text != input},
          {"applied", r.applied},
          {"warnings", findings_json(r.warnings)},
          {"unmapped", findings_json(r.unmapped)},
          {"round_trips", r.round_trips}};
}

Result<json> port_tree(const fs::path& in, const fs::path& out, const TreePortOptions& o) {
  std::error_code ec;
  if (!fs::exists(in, ec)) return not_found("nothing to port: " + in.string() + " does not exist");
  json manifest = {{"direction", direction_name(o.direction)},
                   {"torchada_version", rule_table().torchada_version},
                   {"files", json::array()}};
  int unmapped = 0;
  if (!fs::is_directory(in, ec)) {
    auto rec = port_one(in, out, in.filename().string(), o);
    if (!rec.ok()) return rec.status();
    unmapped += static_cast<int>((*rec)["unmapped"].size());
    manifest["files"].push_back(*rec);
    manifest["unmapped"] = unmapped;
    return manifest;
  }
  if (inside(out, in)) return invalid_argument("--out " + out.string() + " is inside the input " + in.string());
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(in, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file() && source_kind_of(it->path()).ok()) files.push_back(it->path());
  if (ec) return invalid_argument("cannot list " + in.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const fs::path rel = fs::relative(f, in);
    auto rec = port_one(f, out / ported_file_name(rel, o.direction), rel.string(), o);
    if (!rec.ok()) return rec.status();
    unmapped += static_cast<int>((*rec)["unmapped"].size());
    manifest["files"].push_back(*rec);
  }
  manifest["unmapped"] = unmapped;
  if (auto s = write_file_atomic(out / "port_manifest.json", manifest.dump(2) + "\n"); !s.ok()) return s;
  return manifest;
}

Result<json> port_kernelbench_suite(const fs::path& kernelbench_dir, const fs::path& out) {
  std::error_code ec;
  fs::path root = kernelbench_dir;
  if (fs::is_directory(root / "KernelBench" / "level1", ec)) root /= "KernelBench";
  std::vector<fs::path> levels;
  static const std::regex level_re(R"(level(\d+))"), task_re(R"((\d+)_(.+)\.py)");
  for (const auto& e : fs::directory_iterator(root, ec))
    if (e.is_directory() && std::regex_match(e.path().filename().string(), level_re)) levels.push_back(e.path());
  if (ec || levels.empty())
    return not_found("no KernelBench levels (level1/, level2/, ...) in " + kernelbench_dir.string() +
                     " or its KernelBench/ folder");
  if (inside(out, root)) return invalid_argument("--out " + out.string() + " is inside " + root.string());
  std::sort(levels.begin(), levels.end());
  json manifest = {{"suite", "MUSA-ported KernelBench"},
                   {"source", fs::absolute(root).string()},
                   {"torchada_version", rule_table().torchada_version},
                   {"tasks", json::array()}};
  int unmapped = 0, changed = 0;
  for (const auto& level : levels) {
    const int level_no = std::stoi(level.filename().string().substr(5));
    std::vector<fs::path> tasks;
    for (const auto& e : fs::directory_iterator(level))
      if (std::regex_match(e.path().filename().string(), task_re)) tasks.push_back(e.path());
    std::sort(tasks.begin(), tasks.end());
    for (const auto& t : tasks) {
      std::smatch m;
      const std::string name = t.filename().string();
      std::regex_match(name, m, task_re);
      const std::string rel = level.filename().string() + "/" + name;
      auto rec = port_one(t, out / rel, rel, {});
      if (!rec.ok()) return rec.status();
      (*rec)["level"] = level_no;
      (*rec)["id"] = std::stoi(m.str(1));
      (*rec)["name"] = m.str(2);
      unmapped += static_cast<int>((*rec)["unmapped"].size());
      changed += (*rec)["changed"].get<bool>();
      manifest["tasks"].push_back(*rec);
    }
  }
  manifest["unmapped"] = unmapped;
  manifest["changed"] = changed;
  if (auto s = write_file_atomic(out / "manifest.json", manifest.dump(2) + "\n"); !s.ok()) return s;
  return manifest;
}

}  // namespace musacoder::musa
