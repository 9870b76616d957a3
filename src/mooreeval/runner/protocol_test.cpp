// The C++ side of the runner protocol (runner/protocol.h) against its schema
// (docs/runner-job.schema.json); the Python side has the same test (tests/runner/test_protocol.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/files.h"
#include "mooreeval/runner/protocol.h"

namespace musacoder::run {
namespace {

using Keys = std::set<std::string>;

Keys cpp_keys() {
  Keys k;
  for (JobKey key : all_job_keys()) k.insert(std::string(job_key_name(key)));
  return k;
}

nlohmann::json schema() {
  auto text = read_file(std::string(MUSACODER_SOURCE_DIR) + "/docs/runner-job.schema.json");
  EXPECT_TRUE(text.ok());
  return nlohmann::json::parse(text.ok() ? *text : "{}");
}

Keys schema_keys() {
  Keys k;
  const nlohmann::json s = schema();  // kept alive for the loop
  for (const auto& [name, _] : s["properties"].items()) k.insert(name);
  return k;
}

// Keys in `a` and not in `b`.
std::vector<std::string> missing(const Keys& a, const Keys& b) {
  std::vector<std::string> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

TEST(RunnerProtocol, SchemaVersion) { EXPECT_EQ(schema()["$id"], std::string(kJobSchema)); }

TEST(RunnerProtocol, CppKeysEqualSchemaKeys) {
  EXPECT_EQ(missing(cpp_keys(), schema_keys()), std::vector<std::string>{}) << "in protocol.h, not in the schema";
  EXPECT_EQ(missing(schema_keys(), cpp_keys()), std::vector<std::string>{}) << "in the schema, not in protocol.h";
}

TEST(RunnerProtocol, AKeyOnOneSideOnlyIsReported) {
  // What CppKeysEqualSchemaKeys reports when C++ gains a key that the schema (and Python) lacks.
  Keys more = cpp_keys();
  more.insert("new_key");
  EXPECT_EQ(missing(more, schema_keys()), std::vector<std::string>{"new_key"});
  Keys fewer = cpp_keys();
  fewer.erase("threads");
  EXPECT_EQ(missing(schema_keys(), fewer), std::vector<std::string>{"threads"});
}

TEST(RunnerProtocol, NamesAreDistinctAndNonEmpty) {
  EXPECT_EQ(cpp_keys().size(), all_job_keys().size());
  for (JobKey k : all_job_keys()) EXPECT_FALSE(job_key_name(k).empty());
  EXPECT_EQ(gate_name(Gate::kOutputsReady), "outputs_ready");
  EXPECT_EQ(command_name(Command::kRemeasure), "remeasure");
}

TEST(RunnerProtocol, FaultOfPhase) {
  EXPECT_EQ(fault_of_phase("candidate_loading"), Fault::kCandidate);
  EXPECT_EQ(fault_of_phase("candidate_running"), Fault::kCandidate);
  EXPECT_EQ(fault_of_phase("importing_torch"), Fault::kInfrastructure);
  EXPECT_EQ(fault_of_phase(""), Fault::kInfrastructure);
}

TEST(RunnerProtocol, FileNames) {
  EXPECT_EQ(job_file("/j", "candidate"), "/j/candidate.job.json");
  EXPECT_EQ(result_file("/j", "inspect"), "/j/inspect.result.json");
  EXPECT_EQ(phase_file("/j", "reference"), "/j/reference.phase");
  EXPECT_EQ(outputs_file("/j", Side::kReference), "/j/reference.bin");
  EXPECT_EQ(checks_file("/j", Side::kCandidate), "/j/candidate_checks.bin");
  EXPECT_EQ(timing_file("/j", Side::kCandidate), "/j/candidate_timing.json");
  EXPECT_EQ(recheck_file("/j", Side::kReference), "/j/reference_recheck.json");
}

}  // namespace
}  // namespace musacoder::run
