#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "rl/retry_buffer.h"

namespace musacoder::rl {
namespace {

ScoredGroup group(const std::string& id, bool pass, std::mt19937_64& rng) {
  ScoredGroup g{id, {}};
  for (int i = 0; i < 3; ++i) {
    // Scores with many digits and awkward strings check that the JSON round trip is exact.
    const double score = pass && i == 0 ? 1.0 : static_cast<double>(rng() % 1000) / 1777.0;
    g.attempts.push_back({"__global__ void k() {}\n// \"quoted\" \\ " + std::to_string(rng()),
                          "compile_error: \xe2\x9c\x97 line " + std::to_string(i), score});
  }
  return g;
}

RetryBuffer busy_buffer(std::uint64_t seed, const RetryBufferOptions& o) {
  std::mt19937_64 rng(seed);
  RetryBuffer b = RetryBuffer::create(o).value();
  for (std::size_t step = 0; step < 60; ++step) {
    (void)b.offer(group("task/" + std::to_string(rng() % 30), rng() % 3 == 0, rng));
    for (const std::string& id : b.due(step)) (void)b.report_retry(group(id, rng() % 5 == 0, rng));
    b.record_update_groups(8);
    if (step % 9 == 8) b.advance_epoch();
  }
  return b;
}

RetryBufferOptions small_options() {
  RetryBufferOptions o;
  o.capacity = 10;
  o.max_stale_epochs = 3;
  o.retry_every = 2;
  return o;
}

// Save → restore gives an equal buffer: same snapshot, counters, entries, and the same future behaviour.
TEST(RetryBufferState, RoundTripOverRandomStates) {
  const RetryBufferOptions o = small_options();
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    RetryBuffer original = busy_buffer(seed, o);
    const std::string snapshot = original.save_state();
    RetryBuffer restored = RetryBuffer::create(o).value();
    ASSERT_TRUE(restored.restore_state(snapshot).ok());
    EXPECT_EQ(restored.save_state(), snapshot);
    EXPECT_EQ(restored.counters(), original.counters());
    EXPECT_EQ(restored.epoch(), original.epoch());
    EXPECT_EQ(restored.out_of_domain(), original.out_of_domain());
    ASSERT_EQ(restored.size(), original.size());
    for (std::size_t p = 0; p < 30; ++p) {
      const std::string id = "task/" + std::to_string(p);
      const BufferedPrompt* a = original.find(id);
      const BufferedPrompt* b = restored.find(id);
      ASSERT_EQ(a == nullptr, b == nullptr);
      if (a != nullptr) {
        EXPECT_EQ(*a, *b);
      }
    }
    for (std::size_t step = 60; step < 70; ++step) EXPECT_EQ(restored.due(step), original.due(step));
  }
}

TEST(RetryBufferState, RestoreEnforcesTheCurrentOptions) {
  RetryBuffer original = busy_buffer(3, small_options());
  ASSERT_GT(original.size(), 2u);
  RetryBufferOptions tighter = small_options();
  tighter.capacity = 2;
  tighter.max_stale_epochs = 1;
  RetryBuffer restored = RetryBuffer::create(tighter).value();
  ASSERT_TRUE(restored.restore_state(original.save_state()).ok());
  EXPECT_LE(restored.size(), 2u);
  for (const std::string& id : restored.out_of_domain()) EXPECT_FALSE(restored.contains(id));
  const auto c = restored.counters();
  EXPECT_EQ(c.out_of_domain, c.evicted_stale + c.evicted_capacity);
}

TEST(RetryBufferState, MalformedSnapshotsAreErrorsAndLeaveStateAlone) {
  RetryBuffer b = busy_buffer(4, small_options());
  const std::string before = b.save_state();
  const std::string entry =
      R"({"prompt_id":"x","entered_epoch":0,"entered_seq":1,"last_touched_seq":1,"attempts_total":1,)"
      R"("retries":0,"failed_attempts":[{"code":"c","verdict":"v","score":0.1}]})";
  const std::string counters =
      R"({"entered":1,"refreshed":0,"retries":0,"recovered_groups":0,"solved_in_stream":0,)"
      R"("evicted_stale":0,"evicted_capacity":0,"update_groups":0})";
  auto snapshot = [&](const std::string& entries, const std::string& ood = "[]",
                      const std::string& epoch = "2") {
    return R"({"format":"musacoder.rl.retry_buffer","version":1,"epoch":)" + epoch +
           R"(,"seq":5,"counters":)" + counters + R"(,"entries":)" + entries + R"(,"out_of_domain":)" + ood +
           "}";
  };
  // The well-formed variant restores, so the broken ones below fail for the reason they show.
  {
    RetryBuffer ok = RetryBuffer::create(small_options()).value();
    ASSERT_TRUE(ok.restore_state(snapshot("[" + entry + "]")).ok());
    EXPECT_TRUE(ok.contains("x"));
  }
  std::string wrong_type = entry;
  wrong_type.replace(wrong_type.find("\"retries\":0"), 11, "\"retries\":\"0\"");
  std::string negative = entry;
  negative.replace(negative.find("\"entered_epoch\":0"), 17, "\"entered_epoch\":-1");
  std::string bad_score = entry;
  bad_score.replace(bad_score.find("0.1"), 3, "\"hi\"");
  std::string future = entry;
  future.replace(future.find("\"entered_epoch\":0"), 17, "\"entered_epoch\":7");
  std::string beyond_seq = entry;
  beyond_seq.replace(beyond_seq.find("\"last_touched_seq\":1"), 20, "\"last_touched_seq\":9");
  const std::vector<std::string> broken = {
      "",
      "{",
      "not json",
      "[]",
      "null",
      R"({"format":"something.else","version":1})",
      R"({"format":"musacoder.rl.retry_buffer","version":2})",
      R"({"format":"musacoder.rl.retry_buffer","version":1})",
      snapshot("{}"),
      snapshot("[" + wrong_type + "]"),
      snapshot("[" + negative + "]"),
      snapshot("[" + bad_score + "]"),
      snapshot("[" + entry + "," + entry + "]"),  // duplicate prompt
      snapshot("[" + entry + "]", R"(["x"])"),    // buffered and out-of-domain
      snapshot("[" + entry + "]", "[1]"),
      snapshot("[" + entry + "]", "[]", "1.5"),
      snapshot("[42]"),
      snapshot("[" + future + "]"),      // entered in a later epoch than the snapshot's
      snapshot("[" + beyond_seq + "]"),  // sequence number past seq

      before.substr(0, before.size() / 2),
  };
  for (const std::string& text : broken) {
    const Status s = b.restore_state(text);
    EXPECT_FALSE(s.ok()) << text;
    EXPECT_FALSE(s.message().empty());
    EXPECT_EQ(b.save_state(), before) << text;
  }
}

}  // namespace
}  // namespace musacoder::rl
