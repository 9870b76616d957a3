// Telling a lean compile that failed on its sources from one that failed on its surroundings
// (contract in lean_build.h).
#include <regex>

#include "mooreeval/compile/lean_build.h"

namespace musacoder::build {

namespace fs = std::filesystem;

namespace {

// Messages of a compiler or linker that could not do its work, whatever the source said.
constexpr const char* kEnvironmental[] = {
    "Killed signal terminated program",  // g++ when the kernel OOM-kills cc1plus
    "internal compiler error",
    "No space left on device",
    "Cannot allocate memory",
    "virtual memory exhausted",
    "out of memory allocating",
    "Permission denied",
    "cannot find -l",            // ld: a library the link names is not there
    "cannot open output file",   // ld: the output directory went away
};

// The header of a "fatal error: H: No such file or directory" that the lean path provides:
// its own include (mooreeval_lean/...) or a shadow header that exists on this machine, so a
// compiler that cannot see it was run where the shim is out of reach.
std::string missing_lean_header(const std::string& log, const LeanShim& shim) {
  static const std::regex kMissing(R"(fatal error: ([^:\s]+): No such file or directory)");
  for (std::sregex_iterator it(log.begin(), log.end(), kMissing), end; it != end; ++it) {
    const std::string header = (*it)[1];
    std::error_code ec;
    if (header.rfind("mooreeval_lean/", 0) == 0 || fs::exists(shim.shadow_dir / header, ec))
      return header;
  }
  return "";
}

// The log without its "$ argv" lines: a flag or a path there may read "error" too.
std::string diagnostics_of(const std::string& log) {
  std::string out;
  std::size_t at = 0;
  while (at < log.size()) {
    std::size_t end = log.find('\n', at);
    if (end == std::string::npos) end = log.size();
    if (log.compare(at, 2, "$ ") != 0) out.append(log, at, end - at).push_back('\n');
    at = end + 1;
  }
  return out;
}

}  // namespace

std::string lean_failure_not_the_sources(const std::string& build_log, const LeanShim& shim) {
  const std::string log = diagnostics_of(build_log);
  for (const char* message : kEnvironmental)
    if (log.find(message) != std::string::npos) return std::string("the build said \"") + message + "\"";
  if (const std::string header = missing_lean_header(log, shim); !header.empty())
    return "the lean header " + header + " was out of the compiler's reach";
  if (log.find("error") == std::string::npos && log.find("undefined reference") == std::string::npos)
    return "no compiler diagnostic";
  return "";
}

}  // namespace musacoder::build
