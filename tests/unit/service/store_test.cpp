#include "mooreeval/service/store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <thread>

namespace musacoder::service {
namespace {

std::unique_ptr<Store> open_memory() {
  auto s = Store::open({":memory:"});
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(*s);
}

JobMessage job(const std::string& task = "elementwise/add") {
  return {new_job_id(), task, "code", "lbl"};
}

TEST(Store, LifecycleAndExactlyOneResult) {
  auto s = open_memory();
  JobMessage j = job();
  ASSERT_TRUE(s->insert_jobs({j}).ok());
  ASSERT_TRUE(s->mark_running(j.job_id, "w1:0", 1).ok());
  auto first = s->commit_result(j.job_id, "ok", 0.9, "{\"verdict\":\"ok\"}", "w1:0");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, CommitOutcome::kStored);
  // The re-run after a reclaim reports again: ignored, the first result stands.
  auto second = s->commit_result(j.job_id, "wrong_answer", 0.2, "{\"verdict\":\"wrong_answer\"}", "w2:0");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, CommitOutcome::kDuplicate);
  auto r = s->get(j.job_id);
  ASSERT_TRUE(r.ok() && *r);
  EXPECT_EQ((*r)->state, JobState::kDone);
  EXPECT_EQ((*r)->verdict, "ok");
  EXPECT_DOUBLE_EQ(*(*r)->reward, 0.9);
  EXPECT_EQ((*r)->verdict_json, "{\"verdict\":\"ok\"}");
  EXPECT_EQ((*r)->attempts, 1);
  EXPECT_EQ((*r)->candidate_bytes, 4u);
  EXPECT_EQ(*s->result_count(), 1);
  auto log = s->log(j.job_id);
  ASSERT_TRUE(log.ok());
  std::vector<std::string> events;
  for (const auto& e : *log) events.push_back(e.event);
  EXPECT_EQ(events, (std::vector<std::string>{"submitted", "started", "result_stored", "duplicate_result"}));
  EXPECT_EQ(*s->commit_result(new_job_id(), "ok", 1, "{}", "w"), CommitOutcome::kUnknownJob);
}

TEST(Store, CancelBeatsALateResultAndDoneBeatsCancel) {
  auto s = open_memory();
  JobMessage a = job(), b = job();
  ASSERT_TRUE(s->insert_jobs({a, b}).ok());
  EXPECT_EQ(*s->cancel(a.job_id), CancelOutcome::kCancelled);
  EXPECT_EQ(*s->cancel(a.job_id), CancelOutcome::kAlreadyCancelled);
  EXPECT_EQ(*s->commit_result(a.job_id, "ok", 1, "{}", "w"), CommitOutcome::kCancelled);
  EXPECT_EQ((*s->get(a.job_id))->verdict, "");
  ASSERT_EQ(*s->commit_result(b.job_id, "ok", 1, "{}", "w"), CommitOutcome::kStored);
  EXPECT_EQ(*s->cancel(b.job_id), CancelOutcome::kAlreadyDone);
  EXPECT_EQ(*s->cancel(new_job_id()), CancelOutcome::kUnknownJob);
  auto c = s->counts();
  EXPECT_EQ(c->cancelled, 1);
  EXPECT_EQ(c->done, 1);
  EXPECT_EQ(*s->result_count(), 1);
}

TEST(Store, InfraErrorHasNullRewardAndUnfinishedJobsSurviveReopen) {
  const auto path = std::filesystem::temp_directory_path() / ("store_test_" + new_job_id() + ".db");
  JobMessage a = job(), b = job();
  {
    auto s = Store::open({path});
    ASSERT_TRUE(s.ok()) << s.status().message();
    ASSERT_TRUE((*s)->insert_jobs({a, b}).ok());
    ASSERT_TRUE((*s)->mark_running(a.job_id, "w", 1).ok());
    ASSERT_EQ(*(*s)->commit_result(b.job_id, "infra_error", std::nullopt, "{}", "w"), CommitOutcome::kStored);
    EXPECT_FALSE((*(*s)->get(b.job_id))->reward.has_value());
  }
  auto s = Store::open({path});
  ASSERT_TRUE(s.ok());
  auto u = (*s)->unfinished_jobs();
  ASSERT_TRUE(u.ok());
  ASSERT_EQ(u->size(), 1u);
  EXPECT_EQ((*u)[0].job.job_id, a.job_id);
  EXPECT_EQ((*u)[0].job.candidate, "code");
  EXPECT_EQ((*u)[0].attempts, 1);
  s->reset();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
}

TEST(Store, ConcurrentDuplicateCommitsStoreOne) {
  auto s = open_memory();
  JobMessage j = job();
  ASSERT_TRUE(s->insert_jobs({j}).ok());
  std::atomic<int> stored{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      auto r = s->commit_result(j.job_id, "ok", 1.0, "{}", "w" + std::to_string(t));
      if (r.ok() && *r == CommitOutcome::kStored) stored++;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(stored, 1);
  EXPECT_EQ(*s->result_count(), 1);
}

TEST(Store, RejectsDuplicateJobIdsAtomically) {
  auto s = open_memory();
  JobMessage a = job();
  JobMessage dup = a;
  EXPECT_FALSE(s->insert_jobs({job(), a, dup}).ok());
  EXPECT_EQ(s->counts()->queued, 0);  // all or none
}

TEST(JobId, ShapeAndUniqueness) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    auto id = new_job_id();
    EXPECT_TRUE(is_job_id(id)) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 1000u);
  EXPECT_FALSE(is_job_id("ABCDEF0123456789abcdef0123456789"));
  EXPECT_FALSE(is_job_id("abc"));
}

}  // namespace
}  // namespace musacoder::service
