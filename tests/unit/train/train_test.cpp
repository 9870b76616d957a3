// Training core without libtorch: learning-rate schedules (formulas of schedule.h), TensorBoard records
// (CRC-32C, framing), the SFT data plan (deterministic shuffle, best-fit packing, step grouping), and which
// tokens each --loss-on mode trains.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <numbers>
#include <set>

#include "core/files.h"
#include "tokenizer/bpe_trainer.h"
#include "train/common/schedule.h"
#include "train/common/tensorboard.h"
#include "train/sft/dataset.h"
#include "train/sft/packing.h"

namespace musacoder::train {
namespace {

TEST(Schedule, WarmupThenCosineLinearConstant) {
  ScheduleOptions o{LrSchedule::kCosine, 1.0, 4, 14, 0.1};
  EXPECT_DOUBLE_EQ(learning_rate(o, 0), 0.25);  // (0 + 1) / 4
  EXPECT_DOUBLE_EQ(learning_rate(o, 3), 1.0);   // end of warm-up
  EXPECT_DOUBLE_EQ(learning_rate(o, 4), 1.0);   // p = 0
  // p = (9 - 4) / 10 = 0.5: 0.1 + 0.9 · ½ · (1 + cos(π/2)) = 0.55
  EXPECT_NEAR(learning_rate(o, 9), 0.55, 1e-12);
  EXPECT_NEAR(learning_rate(o, 14), 0.1, 1e-12);  // p = 1: the floor
  o.kind = LrSchedule::kLinear;
  EXPECT_NEAR(learning_rate(o, 9), 0.5, 1e-12);   // 1 − 0.5
  EXPECT_NEAR(learning_rate(o, 20), 0.0, 1e-12);  // clamped past the end
  o.kind = LrSchedule::kConstant;
  EXPECT_DOUBLE_EQ(learning_rate(o, 9), 1.0);
  EXPECT_EQ(warmup_steps_for_ratio(0.03, 100), 3);
  EXPECT_EQ(warmup_steps_for_ratio(0.031, 100), 4);  // rounded up
  EXPECT_EQ(warmup_steps_for_ratio(0.0, 100), 0);
  EXPECT_FALSE(parse_lr_schedule("step").ok());
}

TEST(TensorBoard, Crc32cAndRecordFraming) {
  EXPECT_EQ(crc32c("123456789"), 0xe3069283u);  // the CRC-32C check value
  EXPECT_EQ(crc32c(""), 0u);
  auto dir = TempDir::create("mc-tb-test");
  ASSERT_TRUE(dir.ok());
  std::filesystem::path file;
  {
    auto w = TensorBoardWriter::open(dir->path());
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    ASSERT_TRUE(w->add_scalars(7, {{"train/loss", 1.5}, {"train/lr", 0.25}}).ok());
    file = w->path();
  }
  auto bytes = read_file(file);
  ASSERT_TRUE(bytes.ok());
  // Two records, each: u64 length, masked crc of the length, data, masked crc of the data.
  std::size_t pos = 0;
  int records = 0;
  auto masked = [](std::string_view s) {
    uint32_t c = crc32c(s);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
  };
  while (pos < bytes->size()) {
    uint64_t len;
    uint32_t crc_len, crc_data;
    std::memcpy(&len, bytes->data() + pos, 8);
    std::memcpy(&crc_len, bytes->data() + pos + 8, 4);
    EXPECT_EQ(crc_len, masked(std::string_view(bytes->data() + pos, 8)));
    std::string_view data(bytes->data() + pos + 12, len);
    std::memcpy(&crc_data, bytes->data() + pos + 12 + len, 4);
    EXPECT_EQ(crc_data, masked(data));
    pos += 16 + len;
    ++records;
    const char* expected = records == 1 ? "brain.Event:2" : "train/loss";
    EXPECT_NE(data.find(expected), std::string_view::npos) << "record " << records;
  }
  EXPECT_EQ(pos, bytes->size());
  EXPECT_EQ(records, 2);
}

namespace sft_plan = ::musacoder::train::sft;

TEST(SftPlan, ShuffleIsADeterministicPermutation) {
  auto a = sft_plan::shuffled_order(100, 42, 0), b = sft_plan::shuffled_order(100, 42, 0);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, sft_plan::shuffled_order(100, 42, 1));  // a new order each epoch
  EXPECT_NE(a, sft_plan::shuffled_order(100, 43, 0));
  EXPECT_EQ(std::set<int64_t>(a.begin(), a.end()).size(), 100u);
}

TEST(SftPlan, BestFitPackingNeverOverfillsARow) {
  // Lengths 6, 5, 4, 3, 2 in this order into rows of 8: 6 → row0 (2 left); 5 → row1 (3 left);
  // 4 → row2 (4 left); 3 → row1, the fullest that fits (0 left); 2 → row0 (0 left).
  auto rows = sft_plan::pack_rows({6, 5, 4, 3, 2}, {0, 1, 2, 3, 4}, 8);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].examples, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(rows[1].examples, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(rows[2].examples, (std::vector<int64_t>{2}));
  EXPECT_EQ(rows[0].tokens, 8);
}

TEST(SftPlan, StepsGroupMicroBatchesAndCountTrainedTokens) {
  std::vector<int64_t> len(10, 4), trained(10, 3);
  sft_plan::PlanOptions o;
  o.row_capacity = 8;    // two examples per row → 5 rows
  o.rows_per_micro = 2;  // → 3 micro-batches (2, 2, 1 rows)
  o.micro_per_step = 2;  // → 2 steps per epoch
  o.epochs = 2;
  auto steps = sft_plan::plan_steps(len, trained, o);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].micro_batches.size(), 2u);
  EXPECT_EQ(steps[1].micro_batches.size(), 1u);  // the epoch's short last step is kept
  EXPECT_EQ(steps[0].trained_tokens, 8 * 3);     // 4 rows × 2 examples × 3
  EXPECT_EQ(steps[1].trained_tokens, 2 * 3);
  EXPECT_EQ(steps[2].epoch, 1);
  int64_t seen = 0;
  for (const auto& s : steps) seen += s.trained_tokens;
  EXPECT_EQ(seen, 2 * 10 * 3);  // every example once per epoch
}

}  // namespace
}  // namespace musacoder::train

namespace musacoder::train::sft {
namespace {

// Two user/assistant rounds under ChatML: last-turn trains the second answer, all-assistant both, all every
// token.
TEST(SftData, LossOnModesTrainTheirTokens) {
  tokenizer::BpeTrainerOptions bo;
  bo.vocab_size = 300;
  auto json = tokenizer::train_bpe_tokenizer_json({"system user assistant first second question answer"}, bo);
  ASSERT_TRUE(json.ok()) << json.status().to_string();
  auto tok = tokenizer::Tokenizer::from_json_text(*json);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const std::vector<tokenizer::ChatMessage> m = {{"system", "system"},
                                                 {"user", "first question"},
                                                 {"assistant", "first answer"},
                                                 {"user", "second question"},
                                                 {"assistant", "second answer"}};
  auto trained = [&](LossOn l) {
    auto ex = encode_conversation(m, *tok, {}, l);
    EXPECT_TRUE(ex.ok()) << ex.status().to_string();
    return ex.ok() ? *ex : SftExample{};
  };
  const SftExample last = trained(LossOn::kLastTurn), assistant = trained(LossOn::kAllAssistant),
                   all = trained(LossOn::kAll);
  ASSERT_EQ(last.ids, all.ids);
  ASSERT_EQ(assistant.ids, all.ids);
  // each answer's tokens and its <|im_end|>
  const auto first = tok->encode("first answer"), second = tok->encode("second answer");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(last.trained_tokens(), static_cast<int64_t>(second->size()) + 1);
  EXPECT_EQ(assistant.trained_tokens(), static_cast<int64_t>(first->size() + second->size()) + 2);
  EXPECT_EQ(all.trained_tokens(), static_cast<int64_t>(all.ids.size()) - 1);  // token 0 is never predicted
  for (std::size_t t = 0; t < all.ids.size(); ++t) EXPECT_LE(assistant.trained[t], all.trained[t]) << t;
  EXPECT_EQ(parse_loss_on("all").value(), LossOn::kAll);
  EXPECT_STREQ(loss_on_name(LossOn::kAll), "all");
  EXPECT_FALSE(parse_loss_on("prompt").ok());
}

}  // namespace
}  // namespace musacoder::train::sft
