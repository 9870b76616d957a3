#include "mooreeval/service/request.h"

#include <gtest/gtest.h>

namespace musacoder::service {
namespace {

using nlohmann::json;

const TaskLookup kKnown = [](const std::string& id) { return id == "elementwise/add"; };

TEST(Request, ParsesAValidJobWithTextOrBase64Candidate) {
  ServiceLimits limits;
  auto a =
      parse_job(json{{"task", "elementwise/add"}, {"candidate", "code"}, {"label", "x#1"}}, limits, kKnown);
  ASSERT_TRUE(a.ok()) << a.error.message;
  EXPECT_EQ(a.value->candidate, "code");
  EXPECT_EQ(a.value->label, "x#1");
  auto b = parse_job(
      json{{"task", "elementwise/add"}, {"candidate_b64", encode_base64(std::string("\xff\x00z", 3))}},
      limits, kKnown);
  ASSERT_TRUE(b.ok()) << b.error.message;
  EXPECT_EQ(b.value->candidate, std::string("\xff\x00z", 3));
}

TEST(Request, RejectsWithStatusCodeAndFieldName) {
  ServiceLimits limits;
  limits.max_candidate_bytes = 10;
  struct Case {
    json body;
    int status;
    std::string code, mentions;
  };
  const std::vector<Case> cases = {
      {json{{"candidate", "x"}}, 400, "invalid_request", "'task'"},
      {json{{"task", 3}, {"candidate", "x"}}, 400, "invalid_request", "'task' must be a string"},
      {json{{"task", "nope"}, {"candidate", "x"}}, 404, "unknown_task", "nope"},
      {json{{"task", "elementwise/add"}}, 400, "invalid_request", "exactly one"},
      {json{{"task", "elementwise/add"}, {"candidate", "x"}, {"candidate_b64", "eA=="}}, 400,
       "invalid_request", "exactly one"},
      {json{{"task", "elementwise/add"}, {"candidate", std::string(11, 'a')}}, 413, "too_large", "11 bytes"},
      {json{{"task", "elementwise/add"}, {"candidate_b64", "!!!!"}}, 400, "invalid_request", "base64"},
      {json{{"task", "elementwise/add"}, {"candidate", "x"}, {"extra", 1}}, 400, "invalid_request",
       "'extra'"},
      {json{{"task", "elementwise/add"}, {"candidate", "x"}, {"label", 5}}, 400, "invalid_request",
       "'label'"},
      {json::array(), 400, "invalid_request", "object"},
  };
  for (const auto& c : cases) {
    auto r = parse_job(c.body, limits, kKnown);
    ASSERT_FALSE(r.ok()) << c.body.dump();
    EXPECT_EQ(r.error.http_status, c.status) << c.body.dump();
    EXPECT_EQ(r.error.code, c.code) << c.body.dump();
    EXPECT_NE(r.error.message.find(c.mentions), std::string::npos) << r.error.message;
  }
}

TEST(Request, BodyLimitsAndNesting) {
  ServiceLimits limits;
  limits.max_body_bytes = 100;
  EXPECT_EQ(parse_body(std::string(101, ' '), limits).error.http_status, 413);
  EXPECT_EQ(parse_body("", limits).error.code, "invalid_json");
  EXPECT_EQ(parse_body("{\"a\": ", limits).error.code, "invalid_json");
  EXPECT_EQ(parse_body("[1]", limits).error.code, "invalid_request");
  EXPECT_EQ(parse_body(std::string(40, '[') + std::string(40, ']'), limits).error.code, "invalid_json");
  // Brackets inside strings are not nesting.
  EXPECT_TRUE(parse_body("{\"a\": \"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"}", limits).ok());
  EXPECT_EQ(parse_body("{\"a\": \"\xff\"}", limits).error.code, "invalid_json");
}

TEST(Request, BatchAndLookupLimits) {
  ServiceLimits limits;
  limits.max_batch_jobs = 2;
  json job = {{"task", "elementwise/add"}, {"candidate", "x"}};
  EXPECT_TRUE(parse_batch(json{{"jobs", {job, job}}}, limits, kKnown).ok());
  EXPECT_EQ(parse_batch(json{{"jobs", {job, job, job}}}, limits, kKnown).error.http_status, 413);
  EXPECT_EQ(parse_batch(json{{"jobs", json::array()}}, limits, kKnown).error.http_status, 400);
  auto bad = parse_batch(json{{"jobs", {job, json{{"task", "nope"}, {"candidate", "x"}}}}}, limits, kKnown);
  EXPECT_EQ(bad.error.http_status, 404);
  EXPECT_NE(bad.error.message.find("jobs[1]"), std::string::npos);
  EXPECT_TRUE(parse_lookup(json{{"job_ids", {std::string(32, 'a')}}}, limits).ok());
  EXPECT_FALSE(parse_lookup(json{{"job_ids", {"A"}}}, limits).ok());
}

TEST(Request, EvaluateDeadline) {
  ServiceLimits limits;
  json j = {{"task", "elementwise/add"}, {"candidate", "x"}};
  auto d = parse_evaluate(j, limits, kKnown);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.value->deadline_seconds, limits.default_deadline_seconds);
  j["deadline_seconds"] = 0;
  EXPECT_FALSE(parse_evaluate(j, limits, kKnown).ok());
  j["deadline_seconds"] = limits.max_deadline_seconds + 1;
  EXPECT_FALSE(parse_evaluate(j, limits, kKnown).ok());
  j["deadline_seconds"] = 2.5;
  j["cancel_on_deadline"] = true;
  auto ok = parse_evaluate(j, limits, kKnown);
  ASSERT_TRUE(ok.ok());
  EXPECT_DOUBLE_EQ(ok.value->deadline_seconds, 2.5);
  EXPECT_TRUE(ok.value->cancel_on_deadline);
}

TEST(Base64, RoundTripAndStrictness) {
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\x00\xff\x10", 3)})
    EXPECT_EQ(decode_base64(encode_base64(s)), s);
  EXPECT_EQ(encode_base64("abc"), "YWJj");
  EXPECT_EQ(encode_base64("a"), "YQ==");
  EXPECT_FALSE(decode_base64("YQ="));
  EXPECT_FALSE(decode_base64("Y=Q="));
  EXPECT_FALSE(decode_base64("YQ==YQ=="));
  EXPECT_FALSE(decode_base64("YW J"));
}

}  // namespace
}  // namespace musacoder::service
