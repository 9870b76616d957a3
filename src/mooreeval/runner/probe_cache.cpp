#include "mooreeval/runner/probe_cache.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "core/files.h"
#include "core/text.h"
#include "process/subprocess.h"

namespace musacoder::run {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Beside the build cache's entries; dot-named, so the build cache neither counts nor evicts it
// (a few KiB per interpreter).
constexpr const char* kProbeDir = ".toolchain-probes";

// What decides the probe's answer on the Python side, found without importing torch.
constexpr const char* kFingerprintProgram = R"PY(
import glob, importlib.util, json, os, sys
def st(p):
    try:
        s = os.stat(p)
        return [p, s.st_size, s.st_mtime_ns]
    except OSError:
        return [p, None, None]
spec = importlib.util.find_spec("torch")
files = []
if spec is not None and spec.origin:
    d = os.path.dirname(spec.origin)
    files = [st(os.path.join(d, f)) for f in ("__init__.py", "version.py", os.path.join("utils", "cpp_extension.py"))]
    files += [st(p) for p in sorted(glob.glob(os.path.join(d, "_C*.so")))]
print(json.dumps({"executable": os.path.realpath(sys.executable), "version": sys.version, "path": sys.path,
                  "torch": files}))
)PY";

std::string runner_sources_digest(const fs::path& runner_dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(runner_dir / "mooreeval_runner", ec))
    if (e.is_regular_file() && e.path().extension() == ".py") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string all;
  for (const auto& f : files) {
    auto text = read_file(f);
    all += f.filename().string() + ":" + (text.ok() ? sha256_hex(*text) : std::string("?")) + "\n";
  }
  return sha256_hex(all);
}

json environment_part(const RunnerOptions& options) {
  json env = json::object();
  for (const char* name : {"CXX", "CC", "PATH", "PYTORCH_NVCC", "CUDA_HOME", "CUDA_PATH", "MUSA_HOME",
                           "TORCH_CUDA_ARCH_LIST"}) {
    const char* value = std::getenv(name);
    env[name] = value ? json(value) : json(nullptr);
  }
  env["extra_env"] = options.extra_env;
  return env;
}

}  // namespace

Result<std::string> probe_fingerprint(const RunnerOptions& options) {
  ProcessOptions p;
  p.argv = {options.python, "-c", kFingerprintProgram};
  p.env_set = runner_environment(options);
  p.deadline = std::chrono::milliseconds(20000);
  auto r = run_process(p);
  if (!r.ok()) return r.status();
  json python = json::parse(r->stdout_text, nullptr, false);
  if (!r->succeeded() || python.is_discarded() || python["torch"].empty())
    return unavailable("toolchain fingerprint: the interpreter did not report a torch installation");
  json key = {{"schema", "mooreeval.probe-key/1"},
              {"python", python},
              {"runner", runner_sources_digest(options.runner_dir)},
              {"env", environment_part(options)}};
  return sha256_hex(key.dump());
}

std::optional<json> load_probe(const fs::path& cache_dir, const std::string& key) {
  if (cache_dir.empty()) return std::nullopt;
  auto text = read_file(cache_dir / kProbeDir / (key + ".json"));
  if (!text.ok()) return std::nullopt;
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("status", "") != "ok") return std::nullopt;
  return j;
}

void store_probe(const fs::path& cache_dir, const std::string& key, const json& result) {
  if (cache_dir.empty() || result.value("status", "") != "ok") return;
  std::error_code ec;
  fs::create_directories(cache_dir / kProbeDir, ec);
  if (ec) return;
  (void)write_file_atomic(cache_dir / kProbeDir / (key + ".json"), result.dump());
}

}  // namespace musacoder::run
