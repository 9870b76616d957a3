#include "mooreeval/reward/reward.h"

#include <gtest/gtest.h>

namespace musacoder::reward {
namespace {

TEST(Reward, LessonScheme) {
  RewardOptions o;
  auto r = compute_reward({true, true, 1.0, 0.5}, o);
  EXPECT_DOUBLE_EQ(r.compile_part, 0.2);
  EXPECT_DOUBLE_EQ(r.correctness_part, 0.4);
  EXPECT_DOUBLE_EQ(r.performance_part, 0.2);  // 0.4 * min(0.5/1, 1)
  EXPECT_DOUBLE_EQ(r.total, 0.8);
  EXPECT_DOUBLE_EQ(compute_reward({true, true, 1.0, 3.0}, o).total, 1.0);  // capped
  EXPECT_DOUBLE_EQ(compute_reward({true, true, 0.5, std::nullopt}, o).total, 0.4);
  EXPECT_DOUBLE_EQ(compute_reward({true, true, 0.5, 2.0}, o).total, 0.4);  // no perf below 100% pass
  EXPECT_DOUBLE_EQ(compute_reward({false, false, 0.0, std::nullopt}, o).total, 0.0);
  o.speedup_cap = 2.0;
  EXPECT_DOUBLE_EQ(compute_reward({true, true, 1.0, 1.0}, o).total, 0.8);
}

TEST(Reward, TieredScheme) {
  RewardOptions o{Scheme::kTiered, 1.0, 0.5, 2.0};
  EXPECT_DOUBLE_EQ(compute_reward({false, false, 0.0, std::nullopt}, o).total, -1.0);
  EXPECT_DOUBLE_EQ(compute_reward({true, false, 0.0, std::nullopt}, o).total, -1.0);
  EXPECT_DOUBLE_EQ(compute_reward({true, true, 0.5, std::nullopt}, o).total, -0.25);
  EXPECT_DOUBLE_EQ(compute_reward({true, true, 1.0, 0.8}, o).total, 1.0);
  EXPECT_DOUBLE_EQ(compute_reward({true, true, 1.0, 2.0}, o).total, 1.5);
  EXPECT_DOUBLE_EQ(compute_reward({true, true, 1.0, 10.0}, o).total, 2.0);  // nu_max
}

TEST(Reward, KevinScheme) {
  RewardOptions o{Scheme::kKevin};
  EXPECT_DOUBLE_EQ(compute_reward({true, true, 1.0, 1.5}, o).total, 1.8);
  EXPECT_DOUBLE_EQ(compute_reward({true, true, 0.9, 1.5}, o).total, 0.0);
}

TEST(Reward, AnIllegalCandidateEarnsWhatANonCompilingOneEarnsInEveryScheme) {
  for (Scheme s : {Scheme::kLesson, Scheme::kTiered, Scheme::kKevin}) {
    RewardOptions o{s};
    const RewardBreakdown hack = compute_reward({true, true, 1.0, 5.0, /*legal=*/false}, o);
    const RewardBreakdown nothing = compute_reward({false, false, 0.0, std::nullopt}, o);
    EXPECT_DOUBLE_EQ(hack.total, nothing.total) << scheme_name(s);
    EXPECT_DOUBLE_EQ(hack.compile_part, 0.0) << scheme_name(s);
    EXPECT_LT(hack.total, compute_reward({true, true, 1.0, 5.0}, o).total) << scheme_name(s);
  }
}

TEST(Reward, ParseSchemes) {
  EXPECT_EQ(*parse_scheme("tiered"), Scheme::kTiered);
  EXPECT_FALSE(parse_scheme("bogus").ok());
}

}  // namespace
}  // namespace musacoder::reward
