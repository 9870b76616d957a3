// Verdict stages: the enum's JSON words are exactly the schema's (docs/verdict.schema.json), so a stage added
// on one side only fails here.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/files.h"
#include "mooreeval/mooreeval.h"

namespace musacoder::mooreeval {
namespace {

TEST(VerdictStage, NamesAreTheSchemasEnum) {
  std::set<std::string> ours;
  for (int s = static_cast<int>(Stage::kNone); s <= static_cast<int>(Stage::kBenchmark); ++s)
    ours.insert(stage_name(static_cast<Stage>(s)));
  EXPECT_EQ(ours.size(), static_cast<std::size_t>(Stage::kBenchmark) + 1) << "two stages share a name";
  auto text = read_file(std::string(MUSACODER_SOURCE_DIR) + "/docs/verdict.schema.json");
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  const auto words = nlohmann::json::parse(*text)["properties"]["stage"]["enum"].get<std::set<std::string>>();
  EXPECT_EQ(ours, words);
  Verdict v;
  v.stage = Stage::kLegality;
  EXPECT_EQ(to_json(v)["stage"], "legality");
}

}  // namespace
}  // namespace musacoder::mooreeval
