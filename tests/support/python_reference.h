// Runs a Python reference script once per build tree and input, for tests that ctest runs as many
// processes (one per TEST): the output directory is keyed by the SHA-256 of the script and its arguments,
// written to a temporary sibling and renamed into place, so concurrent test processes never see a
// partial result and later ones reuse it.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/files.h"
#include "process/subprocess.h"
#include "core/text.h"

namespace musacoder::testing {

// `argv` excludes "--out DIR", which is appended. Returns the directory or the failure's output.
inline Result<std::filesystem::path> cached_python_reference(const std::string& name,
                                                             const std::filesystem::path& script,
                                                             const std::vector<std::string>& argv,
                                                             std::chrono::seconds deadline) {
  namespace fs = std::filesystem;
  auto text = read_file(script);
  if (!text.ok()) return text.status();
  std::string key_input = *text;
  for (const auto& a : argv) key_input += "\n" + a;
  fs::path root = fs::path(MUSACODER_BINARY_DIR) / "test-reference";
  fs::path dir = root / (name + "-" + sha256_hex(key_input).substr(0, 16));
  if (fs::exists(dir / "DONE")) return dir;
  std::error_code ec;
  fs::create_directories(root, ec);
  auto tmp = TempDir::create(name + "-tmp", root);
  if (!tmp.ok()) return tmp.status();
  ProcessOptions o;
  o.argv = {"python3", script.string()};
  o.argv.insert(o.argv.end(), argv.begin(), argv.end());
  o.argv.push_back("--out");
  o.argv.push_back(tmp->path().string());
  o.deadline = deadline;
  o.env_set = {{"TRANSFORMERS_VERBOSITY", "error"}, {"HF_HUB_OFFLINE", "1"}, {"OMP_NUM_THREADS", "1"}};
  auto r = run_process(o);
  if (!r.ok()) return r.status();
  if (!r->succeeded()) {
    return internal_error(script.filename().string() + " failed (" + r->describe() + "):\n" + r->stderr_text);
  }
  MC_RETURN_IF_ERROR(write_file_atomic(tmp->path() / "DONE", r->stdout_text));
  fs::rename(tmp->path(), dir, ec);  // loses the race harmlessly when another process got there first
  if (!ec) tmp->keep();
  if (!fs::exists(dir / "DONE")) return internal_error("could not place the reference in " + dir.string());
  return dir;
}

}  // namespace musacoder::testing
