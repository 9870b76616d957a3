// The prompt contract (src/prompts/prompts.h): task -> messages, response -> code, verdict ->
// feedback turn.
#include "prompts/prompts.h"

#include <gtest/gtest.h>

namespace musacoder::prompts {
namespace {

const char* kTask = "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n        return x\n";

TEST(RenderTask, SystemAndUserWithTheReferenceInOnePythonBlock) {
  PromptOptions o;
  o.target = Target::kCuda;
  auto m = render_task({kTask, "identity on (4, 4)"}, o);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].role, "system");
  EXPECT_EQ(m[1].role, "user");
  EXPECT_NE(m[0].content.find("ModelNew"), std::string::npos);
  EXPECT_NE(m[0].content.find("load_inline"), std::string::npos);
  EXPECT_NE(m[0].content.find("__global__"), std::string::npos);  // the CUDA rules
  EXPECT_NE(m[1].content.find("```python\n" + std::string(kTask) + "```"), std::string::npos);
  EXPECT_NE(m[1].content.find("Task: identity on (4, 4)"), std::string::npos);
  // The reference round-trips through the contract's own extraction? No: it has no ModelNew.
  EXPECT_FALSE(extract_code(m[1].content).ok());
}

TEST(RenderTask, BackendRulesDifferAndRenderingIsDeterministic) {
  PromptOptions cpu, cuda;
  cpu.target = Target::kCpu;
  auto a = render_task({kTask, ""}, cpu), b = render_task({kTask, ""}, cpu), c = render_task({kTask, ""}, cuda);
  EXPECT_EQ(a, b);
  EXPECT_NE(a[0].content, c[0].content);
  EXPECT_NE(a[0].content.find("-fopenmp"), std::string::npos);
  EXPECT_EQ(a[1].content.find("Task:"), std::string::npos);  // no description, no line
}

TEST(ParseTarget, NamesRoundTripAndUnknownIsAnError) {
  for (Target t : {Target::kCuda, Target::kCpu, Target::kMusa}) EXPECT_EQ(*parse_target(target_name(t)), t);
  EXPECT_FALSE(parse_target("tpu").ok());
}

TEST(ExtractCode, LastPythonBlockDefiningModelNew) {
  const std::string r =
      "Draft:\n```python\nclass ModelNew(nn.Module):\n    pass  # draft\n```\n"
      "Helper:\n```cpp\nclass ModelNew {};\n```\n"
      "Final:\n```python\nimport torch\nclass ModelNew(nn.Module):\n    pass  # final\n```\n"
      "Usage:\n```python\nprint(1)\n```\n";
  auto code = extract_code(r);
  ASSERT_TRUE(code.ok()) << code.status().message();
  EXPECT_EQ(*code, "import torch\nclass ModelNew(nn.Module):\n    pass  # final\n");
}

TEST(ExtractCode, OnlyAfterTheLastThinkClose) {
  const std::string r = "<think>\n```python\nclass ModelNew(nn.Module):\n    pass  # thought\n```\n</think>\n"
                        "```py\nclass ModelNew(nn.Module):\n    pass  # answer\n```";
  EXPECT_EQ(*extract_code(r), "class ModelNew(nn.Module):\n    pass  # answer\n");
  auto none = extract_code("<think>\n```python\nclass ModelNew(nn.Module):\n    pass\n```\n</think>\nSorry.");
  EXPECT_FALSE(none.ok());
  auto open = extract_code("<think>\nstill thinking ```python\nclass ModelNew: pass\n");
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.status().message().find("inside <think>"), std::string::npos);
}

TEST(ExtractCode, UnterminatedLastBlockAndUntaggedFence) {
  EXPECT_EQ(*extract_code("```\nclass ModelNew(nn.Module):\n    x = 1\n"), "class ModelNew(nn.Module):\n    x = 1\n");
  EXPECT_FALSE(extract_code("no code here").ok());
  EXPECT_FALSE(extract_code("```cuda\n__global__ void k() {}\n```").ok());
  EXPECT_FALSE(extract_code("```python\nclass Model(nn.Module):\n    pass\n```").ok());
}

TEST(RenderAnswer, RoundTripsThroughExtraction) {
  const std::string code = "import torch\n\nclass ModelNew(torch.nn.Module):\n    pass\n";
  const std::string a = render_answer(code, "Plan: one kernel.\n");
  EXPECT_EQ(a.rfind("Plan: one kernel.\n\n```python\n", 0), 0u);
  EXPECT_EQ(*extract_code(a), code);
  EXPECT_EQ(render_answer(code), "```python\n" + code + "```");
}

TEST(Feedback, FactsFromVerdictJsonAndCorrectnessFirst) {
  nlohmann::json v = {{"schema", "mooreeval.verdict/1"}, {"verdict", "wrong_answer"}, {"compiled", true},
                      {"trials", 8},  {"passed", 3},       {"speedup", nullptr},
                      {"stage", "verify"}, {"message", "trial 3: max abs error 0.5"}, {"log", ""}};
  FeedbackFacts f = feedback_facts(v);
  EXPECT_EQ(f.status, "wrong_answer");
  EXPECT_TRUE(f.compiled);
  EXPECT_EQ(f.passed, 3);
  EXPECT_FALSE(f.speedup.has_value());
  Message m = render_feedback(f, {});
  EXPECT_EQ(m.role, "user");
  EXPECT_NE(m.content.find("\"correctness\": \"3/8\""), std::string::npos);
  EXPECT_NE(m.content.find("\"error_class\": \"wrong_answer\""), std::string::npos);
  EXPECT_NE(m.content.find("Fix correctness first"), std::string::npos);
  nlohmann::json ok = {{"verdict", "ok"}, {"compiled", true}, {"trials", 8}, {"passed", 8}, {"speedup", 1.5}};
  Message o = render_feedback(feedback_facts(ok), {});
  EXPECT_NE(o.content.find("Optimise it"), std::string::npos);
  EXPECT_NE(o.content.find("\"speedup\": 1.5"), std::string::npos);
}

TEST(Feedback, LogIsMiddleTruncatedToTheTokenBudget) {
  FeedbackFacts f;
  f.status = "compile_error";
  f.log = "FIRST ERROR\n" + std::string(20000, 'x') + "\nLAST LINE";
  PromptOptions o;
  o.max_log_tokens = 100;
  o.count_tokens = [](std::string_view s) { return s.size() / 2; };  // a tokenizer of 2 bytes/token
  Message m = render_feedback(f, o);
  auto j = nlohmann::json::parse(m.content.substr(m.content.find("{"), m.content.rfind("}") - m.content.find("{") + 1));
  const std::string log = j["log"];
  EXPECT_LE(o.count_tokens(log), 100u);
  EXPECT_EQ(log.rfind("FIRST ERROR", 0), 0u);
  EXPECT_NE(log.find("LAST LINE"), std::string::npos);
  EXPECT_NE(log.find("truncated"), std::string::npos);
  f.log = "short";
  EXPECT_NE(render_feedback(f, o).content.find("\"log\": \"short\""), std::string::npos);
}

}  // namespace
}  // namespace musacoder::prompts
