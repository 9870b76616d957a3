#include "rl/retry_buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace musacoder::rl {
namespace {

// K attempts, `passes` of which score 1.0 (pass), the rest 0.2 (compiled, wrong).
ScoredGroup group(const std::string& id, std::size_t passes, std::size_t k = 4) {
  ScoredGroup g{id, {}};
  for (std::size_t i = 0; i < k; ++i) {
    const bool pass = i < passes;
    g.attempts.push_back({"// code " + id + " #" + std::to_string(i),
                          pass ? "ok" : "wrong_answer: max err 3.1", pass ? 1.0 : 0.2});
  }
  return g;
}

RetryBuffer make(RetryBufferOptions o = {}) {
  auto b = RetryBuffer::create(o);
  EXPECT_TRUE(b.ok()) << b.status().message();
  return std::move(b).value();
}

OfferOutcome offer(RetryBuffer& b, const ScoredGroup& g) {
  auto r = b.offer(g);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.value();
}

TEST(RetryBuffer, AllFailGroupsAreBufferedOthersAreNot) {
  RetryBuffer b = make();
  EXPECT_EQ(offer(b, group("a", 1)), OfferOutcome::kHasSignal);
  EXPECT_EQ(offer(b, group("b", 0)), OfferOutcome::kBuffered);
  EXPECT_FALSE(b.contains("a"));
  ASSERT_TRUE(b.contains("b"));
  const BufferedPrompt* e = b.find("b");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->failed_attempts.size(), 4u);
  EXPECT_EQ(e->failed_attempts[0].verdict, "wrong_answer: max err 3.1");
  EXPECT_EQ(e->attempts_total, 4u);
  EXPECT_EQ(b.counters().buffered, 1u);
  EXPECT_EQ(b.counters().entered, 1u);
}

TEST(RetryBuffer, ReofferRefreshesAttemptsButKeepsAge) {
  RetryBufferOptions o;
  o.max_attempts_kept = 2;
  RetryBuffer b = make(o);
  offer(b, group("p", 0, 8));
  b.advance_epoch();
  ScoredGroup again = group("p", 0, 8);
  again.attempts[0].verdict = "compile_error: no kernel";
  EXPECT_EQ(offer(b, again), OfferOutcome::kRefreshed);
  const BufferedPrompt* e = b.find("p");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->entered_epoch, 0u);
  EXPECT_EQ(e->attempts_total, 16u);
  ASSERT_EQ(e->failed_attempts.size(), 2u);
  EXPECT_EQ(e->failed_attempts[0].verdict, "compile_error: no kernel");
  EXPECT_EQ(b.counters().refreshed, 1u);
}

TEST(RetryBuffer, StreamPassRemovesABufferedPrompt) {
  RetryBuffer b = make();
  offer(b, group("p", 0));
  EXPECT_EQ(offer(b, group("p", 2)), OfferOutcome::kHasSignal);
  EXPECT_FALSE(b.contains("p"));
  EXPECT_EQ(b.counters().solved_in_stream, 1u);
  EXPECT_EQ(b.counters().recovered_groups, 0u);
}

TEST(RetryBuffer, PassThresholdDecidesPassing) {
  RetryBufferOptions o;
  o.pass_threshold = 0.1;  // 0.2 now passes
  RetryBuffer b = make(o);
  EXPECT_EQ(offer(b, group("p", 0)), OfferOutcome::kHasSignal);
}

TEST(RetryBuffer, RetryRecoversOrKeeps) {
  RetryBuffer b = make();
  offer(b, group("p", 0));
  offer(b, group("q", 0));
  auto still = b.report_retry(group("p", 0));
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still.value(), RetryOutcome::kStillFailing);
  EXPECT_EQ(b.find("p")->retries, 1u);
  auto rec = b.report_retry(group("q", 1));
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec.value(), RetryOutcome::kRecovered);
  EXPECT_FALSE(b.contains("q"));
  EXPECT_FALSE(b.report_retry(group("q", 1)).ok());  // no longer buffered
  EXPECT_EQ(b.counters().retries, 2u);
  EXPECT_EQ(b.counters().recovered_groups, 1u);
  b.record_update_groups(10);
  b.record_update_groups(10);
  EXPECT_DOUBLE_EQ(b.counters().recovered_share(), 1.0 / 20.0);
}

TEST(RetryBuffer, DueOnlyEveryNStepsOldestFirstAndCapped) {
  RetryBufferOptions o;
  o.retry_every = 4;
  o.max_retries_per_step = 2;
  RetryBuffer b = make(o);
  for (const char* id : {"c", "a", "d", "b"}) offer(b, group(id, 0));
  EXPECT_TRUE(b.due(1).empty());
  EXPECT_TRUE(b.due(6).empty());
  EXPECT_EQ(b.due(4), (std::vector<std::string>{"c", "a"}));  // insertion order, not id order
  EXPECT_EQ(b.due(4), b.due(8));                              // due() does not change state
  ASSERT_TRUE(b.report_retry(group("c", 0)).ok());            // c moves to the back
  EXPECT_EQ(b.due(8), (std::vector<std::string>{"a", "d"}));
}

TEST(RetryBuffer, SeededDueIsDeterministicAndCapped) {
  RetryBufferOptions o;
  o.due_order = DueOrder::kSeededSample;
  o.retry_every = 1;
  o.max_retries_per_step = 5;
  o.seed = 99;
  RetryBuffer a = make(o), b = make(o);
  for (int i = 0; i < 20; ++i) {
    offer(a, group("p" + std::to_string(i), 0));
    offer(b, group("p" + std::to_string(19 - i), 0));  // other insertion order, same set
  }
  for (std::size_t step = 0; step < 10; ++step) {
    const auto due = a.due(step);
    EXPECT_EQ(due.size(), 5u);
    EXPECT_EQ(due, b.due(step));
    std::vector<std::string> sorted = due;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());  // no repeats
  }
  EXPECT_NE(a.due(1), a.due(2));  // different steps draw differently (for this seed)
}

TEST(RetryBuffer, StalePromptsAreEvictedAsOutOfDomain) {
  RetryBufferOptions o;
  o.max_stale_epochs = 2;
  RetryBuffer b = make(o);
  offer(b, group("old", 0));
  b.advance_epoch();  // age 1
  offer(b, group("young", 0));
  EXPECT_TRUE(b.contains("old"));
  b.advance_epoch();  // old: age 2 → evicted; young: age 1
  EXPECT_FALSE(b.contains("old"));
  EXPECT_TRUE(b.contains("young"));
  EXPECT_TRUE(b.is_out_of_domain("old"));
  EXPECT_EQ(b.counters().evicted_stale, 1u);
  EXPECT_EQ(b.counters().out_of_domain, 1u);
  EXPECT_EQ(offer(b, group("old", 0)), OfferOutcome::kOutOfDomain);
  EXPECT_FALSE(b.contains("old"));
}

TEST(RetryBuffer, FullBufferEvictsTheStalest) {
  RetryBufferOptions o;
  o.capacity = 2;
  RetryBuffer b = make(o);
  offer(b, group("first", 0));
  offer(b, group("second", 0));
  offer(b, group("second", 0));  // refresh does not make it older or younger
  offer(b, group("third", 0));
  EXPECT_EQ(b.size(), 2u);
  EXPECT_FALSE(b.contains("first"));
  EXPECT_TRUE(b.is_out_of_domain("first"));
  EXPECT_EQ(b.counters().evicted_capacity, 1u);
  b.advance_epoch();
  offer(b, group("fourth", 0));  // "second" (epoch 0, inserted before "third") goes
  EXPECT_FALSE(b.contains("second"));
  EXPECT_TRUE(b.contains("third"));
}

TEST(RetryBuffer, Errors) {
  RetryBufferOptions bad;
  bad.capacity = 0;
  EXPECT_FALSE(RetryBuffer::create(bad).ok());
  bad = {};
  bad.max_stale_epochs = 0;
  EXPECT_FALSE(RetryBuffer::create(bad).ok());
  bad = {};
  bad.retry_every = 0;
  EXPECT_FALSE(RetryBuffer::create(bad).ok());
  RetryBuffer b = make();
  EXPECT_FALSE(b.offer(ScoredGroup{"", group("x", 0).attempts}).ok());
  EXPECT_FALSE(b.offer(ScoredGroup{"x", {}}).ok());
  ScoredGroup nan = group("x", 0);
  nan.attempts[1].score = NAN;
  EXPECT_FALSE(b.offer(nan).ok());
  EXPECT_EQ(b.size(), 0u);
}

// Property: random offers, retries and epoch boundaries never push the buffer over capacity, never keep a
// prompt max_stale_epochs or more epochs, and the counters add up.
TEST(RetryBuffer, InvariantsUnderRandomTraffic) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    RetryBufferOptions o;
    o.capacity = 1 + rng() % 12;
    o.max_stale_epochs = 1 + rng() % 4;
    o.retry_every = 1 + rng() % 3;
    o.max_retries_per_step = 1 + rng() % 5;
    o.due_order = seed % 2 == 0 ? DueOrder::kSeededSample : DueOrder::kLeastRecentlyTried;
    RetryBuffer b = make(o);
    std::size_t recovered = 0;
    for (std::size_t step = 0; step < 300; ++step) {
      for (int i = 0; i < 3; ++i) {
        const std::string id = "p" + std::to_string(rng() % 40);
        offer(b, group(id, rng() % 3 == 0 ? 1 : 0));
      }
      for (const std::string& id : b.due(step)) {
        auto r = b.report_retry(group(id, rng() % 4 == 0 ? 1 : 0));
        ASSERT_TRUE(r.ok()) << r.status().message();
        recovered += r.value() == RetryOutcome::kRecovered ? 1 : 0;
      }
      if (step % 7 == 6) b.advance_epoch();
      ASSERT_LE(b.size(), o.capacity);
      for (std::size_t p = 0; p < 40; ++p) {
        const BufferedPrompt* e = b.find("p" + std::to_string(p));
        if (e == nullptr) continue;
        ASSERT_LT(b.epoch() - e->entered_epoch, o.max_stale_epochs);
        ASSERT_FALSE(b.is_out_of_domain(e->prompt_id));
      }
    }
    const RetryBufferCounters c = b.counters();
    EXPECT_EQ(c.recovered_groups, recovered);
    EXPECT_EQ(c.out_of_domain, c.evicted_stale + c.evicted_capacity);
    EXPECT_EQ(c.entered,
              c.buffered + c.recovered_groups + c.solved_in_stream + c.evicted_stale + c.evicted_capacity);
  }
}

}  // namespace
}  // namespace musacoder::rl
