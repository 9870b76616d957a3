// Pure parts of the service's exposure controls: token tables (hashes only), bearer
// parsing, loopback detection, request heads, the rate limiter's arithmetic, the store's
// idempotency keys, quotas' counts and retention.
#include <gtest/gtest.h>

#include "core/text.h"
#include "mooreeval/service/auth.h"
#include "mooreeval/service/http_head.h"
#include "mooreeval/service/rate_limit.h"
#include "mooreeval/service/store.h"

namespace musacoder::service {
namespace {

TEST(TokenTable, ParsesHashesAndAuthenticates) {
  const std::string alice = new_token(), bob = new_token();
  EXPECT_EQ(alice.size(), 68u);
  EXPECT_NE(alice, bob);
  auto t = TokenTable::parse("# comment\n\n" + token_table_line("alice", Scope::kSubmit, alice) + "  # trailing\n" +
                                 token_table_line("bob", Scope::kAdmin, bob) + "\n",
                             "test");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->size(), 2u);
  auto p = t->authenticate(alice);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->name, "alice");
  EXPECT_TRUE(p->can(Scope::kRead) && p->can(Scope::kSubmit) && !p->can(Scope::kAdmin));
  EXPECT_TRUE(t->authenticate(bob)->can(Scope::kAdmin));
  EXPECT_FALSE(t->authenticate(""));
  EXPECT_FALSE(t->authenticate(alice + "x"));
  EXPECT_FALSE(t->authenticate(sha256_hex(alice)));  // the stored hash is not a token
}

TEST(TokenTable, RejectsPlainTokensBadScopesAndNames) {
  const std::string line = token_table_line("a", Scope::kRead, "secret");
  for (const std::string& bad : {std::string("alice submit mev_plaintext_token"), std::string("alice owner ") + sha256_hex("x"),
                                std::string("al ice submit ") + sha256_hex("x"), std::string("alice submit"),
                                line + "\n" + line}) {
    auto t = TokenTable::parse(bad, "tokens.txt");
    EXPECT_FALSE(t.ok()) << bad;
    if (!t.ok()) {
      EXPECT_NE(t.status().message().find("tokens.txt:"), std::string::npos) << t.status().message();
    }
  }
  EXPECT_EQ(TokenTable::parse("", "empty").value().size(), 0u);
}

TEST(Auth, BearerAndLoopback) {
  EXPECT_EQ(bearer_token("Bearer abc"), "abc");
  EXPECT_EQ(bearer_token("bearer  abc "), "abc");
  EXPECT_EQ(bearer_token("Basic abc"), "");
  EXPECT_EQ(bearer_token("Bearer"), "");
  for (const char* h : {"127.0.0.1", "127.1.2.3", "::1", "localhost"}) EXPECT_TRUE(is_loopback_host(h)) << h;
  for (const char* h : {"0.0.0.0", "::", "10.0.0.1", "example.com", "128.0.0.1"}) EXPECT_FALSE(is_loopback_host(h)) << h;
}

TEST(RequestHead, ParsesFieldsAndRefusesMalformedHeads) {
  std::string error;
  auto h = parse_request_head(
      "POST /v1/jobs?x=1 HTTP/1.1\r\nHost: a:1\r\nContent-Type: Application/JSON; charset=utf-8\r\n"
      "Content-Length: 12\r\nConnection: close\r\nExpect: 100-continue",
      error);
  ASSERT_TRUE(h) << error;
  EXPECT_EQ(h->method, "POST");
  EXPECT_EQ(h->path, "/v1/jobs");
  EXPECT_EQ(h->content_length, 12u);
  EXPECT_TRUE(h->close && h->expect_continue && !h->chunked);
  EXPECT_EQ(media_type(*h->field("content-type")), "application/json");
  EXPECT_EQ(host_without_port(*h->field("host")), "a");
  EXPECT_EQ(host_without_port("[::1]:8080"), "::1");
  EXPECT_TRUE(parse_request_head("GET / HTTP/1.0", error)->close);
  for (const char* bad : {"", "GET", "GET /x", "GET x HTTP/1.1", "GET / HTTP/2", "GET / HTTP/1.1\r\nNoColon",
                          "GET / HTTP/1.1\r\nContent-Length: -1", "GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2",
                          "GET / HTTP/1.1\r\nBad Name: x"})
    EXPECT_FALSE(parse_request_head(bad, error)) << bad;
  EXPECT_TRUE(parse_request_head("POST / HTTP/1.1\r\nTransfer-Encoding: chunked", error)->chunked);
}

TEST(RateLimiter, BurstThenSustainedRate) {
  RateLimiter limiter({/*per_second=*/2, /*burst=*/3});
  const auto t0 = RateLimiter::Clock::now();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.take("a", t0), 0) << i;
  // Empty: the next unit comes in 1 / 2 s.
  EXPECT_NEAR(limiter.take("a", t0), 0.5, 1e-9);
  EXPECT_EQ(limiter.take("b", t0), 0);  // per name
  // 0.5 s later one unit is back (2/s), not two.
  EXPECT_EQ(limiter.take("a", t0 + std::chrono::milliseconds(500)), 0);
  EXPECT_GT(limiter.take("a", t0 + std::chrono::milliseconds(500)), 0);
  // A long idle refills to the burst only.
  const auto later = t0 + std::chrono::seconds(100);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.take("a", later), 0);
  EXPECT_GT(limiter.take("a", later), 0);
  EXPECT_EQ(RateLimiter({0, 1}).take("x"), 0);  // 0: no limit
}

JobMessage job(const std::string& candidate = "x") {
  return {new_job_id(), "elementwise/add", candidate, ""};
}

TEST(StoreSecurity, IdempotencyKeysReplayPerOwnerAndDetectConflicts) {
  auto s = Store::open({":memory:"}).value();
  const IdempotencyKey k{"key-1", sha256_hex("request A")};
  auto first = s->insert_jobs({job(), job()}, "alice", k);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->replayed);
  auto again = s->insert_jobs({job(), job()}, "alice", k);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->replayed);
  EXPECT_EQ(again->job_ids, first->job_ids);
  EXPECT_EQ(s->counts().value().queued, 2);  // nothing new
  auto conflict = s->insert_jobs({job()}, "alice", IdempotencyKey{"key-1", sha256_hex("request B")});
  EXPECT_TRUE(conflict->key_conflict);
  auto bobs = s->insert_jobs({job()}, "bob", k);  // keys are per owner
  EXPECT_FALSE(bobs->replayed);
  EXPECT_EQ(s->unfinished_count("alice").value(), 2);
  EXPECT_EQ(s->unfinished_count("bob").value(), 1);
  EXPECT_EQ(s->get(first->job_ids[0]).value()->owner, "alice");
  ASSERT_TRUE(s->forget_key("alice", "key-1").ok());
  EXPECT_FALSE(s->insert_jobs({job()}, "alice", k)->replayed);
}

TEST(StoreSecurity, PurgeRemovesOnlyOldFinishedJobsAndTheirCandidates) {
  auto s = Store::open({":memory:"}).value();
  const JobMessage done = job(std::string(50000, 'c')), open = job(), cancelled = job();
  ASSERT_TRUE(s->insert_jobs({done, open, cancelled}, "alice").ok());
  ASSERT_EQ(s->commit_result(done.job_id, "ok", 1.0, "{}", "w").value(), CommitOutcome::kStored);
  ASSERT_EQ(s->cancel(cancelled.job_id).value(), CancelOutcome::kCancelled);
  // A finished job's candidate bytes are gone (only its hash stays).
  EXPECT_EQ(s->get(done.job_id).value()->candidate_sha256, sha256_hex(done.candidate));
  EXPECT_TRUE(s->unfinished_jobs().value().size() == 1);
  // Nothing finished before the epoch; everything finished before the future.
  EXPECT_EQ(s->purge(0, 100, 0).value().jobs, 0);
  auto p = s->purge(unix_now() + 10, 100, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->jobs, 2);
  EXPECT_FALSE(s->get(done.job_id).value());
  EXPECT_TRUE(s->log(done.job_id).value().empty());
  EXPECT_TRUE(s->get(open.job_id).value());  // unfinished work is never purged
  EXPECT_GT(s->used_bytes().value(), 0);
}

}  // namespace
}  // namespace musacoder::service
