#include "mooreeval/service/metrics.h"

#include <gtest/gtest.h>

namespace musacoder::service {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

TEST(Histogram, CumulativeBucketsSumAndCount) {
  Histogram h({0.1, 1, 10});
  for (double v : {0.05, 0.1, 0.5, 5.0, 50.0}) h.observe(v);
  const std::string t = h.render("x", "k=\"v\",");
  EXPECT_TRUE(has_line(t, "x_bucket{k=\"v\",le=\"0.1\"} 2")) << t;
  EXPECT_TRUE(has_line(t, "x_bucket{k=\"v\",le=\"1\"} 3")) << t;
  EXPECT_TRUE(has_line(t, "x_bucket{k=\"v\",le=\"10\"} 4")) << t;
  EXPECT_TRUE(has_line(t, "x_bucket{k=\"v\",le=\"+Inf\"} 5")) << t;
  EXPECT_TRUE(has_line(t, "x_sum{k=\"v\"} 55.65")) << t;
  EXPECT_TRUE(has_line(t, "x_count{k=\"v\"} 5")) << t;
  EXPECT_TRUE(has_line(Histogram({1}).render("y", ""), "y_count 0"));
}

TEST(ServiceMetrics, VerdictsStagesCacheAndGauges) {
  ServiceMetrics m;
  m.record_verdict({{"verdict", "ok"},
                    {"compiled", true},
                    {"cache_hit", true},
                    {"seconds", {{"build", 2.0}, {"run", 0.3}, {"total", 2.4}, {"inspect", 0}}}});
  m.record_verdict({{"verdict", "compile_error"}, {"compiled", true}, {"cache_hit", false}, {"seconds", {}}});
  m.record_verdict({{"verdict", "format_error"}, {"compiled", false}, {"seconds", {{"extract", 0.0001}}}});
  m.record_request("/v1/jobs", 202, 0.0002);
  m.record_request("/v1/jobs", 400, 0.0001);
  Gauges g;
  g.queue_depth = 7;
  g.workers = 3;
  const std::string t = m.render(g);
  EXPECT_TRUE(has_line(t, "mooreeval_queue_depth 7")) << t;
  EXPECT_TRUE(has_line(t, "mooreeval_workers 3"));
  EXPECT_TRUE(has_line(t, "mooreeval_verdicts_total{verdict=\"ok\"} 1"));
  EXPECT_TRUE(has_line(t, "mooreeval_verdicts_total{verdict=\"infra_error\"} 0"));
  EXPECT_TRUE(has_line(t, "mooreeval_build_cache_hit_ratio 0.5"));
  EXPECT_TRUE(has_line(t, "mooreeval_stage_seconds_count{stage=\"build\"} 1"));
  EXPECT_TRUE(has_line(t, "mooreeval_stage_seconds_count{stage=\"inspect\"} 0"));  // 0 s: did not run
  EXPECT_TRUE(has_line(t, "mooreeval_stage_seconds_count{stage=\"extract\"} 1"));
  EXPECT_TRUE(has_line(t, "mooreeval_http_requests_total{route=\"/v1/jobs\",status=\"400\"} 1"));
  EXPECT_TRUE(has_line(t, "mooreeval_http_request_seconds_count{route=\"/v1/jobs\"} 2"));
}

TEST(ServiceMetrics, EscapesLabelValues) {
  EXPECT_EQ(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

}  // namespace
}  // namespace musacoder::service
