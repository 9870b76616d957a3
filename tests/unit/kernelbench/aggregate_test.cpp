// The harness's arithmetic and files without a model or a verifier: aggregate() over hand-made records
// (values computed by hand in the comments), samples.jsonl resume rules, the reports' content.
#include "kernelbench/aggregate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>

#include "core/files.h"
#include "kernelbench/progress.h"
#include "kernelbench/report.h"
#include "kernelbench/scorer.h"
#include "support/kernelbench_records.h"

namespace musacoder::kernelbench {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

TurnRecord rec(const std::string& task, int level, int sample, int turn, const std::string& cls,
               std::optional<double> speedup, bool done, const std::string& infra = "") {
  TurnRecord r = scripted_turn(task, level, sample, turn, cls, speedup, done, infra);
  r.response = "```python\n<script>alert(1)</script>\n```";
  return r;
}

Suite two_level_suite() {
  Suite s;
  s.id = "test";
  s.content_hash = "abc";
  s.tasks = {{"level1/a", 1, 1, "a.py", "src", "", ""}, {"level2/b", 2, 1, "b.py", "src", "", ""},
             {"level2/c", 2, 2, "c.py", "", "", "no `class Model`"}};
  return s;
}

Chains two_turn_chains() {
  Chains c;
  c[{"level1/a", 0}] = {rec("level1/a", 1, 0, 1, "ok", 2.0, true)};
  c[{"level1/a", 1}] = {rec("level1/a", 1, 1, 1, "wrong_answer", {}, false), rec("level1/a", 1, 1, 2, "ok", 0.5, true)};
  c[{"level2/b", 0}] = {rec("level2/b", 2, 0, 1, "compile_error", {}, false),
                        rec("level2/b", 2, 0, 2, "wrong_answer", {}, true)};
  c[{"level2/b", 1}] = {rec("level2/b", 2, 1, 1, "infra_error", {}, true, "generation: HTTP 500")};
  return c;
}

double mean(const json& g, const char* m) { return g[m]["mean"].get<double>(); }

TEST(Aggregate, PerTurnViewsHandComputed) {
  json s = aggregate(two_level_suite(), two_turn_chains(), {2, 2});
  const json& t1 = s["views"]["turn1"]["overall"];
  // turn 1: a = {ok 2.0, wrong} n=2 c=1; b = {compile_error, infra} n=1 c=0 (infra left out).
  EXPECT_EQ(t1["tasks"], 2);
  EXPECT_EQ(t1["samples"], 3);
  EXPECT_EQ(t1["infra"], 1);
  EXPECT_DOUBLE_EQ(mean(t1, "pass_at_1"), 0.25);  // (1/2 + 0) / 2
  EXPECT_DOUBLE_EQ(mean(t1, "pass_at_k"), 1.0);   // only a has n >= k = 2: 1 - C(1,2)/C(2,2) = 1
  EXPECT_EQ(t1["tasks_short_of_k"], 1);
  EXPECT_DOUBLE_EQ(mean(t1, "avg_at_k"), 0.25);
  EXPECT_DOUBLE_EQ(t1["fast_p"]["1"]["mean"].get<double>(), 0.25);  // a: 1/2 (2.0 > 1), b: 0
  EXPECT_DOUBLE_EQ(t1["fast_p"]["2"]["mean"].get<double>(), 0.0);   // 2.0 is not > 2
  // 95% interval over tasks of {0.5, 0}: sd = 0.35355, half = 1.96 * 0.35355 / sqrt(2) = 0.49.
  EXPECT_NEAR(t1["pass_at_1"]["high"].get<double>(), 0.74, 1e-9);
  EXPECT_DOUBLE_EQ(t1["pass_at_1"]["low"].get<double>(), 0.0);
  EXPECT_EQ(t1["verdicts"]["compile_error"], 1);
  EXPECT_EQ(t1["verdicts"]["infra_error"], 1);
  EXPECT_DOUBLE_EQ(t1["geomean_speedup"].get<double>(), 2.0);
  // turn 2: a = {ok 2.0 (carried), ok 0.5} c=2; b = {wrong_answer, infra}.
  const json& t2 = s["views"]["turn2"]["overall"];
  EXPECT_DOUBLE_EQ(mean(t2, "pass_at_1"), 0.5);
  EXPECT_DOUBLE_EQ(t2["fast_p"]["1"]["mean"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(t2["fast_p"]["0"]["mean"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(t2["geomean_speedup"].get<double>(), 1.0);  // sqrt(2 * 0.5)
  EXPECT_EQ(t2["verdicts"]["wrong_answer"], 1);
  EXPECT_DOUBLE_EQ(mean(s["views"]["best"]["level1"], "pass_at_1"), 1.0);
  EXPECT_DOUBLE_EQ(mean(s["views"]["best"]["level2"], "pass_at_1"), 0.0);
  EXPECT_EQ(s["infra"]["generation"], 1);
  ASSERT_EQ(s["suite"]["unloadable"].size(), 1u);
  EXPECT_EQ(s["suite"]["unloadable"][0]["id"], "level2/c");
  EXPECT_EQ(s["tasks"].size(), 2u);  // the unloadable task has no row
}

TEST(Aggregate, BestOfTurnsKeepsTheFastestCorrectTurnAndCountsMissing) {
  Chains c;
  c[{"level1/a", 0}] = {rec("level1/a", 1, 0, 1, "ok", 1.2, false), rec("level1/a", 1, 0, 2, "ok", 3.0, true)};
  c[{"level1/a", 1}] = {rec("level1/a", 1, 1, 1, "wrong_answer", {}, false)};  // unfinished: missing
  json s = aggregate(two_level_suite(), c, {2, 2});
  const json& best = s["views"]["best"]["level1"];
  EXPECT_EQ(best["samples"], 1);
  EXPECT_EQ(best["missing"], 1);
  EXPECT_DOUBLE_EQ(best["geomean_speedup"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(s["views"]["turn1"]["level1"]["geomean_speedup"].get<double>(), 1.2);
  EXPECT_EQ(s["views"]["best"]["level2"]["missing"], 2);
}

struct TempFile {
  fs::path path = fs::temp_directory_path() / ("kb_records_" + std::to_string(::getpid()) + ".jsonl");
  ~TempFile() { fs::remove(path); }
};

// The time block over every turn record, hand-computed: generation 1, 2, 4, 8, 16, 32 s (sum 63, median
// (4 + 8) / 2 = 6, max 32) and verification 0.5, 0.25, 3, 1, 0, 2 s (sum 6.75, median (0.5 + 1) / 2 = 0.75,
// max 3); without chain (level1/a, 1) (2 and 4 s) the generation median is (8 + 16) / 2 = 12. summary.md
// shows the block with the run's wall.
TEST(Aggregate, TimeBlockSumsMediansAndMaxima) {
  Chains c = two_turn_chains();  // six turn records, in key order
  const double gen[] = {1, 2, 4, 8, 16, 32}, ver[] = {0.5, 0.25, 3, 1, 0, 2};
  int i = 0;
  for (auto& [key, turns] : c)
    for (auto& r : turns) {
      ASSERT_LT(i, 6);
      r.generate_seconds = gen[i], r.verify_seconds = ver[i], ++i;
    }
  ASSERT_EQ(i, 6);
  json s = aggregate(two_level_suite(), c, {2, 2});
  const json& t = s["time"];
  EXPECT_EQ(t["turns"], 6);
  EXPECT_DOUBLE_EQ(t["generate_seconds"]["sum"].get<double>(), 63.0);
  EXPECT_DOUBLE_EQ(t["generate_seconds"]["median"].get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(t["generate_seconds"]["max"].get<double>(), 32.0);
  EXPECT_DOUBLE_EQ(t["verify_seconds"]["sum"].get<double>(), 6.75);
  EXPECT_DOUBLE_EQ(t["verify_seconds"]["median"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(t["verify_seconds"]["max"].get<double>(), 3.0);
  Chains fewer = c;
  fewer.erase(ChainKey{"level1/a", 1});
  EXPECT_DOUBLE_EQ(
      aggregate(two_level_suite(), fewer, {2, 2})["time"]["generate_seconds"]["median"].get<double>(), 12.0);
  s["run"] = {{"model", "m"}, {"scorer", "x"}, {"wall_seconds_last_session", 12.5}};
  const std::string md = summary_markdown(s);
  EXPECT_NE(md.find("- wall (this session of the run): 12.50 s"), std::string::npos) << md;
  EXPECT_NE(md.find("generation median 6.00 s, max 32.00 s; verification median 0.75 s, max 3.00 s"),
            std::string::npos)
      << md;
}

TEST(SampleLog, CutsATornLastLineAndLaterLinesReplaceTurns) {
  TempFile f;
  const std::string a = to_json(rec("level1/a", 1, 0, 1, "infra_error", {}, true, "verifier: down")).dump();
  const std::string b = to_json(rec("level1/a", 1, 1, 1, "ok", 1.5, true)).dump();
  ASSERT_TRUE(write_file_atomic(f.path, a + "\n" + b + "\n" + b.substr(0, 40)).ok());
  {
    auto log = SampleLog::open(f.path);
    ASSERT_TRUE(log.ok()) << log.status().message();
    EXPECT_EQ((*log)->lines_read(), 2u);
    EXPECT_EQ(fs::file_size(f.path), a.size() + b.size() + 2);  // the torn line is gone
    ASSERT_TRUE((*log)->append(rec("level1/a", 1, 0, 1, "ok", 2.0, true)).ok());  // retry of the infra turn
  }
  auto chains = read_chains(f.path);
  ASSERT_TRUE(chains.ok());
  ASSERT_EQ(chains->at({"level1/a", 0}).size(), 1u);
  EXPECT_EQ(chains->at({"level1/a", 0})[0].verdict["verdict"], "ok");
  EXPECT_TRUE(chains->at({"level1/a", 0})[0].infra.empty());
}

TEST(SampleLog, RejectsACorruptLineInTheMiddle) {
  TempFile f;
  const std::string b = to_json(rec("level1/a", 1, 1, 1, "ok", 1.5, true)).dump();
  ASSERT_TRUE(write_file_atomic(f.path, "{not json\n" + b + "\n").ok());
  EXPECT_EQ(SampleLog::open(f.path).status().code(), StatusCode::kInvalidArgument);
}

TEST(Reports, MarkdownHtmlAndCompare) {
  json s = aggregate(two_level_suite(), two_turn_chains(), {2, 2});
  s["run"] = {{"model", "fake"}, {"scorer", "none"}, {"protocol", {{"samples", 2}}}};
  const std::string md = summary_markdown(s);
  EXPECT_NE(md.find("| level1 | 1 | 100.0% [100.0, 100.0] |"), std::string::npos) << md;
  EXPECT_NE(md.find("`level2/c`: no `class Model`"), std::string::npos);
  EXPECT_NE(md.find("- generation: 1"), std::string::npos);
  const std::string html = report_html(s, two_turn_chains());
  EXPECT_EQ(html.find("<script>"), std::string::npos);  // responses are escaped
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org"));  // nothing fetched but the SVG namespace
  json other = s;
  other["suite"]["content_hash"] = "def";
  EXPECT_NE(compare_markdown(s, other, "A", "B").find("different suites"), std::string::npos);
  EXPECT_EQ(compare_markdown(s, s, "A", "B").find("different suites"), std::string::npos);
}

TEST(Progress, LineShowsCountsMetricsAndEta) {
  json s = aggregate(two_level_suite(), two_turn_chains(), {2, 2});
  ProgressCounts c{3, 4, 2, 4, 1, 2, 60};
  const std::string line = progress_line(c, s["views"]["best"]["overall"], 2);
  EXPECT_NE(line.find("3/4 samples (75%)"), std::string::npos) << line;
  EXPECT_NE(line.find("pass@1 0.500"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 1m00s"), std::string::npos) << line;  // 60 s for 2, 2 to go
}

}  // namespace
}  // namespace musacoder::kernelbench
