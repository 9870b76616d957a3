// What the sandbox needs to know about the host: the system dirs to bind, programs in
// PATH, the Python installation behind an interpreter name, and the NVIDIA device nodes
// of one GPU.
//
// Thread-safety: all functions may be called concurrently.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"
#include "sandbox/bwrap_args.h"

namespace musacoder::sandbox {

struct HostLayout {
  std::vector<Symlink> symlinks;  // /bin -> usr/bin etc. on merged-/usr hosts
  std::vector<Mount> mounts;      // /usr, the non-symlink /lib* dirs, the few /etc files a toolchain reads
};

// The system part of every sandbox's file system. No secrets: of /etc only the dynamic
// linker's files and the alternatives links (c++ -> g++) are visible.
HostLayout system_layout();

// The absolute path of `name` (as execvp would find it in $PATH); "" if not found.
std::string find_program(const std::string& name);

struct PythonInstall {
  std::string executable;                    // sys.executable (symlinks resolved outside a venv)
  std::vector<std::filesystem::path> paths;  // prefixes and site-packages dirs, outermost only
};

// Asks the interpreter (unsandboxed, trusted: no candidate input) where it lives.
Result<PythonInstall> discover_python(const std::string& python);

// /dev/nvidiactl, /dev/nvidia-uvm and /dev/nvidia<minor> of the gpu_index-th GPU in PCI
// bus order (from /proc/driver/nvidia/gpus; the index itself where that is unreadable).
// Fails when a node is missing.
Result<std::vector<std::filesystem::path>> cuda_device_nodes(int gpu_index);

// The Moore Threads driver's nodes a MUSA job needs: every /dev/mtgpu* and /dev/dri (all GPUs: the
// device is chosen by index inside the job, MUSA_VISIBLE_DEVICES where set). Error naming the missing
// node where there is no MT driver.
Result<std::vector<std::filesystem::path>> musa_device_nodes();

}  // namespace musacoder::sandbox
