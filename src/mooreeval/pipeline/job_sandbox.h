// How the evaluator lays out one job for the sandbox: a work dir per runner process (so
// the candidate's sandbox never contains the reference's outputs), and the read-only
// paths each kind of process needs.
//
// Thread-safety: pure functions apart from creating directories.
#pragma once

#include <filesystem>
#include <vector>

#include "mooreeval/compile/toolchain.h"
#include "core/status.h"

namespace musacoder::eval {

struct JobDirs {
  std::filesystem::path root;     // candidate.py; parent of the others (0711: the job uid may traverse)
  std::filesystem::path inspect;  // each runner's job/result/phase files and outputs
  std::filesystem::path reference;
  std::filesystem::path candidate;
};

// Creates the per-runner dirs under `root`.
Result<JobDirs> make_job_dirs(const std::filesystem::path& root);

// Host dirs a compiler needs beyond /usr and the Python installation: the toolchain's
// include and library dirs and the CUDA toolkit (existing dirs only).
std::vector<std::filesystem::path> toolchain_read_only(const build::Toolchain& t);

// The install prefix of the C++ compiler when it lives outside /usr (e.g. /opt/gcc for
// /opt/gcc/bin/g++): compilers need it, and run jobs may load its libstdc++.
std::vector<std::filesystem::path> compiler_prefixes(const build::Toolchain& t);

}  // namespace musacoder::eval
