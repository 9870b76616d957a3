#include "sandbox/host_layout.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/files.h"
#include "process/subprocess.h"

namespace musacoder::sandbox {

namespace fs = std::filesystem;

HostLayout system_layout() {
  HostLayout h;
  h.mounts.push_back({Mount::Kind::kReadOnly, "/usr"});
  for (const char* dir : {"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"}) {
    std::error_code ec;
    auto st = fs::symlink_status(dir, ec);
    if (ec || !fs::exists(st)) continue;
    if (fs::is_symlink(st)) {
      h.symlinks.push_back({fs::read_symlink(dir, ec).string(), dir});
    } else if (fs::is_directory(st)) {
      h.mounts.push_back({Mount::Kind::kReadOnly, dir});
    }
  }
  for (const char* f : {"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives"})
    h.mounts.push_back({Mount::Kind::kReadOnly, f, /*optional=*/true});
  return h;
}

std::string find_program(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos)
    return ::access(name.c_str(), X_OK) == 0 ? fs::absolute(name).string() : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return fs::absolute(candidate).string();
  }
  return "";
}

// The executable: symlinks resolved (a pyenv shim is a script that does not work inside),
// except in a virtual environment, whose bin/python must stay the entry point (the base
// interpreter it links to would not see the venv's site-packages).
Result<PythonInstall> discover_python(const std::string& python) {
  ProcessOptions p;
  p.argv = {python, "-c",
            "import json, os, site, sys\n"
            "paths = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}\n"
            "paths.update(site.getsitepackages())\n"
            "u = site.getusersitepackages()\n"
            "if os.path.isdir(u): paths.add(u)\n"
            "exe = sys.executable if sys.prefix != sys.base_prefix else os.path.realpath(sys.executable)\n"
            "print(json.dumps({'executable': exe,"
            " 'paths': sorted(os.path.realpath(x) for x in paths if os.path.isdir(x))}))\n"};
  p.env_unset = {"PYTHONPATH"};
  p.deadline = std::chrono::seconds(60);
  auto r = run_process(p);
  if (!r.ok())
    return failed_precondition("cannot run the Python interpreter '" + python + "': " + r.status().message());
  if (!r->succeeded())
    return failed_precondition("the Python interpreter '" + python + "' failed (" + r->describe() +
                               "): " + r->stderr_text.substr(0, 500));
  auto j = nlohmann::json::parse(r->stdout_text, nullptr, false);
  if (j.is_discarded() || !j.contains("executable") || !j.contains("paths"))
    return internal_error("unexpected output from '" + python + "': " + r->stdout_text.substr(0, 200));
  PythonInstall out;
  out.executable = j["executable"].get<std::string>();
  std::vector<fs::path> paths;
  for (const auto& x : j["paths"]) paths.emplace_back(x.get<std::string>());
  std::sort(paths.begin(), paths.end());
  for (const auto& p : paths) {
    // Drop dirs inside another one, and the system dirs the sandbox binds anyway.
    bool nested = false;
    for (const auto& q : out.paths) {
      auto [a, b] = std::mismatch(q.begin(), q.end(), p.begin(), p.end());
      nested |= a == q.end();
    }
    if (!nested && p != "/usr" && p != "/") out.paths.push_back(p);
  }
  return out;
}

Result<std::vector<fs::path>> cuda_device_nodes(int gpu_index) {
  // CUDA_VISIBLE_DEVICES=2,3 makes torch's cuda:0 the host's GPU 2.
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible && *visible) {
    std::vector<int> ids;
    std::stringstream list(visible);
    std::string item;
    bool numeric = true;
    while (std::getline(list, item, ',')) {
      numeric &= !item.empty() && item.find_first_not_of("0123456789") == std::string::npos;
      if (numeric) ids.push_back(std::atoi(item.c_str()));
    }
    if (!numeric)
      return failed_precondition("sandbox: CUDA_VISIBLE_DEVICES='" + std::string(visible) +
                                 "' (UUIDs or MIG ids) cannot be mapped to a device node; use indices");
    if (gpu_index < 0 || static_cast<std::size_t>(gpu_index) >= ids.size())
      return failed_precondition("sandbox: GPU " + std::to_string(gpu_index) +
                                 " is not in CUDA_VISIBLE_DEVICES=" + visible);
    gpu_index = ids[gpu_index];
  }
  int minor = gpu_index;
  std::error_code ec;
  std::vector<fs::path> gpus;
  for (const auto& e : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) gpus.push_back(e.path());
  std::sort(gpus.begin(), gpus.end());  // PCI bus ids sort in bus order
  if (gpu_index >= 0 && static_cast<std::size_t>(gpu_index) < gpus.size()) {
    auto info = read_file(gpus[gpu_index] / "information", 1 << 16);
    if (info.ok()) {
      auto pos = info->find("Device Minor:");
      if (pos != std::string::npos) minor = std::atoi(info->c_str() + pos + 13);
    }
  }
  std::vector<fs::path> nodes = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia" + std::to_string(minor)};
  for (const auto& n : nodes)
    if (!fs::exists(n, ec))
      return failed_precondition("CUDA job, but " + n.string() + " does not exist (no NVIDIA driver here?)");
  return nodes;
}

Result<std::vector<fs::path>> musa_device_nodes() {
  std::error_code ec;
  std::vector<fs::path> nodes;
  for (const auto& e : fs::directory_iterator("/dev", ec))
    if (e.path().filename().string().starts_with("mtgpu")) nodes.push_back(e.path());
  if (nodes.empty())
    return failed_precondition("MUSA job, but there is no /dev/mtgpu* (no Moore Threads driver here?)");
  std::sort(nodes.begin(), nodes.end());
  if (!fs::exists("/dev/dri", ec))
    return failed_precondition("MUSA job, but /dev/dri does not exist (the MT driver's render nodes)");
  nodes.push_back("/dev/dri");
  return nodes;
}

}  // namespace musacoder::sandbox
