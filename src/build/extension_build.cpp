#include "build/extension_build.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <optional>
#include <sstream>
#include <thread>

#include "core/files.h"
#include "core/subprocess.h"
#include "core/text.h"

namespace musacoder::build {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

Result<ExtensionSpec> extension_spec_from_json(const json& j) {
  ExtensionSpec s;
  try {
    s.name = j.at("name").get<std::string>();
    s.cpp_sources = j.at("cpp_sources").get<std::vector<std::string>>();
    s.cuda_sources = j.at("cuda_sources").get<std::vector<std::string>>();
    if (!j.at("functions").is_null()) {
      s.has_functions = true;
      for (const auto& [k, v] : j.at("functions").items()) s.functions.emplace_back(k, v.get<std::string>());
    }
    s.extra_cflags = j.at("extra_cflags").get<std::vector<std::string>>();
    s.extra_cuda_cflags = j.at("extra_cuda_cflags").get<std::vector<std::string>>();
    s.extra_ldflags = j.at("extra_ldflags").get<std::vector<std::string>>();
    s.extra_include_paths = j.at("extra_include_paths").get<std::vector<std::string>>();
    if (!j.at("with_cuda").is_null()) s.with_cuda = j.at("with_cuda").get<bool>() ? 1 : 0;
    s.with_pytorch_error_handling = j.at("with_pytorch_error_handling").get<bool>();
    s.no_implicit_headers = j.at("no_implicit_headers").get<bool>();
  } catch (const json::exception& e) {
    return internal_error(std::string("malformed extension spec from the runner: ") + e.what());
  }
  return s;
}

std::string generated_cpp_source(const ExtensionSpec& spec) {
  std::vector<std::string> parts;
  if (!spec.no_implicit_headers) parts.push_back("#include <torch/extension.h>");
  parts.insert(parts.end(), spec.cpp_sources.begin(), spec.cpp_sources.end());
  if (spec.has_functions) {
    parts.push_back("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {");
    for (const auto& [fn, doc] : spec.functions) {
      if (spec.with_pytorch_error_handling)
        parts.push_back("m.def(\"" + fn + "\", torch::wrap_pybind_function(" + fn + "), \"" + doc + "\");");
      else
        parts.push_back("m.def(\"" + fn + "\", " + fn + ", \"" + doc + "\");");
    }
    parts.push_back("}");
  }
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "\n" : "") + parts[i];
  return out;
}

std::string generated_cuda_source(const ExtensionSpec& spec) {
  std::vector<std::string> parts;
  if (!spec.no_implicit_headers) {
    parts = {"#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"};
  }
  parts.insert(parts.end(), spec.cuda_sources.begin(), spec.cuda_sources.end());
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "\n" : "") + parts[i];
  return out;
}

namespace {

bool uses_cuda(const ExtensionSpec& spec) {
  return spec.with_cuda == 1 || (spec.with_cuda == -1 && !spec.cuda_sources.empty());
}

std::vector<std::string> common_cflags(const ExtensionSpec& spec, const Toolchain& t, bool cuda) {
  std::vector<std::string> f = {"-DTORCH_EXTENSION_NAME=" + spec.name, "-DTORCH_API_INCLUDE_EXTENSION_H"};
  f.insert(f.end(), t.abi_flags.begin(), t.abi_flags.end());
  for (const auto& inc : spec.extra_include_paths) f.push_back("-I" + fs::absolute(inc).string());
  for (const auto& inc : cuda ? t.include_paths_cuda : t.include_paths_cpu) {
    f.push_back("-isystem");
    f.push_back(inc);
  }
  f.push_back("-isystem");
  f.push_back(t.python_include);
  return f;
}

struct Command {
  std::vector<std::string> argv;
};

std::vector<Command> commands_for(const ExtensionSpec& spec, const Toolchain& t, const fs::path& dir,
                                  const fs::path& library) {
  const bool cuda = uses_cuda(spec);
  std::vector<Command> cmds;
  std::vector<std::string> objects;
  Command cxx{{t.cxx}};
  for (auto& f : common_cflags(spec, t, cuda)) cxx.argv.push_back(f);
  cxx.argv.push_back("-fPIC");
  cxx.argv.push_back("-std=" + t.cxx_std);
  for (auto& f : spec.extra_cflags) cxx.argv.push_back(f);
  cxx.argv.insert(cxx.argv.end(), {"-c", (dir / "main.cpp").string(), "-o", (dir / "main.o").string()});
  cmds.push_back(cxx);
  objects.push_back((dir / "main.o").string());
  if (!spec.cuda_sources.empty()) {
    Command nvcc{{t.nvcc}};
    for (auto& f : common_cflags(spec, t, true)) nvcc.argv.push_back(f);
    for (auto& f : t.nvcc_common_flags) nvcc.argv.push_back(f);
    bool user_arch = false;
    for (auto& f : spec.extra_cuda_cflags) user_arch |= f.find("arch") != std::string::npos;
    if (!user_arch)
      for (auto& f : t.cuda_arch_flags()) nvcc.argv.push_back(f);
    nvcc.argv.insert(nvcc.argv.end(), {"--compiler-options", "-fPIC"});
    bool user_std = false;
    for (auto& f : spec.extra_cuda_cflags) {
      nvcc.argv.push_back(f);
      user_std |= f.starts_with("-std=");
    }
    if (!user_std) nvcc.argv.push_back("-std=" + t.cxx_std);
    nvcc.argv.insert(nvcc.argv.end(),
                     {"-c", (dir / "cuda.cu").string(), "-o", (dir / "cuda.cuda.o").string()});
    cmds.push_back(nvcc);
    objects.push_back((dir / "cuda.cuda.o").string());
  }
  Command link{{t.cxx}};
  link.argv.insert(link.argv.end(), objects.begin(), objects.end());
  link.argv.push_back("-shared");
  for (auto& f : spec.extra_ldflags) link.argv.push_back(f);
  for (auto& f : cuda ? t.ldflags_cuda : t.ldflags_cpu) link.argv.push_back(f);
  link.argv.insert(link.argv.end(), {"-o", library.string()});
  cmds.push_back(link);
  return cmds;
}

std::string cache_key(const ExtensionSpec& spec, const Toolchain& t, Backend backend) {
  json j = {{"v", 1},
            {"backend", backend_name(backend)},
            {"toolchain", t.fingerprint()},
            {"name", spec.name},
            {"cpp", generated_cpp_source(spec)},
            {"cu", generated_cuda_source(spec)},
            {"cflags", spec.extra_cflags},
            {"cuflags", spec.extra_cuda_cflags},
            {"ldflags", spec.extra_ldflags},
            {"inc", spec.extra_include_paths},
            {"with_cuda", spec.with_cuda}};
  return sha256_hex(j.dump());
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// Builds one spec into `dir`; returns the outcome and appends compiler output to `log`.
BuildOutcome compile_one(const ExtensionSpec& spec, const Toolchain& t, const fs::path& dir,
                         const fs::path& library, Clock::time_point deadline, std::string& log) {
  if (write_file_atomic(dir / "main.cpp", generated_cpp_source(spec)).ok() == false)
    return BuildOutcome::kInfraError;
  if (!spec.cuda_sources.empty() && !write_file_atomic(dir / "cuda.cu", generated_cuda_source(spec)).ok())
    return BuildOutcome::kInfraError;
  // Compile steps are independent (main.cpp with g++, cuda.cu with nvcc): run them at
  // once, then link. Every step shares the one build deadline.
  std::vector<Command> cmds = commands_for(spec, t, dir, library);
  const Command link = cmds.back();
  cmds.pop_back();
  std::vector<std::pair<const Command*, std::unique_ptr<Subprocess>>> running;
  auto options_for = [&](const Command& cmd) {
    ProcessOptions p;
    p.argv = cmd.argv;
    p.cwd = dir.string();
    p.deadline = std::max(std::chrono::milliseconds(1),
                          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
    return p;
  };
  BuildOutcome outcome = BuildOutcome::kOk;
  auto record = [&](const Command& cmd, const ProcessResult& r) {
    log += "$ " + joined(cmd.argv) + "\n" + r.stdout_text + r.stderr_text;
    if (r.timed_out) return BuildOutcome::kTimeout;
    if (!r.succeeded()) {
      log += "[" + cmd.argv[0] + " " + r.describe() + "]\n";
      return r.signaled ? BuildOutcome::kInfraError : BuildOutcome::kCompileError;
    }
    return BuildOutcome::kOk;
  };
  auto worse = [](BuildOutcome a, BuildOutcome b) {
    return static_cast<int>(b) > static_cast<int>(a) ? b : a;
  };
  for (const auto& cmd : cmds) {
    if (Clock::now() >= deadline) return BuildOutcome::kTimeout;
    auto child = Subprocess::spawn(options_for(cmd));
    if (!child.ok()) {
      log += child.status().message() + "\n";
      return BuildOutcome::kInfraError;
    }
    running.emplace_back(&cmd, std::move(child).value());
  }
  for (auto& [cmd, child] : running) outcome = worse(outcome, record(*cmd, child->wait()));
  if (outcome != BuildOutcome::kOk) return outcome;
  if (Clock::now() >= deadline) return BuildOutcome::kTimeout;
  auto r = run_process(options_for(link));
  if (!r.ok()) {
    log += r.status().message() + "\n";
    return BuildOutcome::kInfraError;
  }
  return record(link, *r);
}

// Exclusive right to build one cache key, across threads and processes (flock on a
// per-key lock file): concurrent requests for the same key build once, the others wait
// and then find the published entry.
class KeyLock {
 public:
  KeyLock(const fs::path& cache_dir, const std::string& key, Clock::time_point deadline) {
    std::error_code ec;
    fs::create_directories(cache_dir / ".locks", ec);
    fd_ = ::open((cache_dir / ".locks" / (key + ".lock")).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return;  // no lock possible: build without one (the publish is still atomic)
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (Clock::now() >= deadline) {
        timed_out_ = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    held_ = true;
  }
  ~KeyLock() {
    if (held_) ::flock(fd_, LOCK_UN);
    if (fd_ >= 0) ::close(fd_);
  }
  KeyLock(const KeyLock&) = delete;
  KeyLock& operator=(const KeyLock&) = delete;
  bool timed_out() const { return timed_out_; }

 private:
  int fd_ = -1;
  bool held_ = false;
  bool timed_out_ = false;
};

}  // namespace

BuildReport build_extensions(const std::vector<ExtensionSpec>& specs, const Toolchain& toolchain,
                             const BuildOptions& options, const fs::path& work_dir) {
  const auto start = Clock::now();
  const auto deadline = start + options.max_build_time;
  BuildReport report;
  report.cache_hit = !specs.empty();
  // Library paths go to a runner whose working directory is the job's: make them absolute.
  std::error_code abs_ec;
  const fs::path cache_dir = options.cache_dir.empty() ? fs::path() : fs::absolute(options.cache_dir, abs_ec);
  auto finish = [&](BuildOutcome o) {
    report.outcome = o;
    report.log = truncate_middle(sanitize_utf8(report.log), options.max_log_bytes);
    report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (o != BuildOutcome::kOk) report.cache_hit = false;
    return report;
  };
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const ExtensionSpec& spec = specs[i];
    const bool cuda = uses_cuda(spec);
    if (cuda && options.backend == Backend::kCpu) {
      report.log += "extension '" + spec.name + "' has CUDA sources, but the backend is cpu\n";
      return finish(BuildOutcome::kCompileError);
    }
    if (cuda && toolchain.nvcc.empty()) {
      report.log += "CUDA toolkit (nvcc) not found by torch.utils.cpp_extension (set CUDA_HOME)\n";
      return finish(BuildOutcome::kInfraError);
    }
    const std::string lib_name = spec.name + ".so";
    const std::string key = cache_key(spec, toolchain, options.backend);
    std::optional<KeyLock> lock;
    if (!cache_dir.empty()) {
      fs::path cached = cache_dir / key / lib_name;
      std::error_code ec;
      if (fs::is_regular_file(cached, ec)) {
        report.extensions.push_back({spec.name, cached});
        continue;
      }
      lock.emplace(cache_dir, key, deadline);
      if (lock->timed_out()) {
        report.log += "waited past the build deadline for a concurrent build of the same source\n";
        return finish(BuildOutcome::kTimeout);
      }
      if (fs::is_regular_file(cached, ec)) {  // built by whoever held the lock before us
        report.extensions.push_back({spec.name, cached});
        continue;
      }
    }
    report.cache_hit = false;
    fs::path dir = work_dir / ("ext" + std::to_string(i) + "_" + spec.name);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      report.log += "cannot create " + dir.string() + ": " + ec.message() + "\n";
      return finish(BuildOutcome::kInfraError);
    }
    BuildOutcome o = compile_one(spec, toolchain, dir, dir / lib_name, deadline, report.log);
    if (o != BuildOutcome::kOk) return finish(o);
    fs::path library = dir / lib_name;
    if (!cache_dir.empty()) {
      // Publish atomically: copy into a private temp dir inside the cache, then rename.
      fs::create_directories(cache_dir, ec);
      fs::path staging =
          cache_dir / (".tmp-" + key + "-" + std::to_string(::getpid()) + "-" + std::to_string(i));
      fs::create_directories(staging, ec);
      fs::copy_file(library, staging / lib_name, fs::copy_options::overwrite_existing, ec);
      if (!ec) fs::rename(staging, cache_dir / key, ec);
      if (ec) fs::remove_all(staging, ec);  // another process published it first: fine
      if (fs::is_regular_file(cache_dir / key / lib_name, ec)) library = cache_dir / key / lib_name;
    }
    report.extensions.push_back({spec.name, library});
  }
  return finish(BuildOutcome::kOk);
}

}  // namespace musacoder::build
