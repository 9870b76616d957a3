// Reports of a run, rendered from its summary (aggregate() + the run block) and its records.
//   summary_markdown  the paper's table (level x {Pass@k, Avg@k, Faster>1.1x}) for the best-of-turns view,
//                     then per-turn rows, fast_p, geomean speedup, verdict classes, infra failures,
//                     unloadable tasks and the protocol
//   report_html       one offline, self-contained page (no scripts or fonts fetched; inline SVG): pass rate by
//                     level, speedup distribution, verdict classes, a per-task grid whose cells open the
//                     sample's turns (code and verdict) in <details>
//   compare_markdown  two runs side by side (each level and view: Pass@1, Pass@k, Avg@k, fast_1, fast_1.1,
//                     geomean), with a warning when their suites or protocols differ
// Pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "kernelbench/records.h"

namespace musacoder::kernelbench {

std::string summary_markdown(const nlohmann::json& summary);
std::string report_html(const nlohmann::json& summary, const Chains& chains);
std::string compare_markdown(const nlohmann::json& a, const nlohmann::json& b, const std::string& name_a,
                             const std::string& name_b);

// HTML-escapes text (&, <, >, ", ').
std::string html_escape(std::string_view text);

}  // namespace musacoder::kernelbench
