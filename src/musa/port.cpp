// Applying the rule tables to one text (see musa.h for the order and the round-trip contract).
#include <regex>

#include "rules_internal.h"

namespace musacoder::musa {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kTorchMusaImport = "import torch_musa  # musacoder port: registers the musa device\n";

// torchada's _rekey_stable_library_impl: a stable-ABI CUDA implementation registers on PrivateUse1.
const std::regex& stable_impl(Direction d) {
  static const std::regex to_musa(R"((\bSTABLE_TORCH_LIBRARY_IMPL\s*\(\s*[A-Za-z_]\w*\s*,\s*)CUDA(\s*,))");
  static const std::regex to_cuda(R"((\bSTABLE_TORCH_LIBRARY_IMPL\s*\(\s*[A-Za-z_]\w*\s*,\s*)PrivateUse1(\s*,))");
  return d == Direction::kToMusa ? to_musa : to_cuda;
}

int replace_all(std::string& s, const std::string& from, const std::string& to) {
  int n = 0;
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
    ++n;
  }
  return n;
}

int regex_replace_counted(std::string& s, const std::regex& re, const std::string& replacement) {
  const int n = static_cast<int>(std::distance(std::sregex_iterator(s.begin(), s.end(), re), std::sregex_iterator()));
  if (n > 0) s = std::regex_replace(s, re, replacement);
  return n;
}

// torchada's nvjpeg exception: on an #include line the header path keeps its name (only "nvjpeg.h"
// itself becomes "<value>.h"); elsewhere the rule is a plain replace.
int replace_nvjpeg(std::string& s, const std::string& from, const std::string& to) {
  static const std::regex include(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  std::string out;
  int n = 0;
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t end = s.find('\n', start);
    end = end == std::string::npos ? s.size() : end + 1;
    std::string line = s.substr(start, end - start);
    std::smatch m;
    if (std::regex_search(line, m, include)) {
      std::string head = line.substr(0, static_cast<std::size_t>(m.position(1)));
      std::string header = m.str(1);
      std::string tail = line.substr(static_cast<std::size_t>(m.position(1) + m.length(1)));
      if (from == "nvjpeg" && header == "nvjpeg.h") header = to + ".h", ++n;
      n += replace_all(head, from, to) + replace_all(tail, from, to);
      line = head + header + tail;
    } else {
      n += replace_all(line, from, to);
    }
    out += line;
    start = end;
  }
  s = std::move(out);
  return n;
}

void add_torch_musa_import(std::string& s, PortResult& r) {
  static const std::regex import_torch(R"((^|\n)import torch[ \t]*(#[^\n]*)?\n)");
  std::smatch m;
  if (!std::regex_search(s, m, import_torch)) {
    if (s.find("torch") != std::string::npos)
      r.warnings.push_back({1, "import torch", "no `import torch` line: add `import torch_musa` by hand"});
    return;
  }
  s.insert(static_cast<std::size_t>(m.position(0) + m.length(0)), kTorchMusaImport);
  ++r.applied["python_import_torch_musa"];
}

// The rules alone (no scan, no round trip).
std::string apply_rules(std::string_view text, SourceKind kind, Direction d, PortResult& r) {
  std::string s(text);
  if (d == Direction::kToCuda && kind == SourceKind::kPython)
    if (int n = replace_all(s, std::string(kTorchMusaImport), "")) r.applied["python_import_torch_musa"] += n;
  if (int n = regex_replace_counted(s, stable_impl(d), d == Direction::kToMusa ? "$1PrivateUse1$2" : "$1CUDA$2"))
    r.applied["STABLE_TORCH_LIBRARY_IMPL"] += n;
  for (const detail::CompiledRule& c : detail::compiled_rules(d)) {
    if (c.rule->python_only && kind != SourceKind::kPython) continue;
    int n = 0;
    if (c.regex)
      n = regex_replace_counted(s, c.pattern, c.replacement);
    else if (c.from == "nvjpeg" || c.from == "NVJPEG")
      n = replace_nvjpeg(s, c.from, c.to);
    else
      n = replace_all(s, c.from, c.to);
    if (n == 0) continue;
    r.applied[c.rule->name] += n;
    if (d == Direction::kToMusa && !c.rule->reversible)
      r.warnings.push_back({0, c.rule->name,
                            "one-way rule '" + c.rule->cuda + "' -> '" + c.rule->musa +
                                "' (its MUSA text is also another CUDA name's or valid CUDA): not mapped back"});
  }
  if (d == Direction::kToMusa && kind == SourceKind::kPython) add_torch_musa_import(s, r);
  return s;
}

}  // namespace

Result<SourceKind> source_kind_of(const fs::path& file) {
  const std::string ext = file.extension().string();
  if (ext == ".py") return SourceKind::kPython;
  for (const char* e : {".cu", ".cuh", ".mu", ".muh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp"})
    if (ext == e) return SourceKind::kCxx;
  return invalid_argument("cannot port " + file.string() + ": not a .py or C/C++/CUDA/MUSA source");
}

fs::path ported_file_name(const fs::path& file, Direction d) {
  const std::string ext = file.extension().string();
  fs::path out = file;
  if (d == Direction::kToMusa && (ext == ".cu" || ext == ".cuh")) out.replace_extension(ext == ".cu" ? ".mu" : ".muh");
  if (d == Direction::kToCuda && (ext == ".mu" || ext == ".muh")) out.replace_extension(ext == ".mu" ? ".cu" : ".cuh");
  return out;
}

std::string apply_torchada_rules(std::string_view cuda_text) {
  std::string s(cuda_text);
  regex_replace_counted(s, stable_impl(Direction::kToMusa), "$1PrivateUse1$2");
  for (const detail::CompiledRule& c : detail::compiled_rules(Direction::kToMusa)) {
    if (c.rule->origin != "torchada") continue;
    if (c.from == "nvjpeg" || c.from == "NVJPEG")
      replace_nvjpeg(s, c.from, c.to);
    else
      replace_all(s, c.from, c.to);
  }
  return s;
}

PortResult port_source(std::string_view text, SourceKind kind, Direction d) {
  PortResult r;
  r.text = apply_rules(text, kind, d, r);
  PortResult back;
  const Direction other = d == Direction::kToMusa ? Direction::kToCuda : Direction::kToMusa;
  r.round_trips = apply_rules(r.text, kind, other, back) == text;
  r.unmapped = scan_unmapped(r.text, kind, d);
  if (d == Direction::kToMusa) {
    auto w = semantic_warnings(r.text, kind);
    r.warnings.insert(r.warnings.end(), w.begin(), w.end());
  }
  return r;
}

}  // namespace musacoder::musa
