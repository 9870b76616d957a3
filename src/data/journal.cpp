// journal.jsonl: the synthesizer's progress, one finished program per line.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "core/files.h"
#include "data/synth_internal.h"

namespace musacoder::data {

namespace fs = std::filesystem;

Result<Journal> Journal::open(const fs::path& path) {
  Journal j;
  j.path_ = path;
  std::error_code ec;
  if (!fs::exists(path, ec)) return j;
  auto text = read_file(path, std::size_t{16} << 30);
  if (!text.ok()) return text.status();
  std::string kept;
  std::istringstream in(*text);
  std::string line;
  bool torn = false;
  while (std::getline(in, line)) {
    // A line without its newline, or that does not parse, is the torn end of a killed run.
    const bool complete = !in.eof() || (!text->empty() && text->back() == '\n');
    auto e = nlohmann::json::parse(line, nullptr, false);
    if (!complete || e.is_discarded() || !e.is_object() || !e.contains("index")) {
      torn = true;
      continue;
    }
    j.entries_[e["index"].get<int>()] = e;
    kept += line + "\n";
  }
  if (torn) MC_RETURN_IF_ERROR(write_file_atomic(path, kept));
  return j;
}

Status Journal::append(const nlohmann::json& entry) {
  std::lock_guard<std::mutex> lock(*mu_);
  const std::string line = entry.dump() + "\n";
  std::FILE* f = std::fopen(path_.c_str(), "ab");
  if (f == nullptr) return internal_error("cannot append to " + path_.string());
  const bool ok = std::fwrite(line.data(), 1, line.size(), f) == line.size() && std::fflush(f) == 0 &&
                  ::fsync(fileno(f)) == 0;
  std::fclose(f);
  if (!ok) return internal_error("cannot write " + path_.string());
  entries_[entry["index"].get<int>()] = entry;
  return Status::ok_status();
}

int best_answer(const nlohmann::json& answers) {
  int best = -1;
  double best_speedup = -1;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const auto& v = answers[i].value("verdict", nlohmann::json::object());
    if (v.value("verdict", "") != "ok") continue;
    const double s = v.contains("speedup") && v["speedup"].is_number() ? v["speedup"].get<double>() : 0.0;
    if (s > best_speedup) best = static_cast<int>(i), best_speedup = s;
  }
  return best;
}

}  // namespace musacoder::data
