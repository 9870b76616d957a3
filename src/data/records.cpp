// Output records (sft.jsonl, rejected.jsonl, repair.jsonl) and the dataset card, composed from
// the journal in program order.
#include <algorithm>
#include <cstdio>

#include "data/synth_internal.h"
#include "data/task_source.h"
#include "prompts/prompts.h"

namespace musacoder::data {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

std::vector<prompts::Message> prompt_for(const SynthOptions& o, const SynthProgram& sp) {
  prompts::PromptOptions po;
  po.target = prompts::parse_target(o.backend).ok() ? *prompts::parse_target(o.backend) : prompts::Target::kCpu;
  return prompts::render_task({sp.source, describe(sp.program)}, po);
}

ojson verdict_metadata(const SynthOptions& o, const json& v, const std::string& version) {
  ojson m = {{"status", v.value("verdict", "")},
             {"verifier", version},
             {"backend", o.backend},
             {"trials", v.value("trials", 0)},
             {"passed", v.value("passed", 0)}};
  if (o.verifier.seed) m["verify_seed"] = *o.verifier.seed;
  if (o.stable_metadata) return m;
  m["speedup"] = v.value("speedup", json());
  if (v.contains("reference_time") && v["reference_time"].is_object())
    m["reference_ms"] = v["reference_time"].value("median_ms", json());
  if (v.contains("candidate_time") && v["candidate_time"].is_object())
    m["candidate_ms"] = v["candidate_time"].value("median_ms", json());
  m["max_abs_error"] = v.value("max_abs_error", json());
  m["build_path"] = v.value("build_path", "");
  m["seconds_total"] = v.contains("seconds") && v["seconds"].is_object() ? v["seconds"].value("total", json()) : json();
  return m;
}

ojson program_metadata(const SynthOptions& o, const SynthProgram& sp, const std::string& teacher) {
  char seed[24];
  std::snprintf(seed, sizeof seed, "%016llx", static_cast<unsigned long long>(sp.seed));
  return {{"id", sp.id},
          {"category", sp.program.category},
          {"dtype", dtype_name(sp.program.dtype)},
          {"ops", program_summary(sp.program)},
          {"op_count", op_count(sp.program)},
          {"program", canonical_form(sp.program)},
          {"program_seed", seed},
          {"synth_seed", o.seed},
          {"teacher", teacher},
          {"prompt_contract", prompts::kContractVersion}};
}

std::string line(const ojson& j) {
  return j.dump() + "\n";
}

// Short rejection reason: the verdict class and the message's first 100 bytes.
std::string reason(const json& v) {
  std::string m = v.value("message", "");
  if (std::size_t nl = m.find('\n'); nl != std::string::npos) m.resize(nl);
  if (m.size() > 100) m.resize(100);
  return v.value("verdict", "?") + ": " + m;
}

const char* speedup_bucket(double s) {
  if (s < 0.5) return "<0.5";
  if (s < 0.8) return "0.5-0.8";
  if (s < 1.0) return "0.8-1";
  if (s < 1.5) return "1-1.5";
  if (s < 2.0) return "1.5-2";
  if (s < 5.0) return "2-5";
  return ">=5";
}

struct Tally {
  std::map<std::string, std::pair<int, int>> by_category, by_dtype;  // (programs, kept)
  std::map<std::string, int> verdicts, reasons, histogram;
  std::map<std::string, std::vector<std::string>> failures;  // category -> ids
};

void card_markdown(Outputs& out) {
  const ojson& c = out.card;
  std::string md = "# Synthesized dataset card\n\n";
  md += "- backend: `" + c["backend"].get<std::string>() + "`, teacher: `" + c["teacher"].get<std::string>() +
        "`, verifier: `" + c["verifier"].get<std::string>() + "`, prompt contract: `" +
        c["prompt_contract"].get<std::string>() + "`, seed: " + std::to_string(c["seed"].get<uint64_t>()) + "\n";
  char buf[160];
  std::snprintf(buf, sizeof buf, "- programs: %d, kept (verified): %d, rejected: %d, pass rate: %.1f%%\n\n",
                c["programs"].get<int>(), c["kept"].get<int>(), c["rejected"].get<int>(), 100 * c["pass_rate"].get<double>());
  md += buf;
  for (const char* group : {"by_category", "by_dtype"}) {
    md += std::string("## ") + (group == std::string("by_category") ? "Category" : "Dtype") +
          "\n\n| | programs | kept | pass rate |\n|---|---:|---:|---:|\n";
    for (const auto& [k, v] : c[group].items()) {
      std::snprintf(buf, sizeof buf, "| %s | %d | %d | %.1f%% |\n", k.c_str(), v["programs"].get<int>(), v["kept"].get<int>(),
                    100 * v["pass_rate"].get<double>());
      md += buf;
    }
    md += "\n";
  }
  md += "## Verdicts (every answer)\n\n| verdict | answers |\n|---|---:|\n";
  for (const auto& [k, v] : c["verdicts"].items()) md += "| " + k + " | " + std::to_string(v.get<int>()) + " |\n";
  if (c.contains("speedup_histogram")) {
    md += "\n## Speedup of kept pairs\n\n| speedup | pairs |\n|---|---:|\n";
    for (const auto& [k, v] : c["speedup_histogram"].items()) md += "| " + k + " | " + std::to_string(v.get<int>()) + " |\n";
  }
  md += "\n## Rejection reasons\n\n";
  if (c["rejection_reasons"].empty()) md += "none\n";
  for (const auto& r : c["rejection_reasons"])
    md += "- " + std::to_string(r["count"].get<int>()) + " x `" + r["reason"].get<std::string>() + "`\n";
  md += "\n## Failures by category\n\n";
  if (c["failures"].empty()) md += "none\n";
  for (const auto& [k, v] : c["failures"].items()) {
    md += "- " + k + ":";
    for (const auto& id : v) md += " " + id.get<std::string>();
    md += "\n";
  }
  out.card_markdown = md;
}

void fill_card(const SynthOptions& o, const std::vector<SynthProgram>& programs, const Tally& t, const std::string& teacher,
               const std::string& version, Outputs& out) {
  auto groups = [](const std::map<std::string, std::pair<int, int>>& m) {
    ojson g = ojson::object();
    for (const auto& [k, v] : m)
      g[k] = {{"programs", v.first}, {"kept", v.second}, {"pass_rate", v.first ? double(v.second) / v.first : 0.0}};
    return g;
  };
  std::vector<std::pair<int, std::string>> reasons;
  for (const auto& [r, n] : t.reasons) reasons.push_back({-n, r});
  std::sort(reasons.begin(), reasons.end());
  ojson rr = ojson::array();
  for (const auto& [n, r] : reasons) rr.push_back({{"reason", r}, {"count", -n}});
  const int n = static_cast<int>(programs.size());
  out.card = {{"schema", "musacoder.synth_card/1"},
              {"seed", o.seed},
              {"backend", o.backend},
              {"teacher", teacher},
              {"verifier", version},
              {"prompt_contract", prompts::kContractVersion},
              {"samples_per_task", o.samples},
              {"programs", n},
              {"kept", out.kept},
              {"rejected", out.rejected_count},
              {"repairs", out.repairs},
              {"pass_rate", n ? double(out.kept) / n : 0.0},
              {"by_category", groups(t.by_category)},
              {"by_dtype", groups(t.by_dtype)},
              {"verdicts", t.verdicts},
              {"rejection_reasons", rr},
              {"failures", t.failures}};
  if (!o.stable_metadata) out.card["speedup_histogram"] = t.histogram;
  card_markdown(out);
}

}  // namespace

Outputs compose_outputs(const SynthOptions& o, const std::vector<SynthProgram>& programs,
                        const std::map<int, json>& journal, const std::string& version) {
  Outputs out;
  Tally t;
  std::string teacher = "?";
  for (const SynthProgram& sp : programs) {
    auto it = journal.find(sp.index);
    if (it == journal.end()) continue;
    const json& e = it->second;
    teacher = e.value("teacher", teacher);
    const json& answers = e["answers"];
    for (const auto& a : answers) ++t.verdicts[a["verdict"].value("verdict", "?")];
    const int best = best_answer(answers);
    auto& cat = t.by_category[sp.program.category];
    auto& dt = t.by_dtype[dtype_name(sp.program.dtype)];
    ++cat.first, ++dt.first;
    ojson meta = program_metadata(o, sp, e.value("teacher", ""));
    std::vector<prompts::Message> msgs = prompt_for(o, sp);
    if (best >= 0) {
      ++cat.second, ++dt.second, ++out.kept;
      const json& a = answers[static_cast<std::size_t>(best)];
      msgs.push_back({"assistant", a["response"].get<std::string>()});
      meta["verdict"] = verdict_metadata(o, a["verdict"], version);
      out.sft += line({{"messages", prompts::to_json(msgs)}, {"metadata", meta}});
      if (a["verdict"].contains("speedup") && a["verdict"]["speedup"].is_number())
        ++t.histogram[speedup_bucket(a["verdict"]["speedup"].get<double>())];
      continue;
    }
    ++out.rejected_count;
    t.failures[sp.program.category].push_back(sp.id);
    ojson rejected = meta;
    rejected["teacher_error"] = e.value("teacher_error", "");
    rejected["answers"] = ojson::array();
    for (const auto& a : answers) {
      ++t.reasons[reason(a["verdict"])];
      rejected["answers"].push_back({{"response", a["response"]}, {"verdict", verdict_metadata(o, a["verdict"], version)},
                                     {"message", a["verdict"].value("message", "")}});
    }
    if (answers.empty()) ++t.reasons["teacher: " + e.value("teacher_error", "no answer")];
    out.rejected += line(rejected);
    const json fix = e.value("fix", json());
    if (!o.keep_wrong || answers.empty() || !fix.is_object() || fix["verdict"].value("verdict", "") != "ok") continue;
    const json& failed = answers[0];
    msgs.push_back({"assistant", failed["response"].get<std::string>()});
    prompts::PromptOptions po;
    msgs.push_back(prompts::render_feedback(prompts::feedback_facts(failed["verdict"]), po));
    msgs.push_back({"assistant", fix["response"].get<std::string>()});
    meta["failed_verdict"] = verdict_metadata(o, failed["verdict"], version);
    meta["verdict"] = verdict_metadata(o, fix["verdict"], version);
    meta["fix_teacher"] = fix.value("teacher", "");
    out.repair += line({{"messages", prompts::to_json(msgs)}, {"metadata", meta}});
    ++out.repairs;
  }
  fill_card(o, programs, t, teacher, version, out);
  return out;
}

nlohmann::ordered_json run_manifest(const SynthOptions& o, const std::string& teacher) {
  ojson cats = o.grammar.categories, dtypes = ojson::array();
  for (DType d : o.grammar.dtypes) dtypes.push_back(dtype_name(d));
  return {{"schema", "musacoder.synth_run/1"},
          {"seed", o.seed},
          {"count", o.count},
          {"categories", cats},
          {"dtypes", dtypes},
          {"max_elements", o.grammar.max_elements},
          {"exclude_suite", o.exclude_suite.string()},
          {"ngram", o.decontamination.ngram},
          {"ngram_threshold", o.decontamination.ngram_threshold},
          {"backend", o.backend},
          {"teacher", teacher},
          {"samples", o.samples},
          {"keep_wrong", o.keep_wrong},
          {"prompt_contract", prompts::kContractVersion}};
}

}  // namespace musacoder::data
