// The adversarial corpus (tests/adversarial/manifest.json) for the integration and gpu
// suites: every case with its expected verdict and, for `illegal`, the legality rule that
// must be among the findings.
#pragma once

#include <algorithm>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

#include "support/eval_env.h"

namespace musacoder::testing {

struct AdversarialCase {
  std::string file, task, expected, rule;
  bool needs_sandbox = false;  // only the sandbox can stop it: never run it without one
};

// gtest prints parameters in test names and failures: the file name says it all.
inline void PrintTo(const AdversarialCase& c, std::ostream* os) {
  *os << c.file;
}

inline std::vector<AdversarialCase> adversarial_cases(const std::string& backend) {
  std::vector<AdversarialCase> out;
  auto text = read_file(kSourceDir / "tests/adversarial/manifest.json");
  if (!text.ok()) return out;
  auto manifest = nlohmann::json::parse(*text, nullptr, false);
  if (!manifest.is_array()) return out;
  for (const auto& m : manifest) {
    auto backends = m.value("backends", std::vector<std::string>{});
    if (std::find(backends.begin(), backends.end(), backend) == backends.end()) continue;
    out.push_back({m.value("file", ""), m.value("task", ""), m.value("expected", ""), m.value("rule", ""),
                   m.value("needs_sandbox", false)});
  }
  return out;
}

// True when the per-job sandbox (src/sandbox, target mc_sandbox) is part of this build.
inline bool sandbox_present() {
#ifdef MUSACODER_HAVE_SANDBOX
  return true;
#else
  return false;
#endif
}

inline bool has_rule(const mooreeval::Verdict& v, const std::string& rule) {
  return std::any_of(v.legality.begin(), v.legality.end(), [&](const auto& f) { return f.rule == rule; });
}

// Lines of host files a candidate may try to leak; none may appear in a verdict.
inline std::vector<std::string> host_secrets() {
  std::vector<std::string> lines;
  for (const char* path : {"/etc/passwd", "/etc/hostname"}) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line) && lines.size() < 64)
      if (line.size() >= 6) lines.push_back(line);
  }
  return lines;
}

inline std::string leaked_secret(const mooreeval::Verdict& v) {
  const std::string text = v.message + "\n" + v.log;
  for (const auto& s : host_secrets())
    if (text.find(s) != std::string::npos) return s;
  return "";
}

}  // namespace musacoder::testing
