// CUDA <-> MUSA source porting: torchada's rules (src/musa/rules/torchada_rules.json, generated from the
// installed torchada by scripts/musa/gen_torchada_rules.py), MusaCoder's additions
// (rules/additions.json), the scan for CUDA (or MUSA) names no rule mapped, warnings for what text rules
// cannot port (warp width, inline PTX, arch numbers), and the reverse shim that lets MUSA-ported code
// compile with nvcc and run on CUDA.
//
// Direction kToMusa replays torchada's `_port_cuda_source` exactly (its rules, longest key first, each a
// plain replace-all, after its STABLE_TORCH_LIBRARY_IMPL re-keying and with its nvjpeg include exception),
// then the additions. kToCuda applies the inverses in the opposite order. A rule whose MUSA side is the
// image of several CUDA names (nv_half, __nv_half -> __half) or is itself valid CUDA is one-way: its
// inverse is left out, and a forward port that used it says so. `PortResult::round_trips` reports
// whether kToCuda gives the input back exactly.
//
// Thread-safety: every function is pure; rule_table() builds its tables once (thread-safe static init).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace musacoder::musa {

enum class Direction { kToMusa, kToCuda };
const char* direction_name(Direction d);
Result<Direction> parse_direction(const std::string& name);  // "musa" | "cuda"

// What a file holds: Python (a KernelBench task or submission: Python rules apply too) or C/C++/CUDA.
enum class SourceKind { kPython, kCxx };
// .py -> kPython; .cu .cuh .mu .muh .cpp .cc .cxx .c .h .hpp -> kCxx; anything else: error.
Result<SourceKind> source_kind_of(const std::filesystem::path& file);
// The ported file name: .cu <-> .mu, .cuh <-> .muh; other names unchanged.
std::filesystem::path ported_file_name(const std::filesystem::path& file, Direction d);

struct Rule {
  std::string name;     // torchada rules: their CUDA text; additions: their name
  std::string origin;   // "torchada" or "musacoder"
  bool python_only = false;
  bool regex = false;   // additions are regexes; torchada's are plain text
  std::string cuda, musa;            // plain: the two texts; regex: the pattern of each side
  std::string musa_text, cuda_text;  // regex: the replacement in each direction
  bool reversible = true;            // its inverse is part of kToCuda
};

struct RuleTable {
  std::string torchada_version;  // the version the JSON was generated from
  std::vector<Rule> rules;       // in kToMusa application order (torchada's first)
};
// The compiled-in tables. Never fails: the JSON is checked by the build's tests.
const RuleTable& rule_table();

struct Finding {
  int line = 0;        // 1-based line in the ported text
  std::string symbol;  // the matched text
  std::string message;
};

struct PortResult {
  std::string text;
  std::map<std::string, int> applied;  // rule name -> replacements made
  std::vector<Finding> unmapped;       // names of the source platform left in `text` (see scan_unmapped)
  std::vector<Finding> warnings;       // semantic differences text rules cannot fix
  bool round_trips = false;            // porting `text` back gives the input exactly
};

PortResult port_source(std::string_view text, SourceKind kind, Direction d);

// torchada's rules alone, exactly as torchada.utils.cpp_extension._port_cuda_source applies them to a
// load_inline CUDA source (for checking parity with the installed torchada).
std::string apply_torchada_rules(std::string_view cuda_text);

// Names of the platform `d` ports away from that are still in `text` (for kToMusa: CUDA runtime/driver
// API names, cuBLAS/cuDNN/..., c10::cuda, CUDA headers, and in Python torch.cuda, .cuda(), "cuda" device
// strings, torch.utils.cpp_extension, cuda_sources=). A non-empty result means the port is incomplete.
std::vector<Finding> scan_unmapped(std::string_view text, SourceKind kind, Direction d);

// Warnings on MUSA-ported text: warp-width assumptions, inline PTX, arch numbers, tensor-core intrinsics,
// TF32 switches.
std::vector<Finding> semantic_warnings(std::string_view musa_text, SourceKind kind);

// --- The reverse shim: MUSA-ported code compiled by nvcc, run by MooreEval's cuda backend ---

// A C++ header that maps every MUSA identifier of the reversible rules back to its CUDA name (macros for
// identifiers, namespace aliases for c10::musa / at::musa / torch::musa). Include it after the torch and
// CUDA headers (load_inline's generated prologue is).
std::string shim_header();

// A MUSA-ported Python submission made to run on a CUDA machine: its Python side is mapped back by the
// inverse rules, while the C++/MUSA source strings keep their MUSA names and are compiled through
// shim_header(), which a small load_inline wrapper inlined into the file prepends (include directives, not
// being names a macro can map, are mapped back by text in the wrapper). The result is one self-contained
// submission for `mooreeval --backend cuda`. A submission that builds nothing (no load_inline) comes back
// with only its Python side mapped; one that uses load_inline without importing it from
// torch_musa.utils.musa_extension is an error (its sources could not be routed through the header).
Result<std::string> shim_submission(std::string_view musa_python);

// --- Trees and suites ---

struct TreePortOptions {
  Direction direction = Direction::kToMusa;
  // kToCuda only: .py files become shimmed submissions (shim_submission) instead of text-reversed ones.
  bool shim = false;
};

// One ported file as the manifests record it: {"file", "ported_file", "changed", "applied": {rule: n},
// "warnings": [{line, symbol, message}], "unmapped": [...], "round_trips"}.
nlohmann::json file_record(const std::string& file, const std::string& ported_file, std::string_view input,
                           const PortResult& r);

// Ports every .py and C/C++/CUDA/MUSA source under `in` (a file or a directory) to `out` (same relative
// paths; .cu -> .mu and back), never touching `in`; other files are not copied. Returns the manifest
// {"direction", "torchada_version", "files": [file_record...], "unmapped": total} and writes it to
// <out>/port_manifest.json when `in` is a directory. `out` must not be inside `in`.
Result<nlohmann::json> port_tree(const std::filesystem::path& in, const std::filesystem::path& out,
                                 const TreePortOptions& options);

// The MUSA-ported KernelBench: every levelN/<id>_<name>.py of a KernelBench checkout (`kernelbench_dir`
// is the repository or its KernelBench/ folder) ported to `out`/levelN/ under the same file name, and
// `out`/manifest.json with one record per task ({"level", "id", "name"} + file_record). Errors name
// what is missing (no level folders, an unreadable task).
Result<nlohmann::json> port_kernelbench_suite(const std::filesystem::path& kernelbench_dir,
                                              const std::filesystem::path& out);

}  // namespace musacoder::musa
