// Drawing the program set: grammar draws -> dedup by canonical form -> decontamination.
#include <cstdio>
#include <optional>
#include <unordered_set>

#include "core/text.h"
#include "data/grammar.h"
#include "data/synth_internal.h"
#include "data/task_source.h"

namespace musacoder::data {

Result<ProgramSet> draw_programs(const SynthOptions& options) {
  MC_RETURN_IF_ERROR(validate(options.grammar));
  if (options.count < 1) return invalid_argument("--count must be at least 1");
  std::optional<Decontaminator> decon;
  if (!options.exclude_suite.empty()) {
    auto d = Decontaminator::load(options.exclude_suite, options.decontamination);
    if (!d.ok()) return d.status();
    decon.emplace(std::move(d).value());
  }
  ProgramSet set;
  std::unordered_set<std::string> seen;
  const uint64_t max_draws = static_cast<uint64_t>(options.count) * 50;
  for (uint64_t draw = 0; static_cast<int>(set.programs.size()) < options.count; ++draw) {
    if (draw >= max_draws)
      return invalid_argument("only " + std::to_string(set.programs.size()) + " distinct programs in " +
                              std::to_string(max_draws) + " draws: the grammar options are too narrow for --count " +
                              std::to_string(options.count));
    SynthProgram sp;
    sp.seed = mix_seed(options.seed, draw);
    sp.program = sample_program(sp.seed, options.grammar);
    if (!seen.insert(sha256_hex(canonical_form(sp.program))).second) {
      ++set.duplicates;
      continue;
    }
    sp.index = static_cast<int>(set.programs.size());
    char name[32];
    std::snprintf(name, sizeof name, "p%05d", sp.index);
    sp.id = sp.program.category + "/" + name;
    sp.source = render_task_source(sp.program);
    if (decon) {
      if (auto overlap = decon->check(sp.source)) {
        set.overlaps.push_back({{"draw", draw}, {"program", canonical_form(sp.program)}, {"kind", overlap->kind},
                                {"suite_file", overlap->suite_file}, {"score", overlap->score}});
        continue;
      }
    }
    sp.sidecar = render_sidecar(sp.program);
    set.programs.push_back(std::move(sp));
  }
  return set;
}

}  // namespace musacoder::data
