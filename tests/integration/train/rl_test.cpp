// The RL trainer (train-rl) on a tiny Qwen2 checkpoint (rl_reference.py makes it) with the verifier on cpu:
// PrimeEcho masks token by token on a 3-turn sample, one update's loss and gradients against a hand-written
// torch reference, three steps with PrimeEcho + BDR + MirrorPop + KL on (counters moving, an injected hack
// scored 0 with no positive advantage), resume == uninterrupted, and bad input failing clearly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "model/checkpoint.h"
#include "process/subprocess.h"
#include "support/python_reference.h"
#include "train/common/train_state.h"
#include "train/rl/credit.h"
#include "train/rl/policy_update.h"
#include "train/rl/trainer.h"

namespace musacoder::train::rl {
namespace {

namespace fs = std::filesystem;
const fs::path kScript = fs::path(MUSACODER_SOURCE_DIR) / "tests/integration/train/rl_reference.py";
const fs::path kSource = fs::path(MUSACODER_SOURCE_DIR);

std::string solution_with(const std::string& from, const std::string& to) {
  auto text = read_file(kSource / "solutions/cpu/activation/relu.py");
  EXPECT_TRUE(text.ok());
  std::string s = *text;
  if (!from.empty()) s.replace(s.find(from), from.size(), to);
  return "Here is the kernel.\n\n```python\n" + s + "```";
}

// A torch fallback: no kernel at all, forward is the reference's own op.
const char* kHack =
    "```python\nimport torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n\n    def forward(self, x):\n        return torch.relu(x)\n```";

class Rl : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    auto ref = testing::cached_python_reference("rl", kScript, {"make"}, std::chrono::seconds(600));
    ASSERT_TRUE(ref.ok()) << ref.status().to_string();
    ref_ = *ref;
  }
  void SetUp() override {
    ASSERT_FALSE(ref_.empty());
    auto tmp = TempDir::create("mc-rl-test");
    ASSERT_TRUE(tmp.ok());
    tmp_.emplace(std::move(*tmp));
  }
  // A task folder holding the named bundled tasks.
  fs::path tasks(const std::vector<std::string>& ids) const {
    fs::path dir = tmp_->path() / "tasks";
    for (const auto& id : ids) {
      fs::create_directories((dir / id).parent_path());
      for (const char* ext : {".py", ".json"})
        fs::copy_file(kSource / "tasks" / (id + ext), dir / (id + ext));
    }
    return dir;
  }
  RlOptions options(const fs::path& out, const fs::path& task_dir) const {
    RlOptions o;
    o.base_checkpoint = ref_ / "model";
    o.tasks = task_dir;
    o.output_dir = out;
    o.samples_per_prompt = 4;
    o.prompts_per_step = 1;
    o.max_turns = 2;
    o.max_new_tokens = 8;
    o.learning_rate = 1e-2;
    o.reward_env_workers = 4;
    o.max_steps = 2;
    o.progress_bar = false;
    o.tensorboard = false;
    o.enable_prime_echo = o.enable_mirrorpop = true;
    o.mirrorpop_update_every = 1;
    o.verifier_cache_dir = fs::path(MUSACODER_BINARY_DIR) / "test-reference" / "rl-build-cache";
    return o;
  }
  static inline fs::path ref_;
  std::optional<TempDir> tmp_;
};

std::vector<nlohmann::json> jsonl(const fs::path& file) {
  std::vector<nlohmann::json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// --- PrimeEcho masks
// ----------------------------------------------------------------------------------------

Trajectory three_turns() {
  Trajectory t;
  t.ids.assign(5 + 3 + 4 + 2 + 3 + 4, 7);  // prompt 5 · resp 3 · tail 4 · resp 2 · tail 3 · resp 4
  t.rollout_logp.assign(t.ids.size(), 0.f);
  const double scores[] = {0.0, 0.2, 0.9};
  const int64_t ranges[][2] = {{5, 8}, {12, 14}, {17, 21}};
  for (int j = 0; j < 3; ++j) {
    TurnRecord r;
    r.begin = ranges[j][0];
    r.end = ranges[j][1];
    r.reward.score = scores[j];
    r.reward.verdict_class = j == 2 ? "ok" : "wrong_answer";
    t.turns.push_back(r);
  }
  return t;
}

TEST(RlCredit, PrimeEchoMasksTokenByTokenOnAThreeTurnSample) {
  Trajectory a = three_turns(), b;
  b.sample = 1;
  b.ids.assign(9, 3);
  b.rollout_logp.assign(9, 0.f);
  TurnRecord rb;
  rb.begin = 5;
  rb.end = 9;
  rb.reward.score = 0.7;
  rb.reward.verdict_class = "ok";
  b.turns.push_back(rb);
  CreditOptions o;  // lesson: gamma 0.7, eta 0.5
  auto c = assign_credit({a, b}, 2, o);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  // r0 = 0 + 0.7·0.5·(0.2 + 0.9) = 0.385, r1 = 0.5·0.2 = 0.1, r2 = 0.5·0.9 = 0.45.
  EXPECT_NEAR((*c)[0].turn_reward[0], 0.385, 1e-12);
  EXPECT_NEAR((*c)[0].turn_reward[1], 0.1, 1e-12);
  EXPECT_NEAR((*c)[0].turn_reward[2], 0.45, 1e-12);
  // Turn 1 group: {0.385, 0.7}: GRPO (sample std) gives ∓1/√2; turns 2 and 3 were reached by one sample only.
  const double a0 = -1.0 / std::sqrt(2.0);
  const std::vector<int> turn = {-1, -1, -1, -1, -1, 0, 0, 0, -1, -1, -1, -1, 1, 1, -1, -1, -1, 2, 2, 2, 2};
  for (std::size_t p = 0; p < turn.size(); ++p) {
    EXPECT_EQ((*c)[0].turn_of_token[p], turn[p]) << "token " << p;
    EXPECT_EQ((*c)[0].mask[p], turn[p] >= 0 ? 1 : 0)
        << "token " << p;  // feedback/prompt tokens: never trained
    EXPECT_NEAR((*c)[0].advantage[p], turn[p] == 0 ? a0 : 0.0, 1e-5) << "token " << p;
  }
  EXPECT_NEAR((*c)[1].advantage[6], -a0, 1e-5);
  o.echo.mode = ::musacoder::rl::PrimeEchoMode::kPaper;  // gradient on the first response only
  auto paper = assign_credit({a, b}, 2, o);
  ASSERT_TRUE(paper.ok());
  for (std::size_t p = 0; p < turn.size(); ++p)
    EXPECT_EQ((*paper)[0].mask[p], turn[p] == 0 ? 1 : 0) << "token " << p;
  a.dropped = true;  // an infra_error trajectory leaves the group: b alone has no baseline
  auto dropped = assign_credit({a, b}, 2, {});
  ASSERT_TRUE(dropped.ok());
  EXPECT_FALSE((*dropped)[1].in_update);
  for (uint8_t m : (*dropped)[0].mask) EXPECT_EQ(m, 0);
}

// --- loss and gradients vs torch
// ----------------------------------------------------------------------------

TEST_F(Rl, OneUpdateLossAndGradientsEqualTorchReference) {
  model::ModelOptions mo;
  auto m = model::load_pretrained(ref_ / "model", mo);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  model::Decoder policy = *m;
  TrainingForward fwd(policy->config());
  torch::manual_seed(3);
  std::vector<RowTokens> rows(3);
  const int lens[] = {14, 9, 12};
  for (int r = 0; r < 3; ++r) {
    for (int t = 0; t < lens[r]; ++t) {
      rows[static_cast<std::size_t>(r)].ids.push_back(static_cast<int32_t>((r * 37 + t * 11) % 380));
      rows[static_cast<std::size_t>(r)].mask.push_back(t >= 4 && t != 8 ? 1 : 0);  // a "feedback" hole at 8
      rows[static_cast<std::size_t>(r)].advantage.push_back(r == 1 ? -0.8 : 0.3 + 0.1 * t);
    }
  }
  TokenBatch batch = make_token_batch(rows, torch::kCPU);
  ForwardShape shape;
  shape.chunk_rows = 5;
  const RowValues logp = score_rows(policy, fwd, rows, shape);
  RowValues old = logp, ref = old;
  for (std::size_t r = 0; r < old.size();
       ++r) {  // behaviour and reference policies differ from the current one
    for (std::size_t t = 0; t < old[r].size(); ++t) {
      old[r][t] += 0.3 * std::sin(static_cast<double>(7 * r + t));
      ref[r][t] -= 0.2 * std::cos(static_cast<double>(3 * r + t));
    }
  }
  ::musacoder::rl::PolicyLossOptions lo;
  lo.clip = {0.2, 0.28};
  lo.kl.coef = 0.04;
  for (auto& p : policy->parameters()) p.mutable_grad() = torch::Tensor();
  ForwardShape one_row = shape;  // a budget below every row: one forward per row
  one_row.micro_batch_tokens = 1;
  auto stats = backward_policy_loss(policy, fwd, rows, batch, logp, old, ref, lo, one_row);
  ASSERT_TRUE(stats.ok()) << stats.status().to_string();
  EXPECT_GT(stats->clip_fraction, 0.0);  // the clipped branch is exercised
  auto grid = [&](const std::vector<double>& v) {
    return torch::tensor(v, torch::kDouble).view({batch.rows, batch.cols});
  };
  std::vector<double> mask(batch.mask.begin(), batch.mask.end()),
      targets(static_cast<std::size_t>(batch.rows * batch.cols), 0);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t t = 0; t + 1 < rows[r].ids.size(); ++t)
      targets[r * static_cast<std::size_t>(batch.cols) + t] = rows[r].ids[t + 1];
  }
  const fs::path in = tmp_->path() / "batch.safetensors", out = tmp_->path() / "ref.safetensors";
  ASSERT_TRUE(save_tensors(in, {{"input_ids", batch.input_ids},
                                {"targets", grid(targets).to(torch::kLong)},
                                {"mask", grid(mask)},
                                {"advantage", grid(batch.advantage)},
                                {"old_logp", grid(to_grid(old, batch))},
                                {"ref_logp", grid(to_grid(ref, batch))},
                                {"hyper", torch::tensor({0.2, 0.28, 0.04}, torch::kDouble)}})
                  .ok());
  ProcessOptions po;
  po.argv = {"python3", kScript.string(), "loss",  "--model",   (ref_ / "model").string(),
             "--batch", in.string(),      "--out", out.string()};
  po.deadline = std::chrono::seconds(300);
  po.env_set = {{"TRANSFORMERS_VERBOSITY", "error"}, {"OMP_NUM_THREADS", "1"}};
  auto pr = run_process(po);
  ASSERT_TRUE(pr.ok() && pr->exit_code == 0) << (pr.ok() ? pr->stderr_text : pr.status().to_string());
  auto expect = load_tensors(out);
  ASSERT_TRUE(expect.ok());
  EXPECT_NEAR(stats->loss, expect->at("loss").item<double>(), 1e-5);
  int compared = 0;
  for (auto& p : policy->named_parameters()) {
    const torch::Tensor& g = expect->at("grad." + p.key());
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_LT((p.value().grad() - g).abs().max().item<double>(), 1e-5) << p.key();
    ++compared;
  }
  EXPECT_GT(compared, 10);
  // The whole batch in one forward gives the same gradients as the three groups.
  std::map<std::string, torch::Tensor> per_row;
  for (auto& p : policy->named_parameters()) {
    per_row[p.key()] = p.value().grad().clone();
    p.value().mutable_grad() = torch::Tensor();
  }
  ASSERT_EQ(micro_batches(rows, shape.micro_batch_tokens).size(), 1u);
  ASSERT_TRUE(backward_policy_loss(policy, fwd, rows, batch, logp, old, ref, lo, shape).ok());
  for (auto& p : policy->named_parameters())
    EXPECT_LT((p.value().grad() - per_row[p.key()]).abs().max().item<double>(), 1e-6) << p.key();
}

TEST(RlUpdate, MicroBatchesKeepRowsInOrderUnderThePaddedTokenBudget) {
  std::vector<RowTokens> rows(4);
  const std::size_t lens[] = {14, 9, 12, 40};  // 13, 8, 11 and 39 predicted positions
  for (std::size_t r = 0; r < 4; ++r) rows[r].ids.assign(lens[r], 1);
  using Groups = std::vector<std::vector<std::size_t>>;
  EXPECT_EQ(micro_batches(rows, 30), (Groups{{0, 1}, {2}, {3}}));  // 2 × 13 fits, 3 × 13 does not; 39 alone
  EXPECT_EQ(micro_batches(rows, 160), (Groups{{0, 1, 2, 3}}));     // 4 × 39
  EXPECT_EQ(micro_batches(rows, 1), (Groups{{0}, {1}, {2}, {3}}));
  EXPECT_TRUE(micro_batches({}, 10).empty());
}

// --- the full loop
// ------------------------------------------------------------------------------------------

TEST_F(Rl, ThreeStepsWithAllComponentsAndAHackScoredZero) {
  RlOptions o = options(tmp_->path() / "run", tasks({"activation/relu", "activation/sigmoid"}));
  o.prompts_per_step = 2;
  o.max_steps = 3;
  o.enable_bdr = true;
  o.bdr_retry_every = 2;
  // relu: sample 1 is a torch fallback; samples 0 and 2 answer correctly at once, and sample 3 too at step 1
  // (group pass rate 0.75 with a mirror equal to the policy: learned, so MirrorPop skips); sigmoid always
  // fails.
  RlHooks hooks;
  const std::string good = solution_with("", "");
  hooks.inject = [&](const std::string& task, int64_t step, int sample,
                     int turn) -> std::optional<std::string> {
    if (task != "activation/relu" || turn != 0) return std::nullopt;
    if (sample == 3 && step > 0) return std::nullopt;
    return sample == 1 ? std::string(kHack) : good;
  };
  auto r = run_rl(o, hooks);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->steps, 3);
  auto m = jsonl(o.output_dir / "metrics.jsonl");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_GT(m[0]["mirrorpop/learned"].get<double>(), 0);  // quiet divergence + group pass rate 0.75
  EXPECT_GT(m[0]["mirrorpop/skipped"].get<double>(), 0);  // the learned-share ceiling drops them
  EXPECT_GT(m[2]["mirrorpop/compute_saved"].get<double>(), 0);
  EXPECT_GT(m[1]["rows/trained"].get<double>(), 0);  // pass rate 0.5: not learned, trained
  EXPECT_GT(m[2]["mirrorpop/samples_seen"].get<double>(), m[0]["mirrorpop/samples_seen"].get<double>());
  EXPECT_GE(m[0]["bdr/buffer_size"].get<double>(), 1);  // sigmoid: every sample failed
  EXPECT_GE(m[2]["bdr/retries"].get<double>(), 1);      // re-sampled as a repair task at step 3
  EXPECT_GT(m[0]["pass_rate/first_turn"].get<double>(), 0);
  EXPECT_GT(m[0]["verdicts/ok"].get<double>(), 0);
  EXPECT_GT(m[0]["verdicts/format_error"].get<double>(), 0);
  for (const auto& s : m) EXPECT_TRUE(std::isfinite(s["loss"].get<double>()));
  int hacks = 0, passes = 0, repairs = 0;
  // The hack's advantage per group: a passing sample's is above it. (Not "above 0": the speed part of the
  // reward is measured, so on a loaded machine one pass can score below its group's mean.)
  std::map<std::string, double> hack_advantage;
  const auto samples = jsonl(o.output_dir / "samples.jsonl");
  const auto group_of = [](const nlohmann::json& s) { return s["step"].dump() + "/" + s["group"].dump(); };
  for (const auto& s : samples) {
    repairs += s["retry"].get<bool>();
    if (s["task"] != "activation/relu" || s["sample"] != 1) continue;
    const auto& t0 = s["turns"][0];
    ++hacks;
    EXPECT_NE(t0["verdict"], "ok");
    EXPECT_EQ(t0["score"].get<double>(), 0.0);
    EXPECT_LE(t0["advantage"].get<double>(), 0.0);
    hack_advantage[group_of(s)] = t0["advantage"].get<double>();
  }
  for (const auto& s : samples) {
    if (s["task"] != "activation/relu" || s["sample"] == 1) continue;
    const auto& t0 = s["turns"][0];
    passes += t0["verdict"] == "ok";
    if (t0["verdict"] == "ok" && hack_advantage.contains(group_of(s))) {
      EXPECT_GT(t0["advantage"].get<double>(), hack_advantage[group_of(s)]) << s.dump();
    }
  }
  EXPECT_EQ(hacks, 3);
  EXPECT_EQ(passes, 7);
  EXPECT_EQ(repairs, 4);  // one retried group of K = 4
  EXPECT_TRUE(fs::exists(o.output_dir / "model.safetensors"));
  EXPECT_TRUE(fs::exists(checkpoint_dir(o.output_dir, 3) / "training_state" / "mirror.safetensors"));
}

TEST_F(Rl, ResumeEqualsUninterrupted) {
  // Deterministic rewards only (a wrong answer that compiles: 0.2; garbage: 0), so both runs see the same.
  const fs::path task_dir = tasks({"activation/relu"});
  const std::string wrong = solution_with("v > 0.0f ? v : 0.0f", "v > 0.0f ? v : 1.0f");
  RlHooks hooks;
  hooks.inject = [&](const std::string&, int64_t, int sample, int turn) -> std::optional<std::string> {
    if (sample == 0 && turn == 0) return wrong;
    return std::nullopt;
  };
  RlOptions a = options(tmp_->path() / "a", task_dir);
  a.max_turns = 1;  // feedback turns quote verifier logs, which need not be byte-identical between runs
  auto ra = run_rl(a, hooks);
  ASSERT_TRUE(ra.ok()) << ra.status().to_string();
  RlOptions b = options(tmp_->path() / "b", task_dir);
  b.max_turns = 1;
  b.stop_after_step = 1;
  ASSERT_TRUE(run_rl(b, hooks).ok());
  b.stop_after_step = 0;
  b.resume_from = b.output_dir;
  auto rb = run_rl(b, hooks);
  ASSERT_TRUE(rb.ok()) << rb.status().to_string();
  auto ma = jsonl(a.output_dir / "metrics.jsonl"), mb = jsonl(b.output_dir / "metrics.jsonl");
  ASSERT_EQ(ma.size(), 2u);
  ASSERT_EQ(mb.size(), 2u);
  EXPECT_GT(ma[0]["rows/trained"].get<double>(),
            0);  // the group had signal: the update really moved the policy
  EXPECT_EQ(ma[1]["loss"], mb[1]["loss"]);
  EXPECT_EQ(ma[1]["mirrorpop/samples_seen"], mb[1]["mirrorpop/samples_seen"]);
  auto wa = load_tensors(a.output_dir / "model.safetensors"),
       wb = load_tensors(b.output_dir / "model.safetensors");
  auto w0 = load_tensors(ref_ / "model" / "model.safetensors");
  ASSERT_TRUE(wa.ok() && wb.ok() && w0.ok());
  double moved = 0;
  for (const auto& [name, t] : *wa) {
    EXPECT_TRUE(torch::equal(t, wb->at(name))) << name;
    moved += (t - w0->at(name)).abs().sum().item<double>();
  }
  EXPECT_GT(moved, 0.0);
}

TEST_F(Rl, ARepairTurnThatWouldNotFitTheContextEndsItsTrajectory) {
  // Every answer is prose without code (format_error, no build), so the feedback turn would follow; a context
  // of prompt + max_new_tokens + 1 has room for the first answer only.
  RlHooks hooks;
  hooks.inject = [](const std::string&, int64_t, int, int) -> std::optional<std::string> {
    return std::string("No code this time.");
  };
  const fs::path task_dir = tasks({"activation/relu"});
  RlOptions probe = options(tmp_->path() / "probe", task_dir);
  probe.max_turns = 1;
  probe.max_steps = 1;
  ASSERT_TRUE(run_rl(probe, hooks).ok());
  const auto first = jsonl(probe.output_dir / "samples.jsonl");
  ASSERT_FALSE(first.empty());
  const int64_t prompt = first[0]["prompt_tokens"].get<int64_t>();
  ASSERT_GT(prompt, 0);

  RlOptions o = options(tmp_->path() / "run", task_dir);
  o.max_steps = 1;
  o.max_turns = 2;
  o.max_model_len = prompt + o.max_new_tokens + 1;
  auto r = run_rl(o, hooks);
  ASSERT_TRUE(r.ok()) << r.status().to_string();  // before: "the prompt has N tokens; the context holds M"
  const auto m = jsonl(o.output_dir / "metrics.jsonl");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0]["turns/context_stops"].get<double>(), 4.0);
  for (const auto& sample : jsonl(o.output_dir / "samples.jsonl")) {
    EXPECT_TRUE(sample["context_stop"].get<bool>()) << sample.dump();
    EXPECT_EQ(sample["turns"].size(), 1u) << sample.dump();
  }
  // With room for the repair turn the same run takes it.
  RlOptions roomy = options(tmp_->path() / "roomy", task_dir);
  roomy.max_steps = 1;
  roomy.max_turns = 2;
  ASSERT_TRUE(run_rl(roomy, hooks).ok());
  for (const auto& sample : jsonl(roomy.output_dir / "samples.jsonl")) {
    EXPECT_FALSE(sample["context_stop"].get<bool>());
    EXPECT_EQ(sample["turns"].size(), 2u) << sample.dump();
  }
}

// --- bad input
// ----------------------------------------------------------------------------------------------

TEST_F(Rl, BadInputFailsClearly) {
  fs::create_directories(tmp_->path() / "empty");
  RlOptions o = options(tmp_->path() / "x", tmp_->path() / "empty");
  auto r = run_rl(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("holds no KernelBench task"), std::string::npos)
      << r.status().to_string();

  o = options(tmp_->path() / "y", tasks({"activation/relu"}));
  o.base_checkpoint = ref_ / "base_no_chat";
  r = run_rl(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no chat template"), std::string::npos) << r.status().to_string();

  o = options(tmp_->path() / "z", tmp_->path() / "tasks");
  o.reward_env = "http://127.0.0.1:9";  // nothing listens on the discard port
  o.verifier_wait_seconds = 2;
  r = run_rl(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("did not answer"), std::string::npos) << r.status().to_string();

  o.reward_env = "grpc://x";
  EXPECT_EQ(run_rl(o).status().code(), StatusCode::kInvalidArgument);
  o.reward_env = "mooreeval";
  o.kv_cache_memory_fraction = 1.0;  // the whole GPU for the KV cache leaves nothing for the update
  r = run_rl(o);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("--kv-cache-memory-fraction"), std::string::npos)
      << r.status().to_string();
}

}  // namespace
}  // namespace musacoder::train::rl
