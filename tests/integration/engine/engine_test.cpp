// The engine on tiny random Qwen2 / Qwen3 / Llama checkpoints (fp32, CPU), against transformers and
// against itself: greedy output equals transformers' generate(); raw logprobs equal the teacher-forced
// log-softmax; continuous batching (chunked prefill, arrivals mid-decode, preemption, prefix-shared
// samples) equals one request at a time; sampled frequencies match the truncated softmax (chi-square);
// KV budget, stop strings, rejections, cancellation and the weight-update fence. The reference side is
// engine_reference.py (run once per build tree).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/engine_core.h"
#include "model/checkpoint.h"
#include "support/python_reference.h"

namespace musacoder::engine {
namespace {

namespace fs = std::filesystem;
const fs::path kScript = fs::path(MUSACODER_SOURCE_DIR) / "tests/integration/engine/engine_reference.py";

struct Reference {
  int32_t eos = 0;
  std::vector<std::vector<int32_t>> prompts, greedy;
  std::vector<std::vector<double>> teacher;
};

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    auto ref = testing::cached_python_reference("engine", kScript, {"make"}, std::chrono::seconds(300));
    ASSERT_TRUE(ref.ok()) << ref.status().to_string();
    dir_ = *ref;
  }
  void SetUp() override {
    if (dir_.empty()) GTEST_FAIL() << "no reference (engine_reference.py make failed)";
  }
  static Reference reference(const std::string& name) {
    std::ifstream f(dir_ / name / "ref.json");
    auto j = nlohmann::json::parse(f);
    Reference r;
    r.eos = j["eos"];
    r.prompts = j["prompts"].get<std::vector<std::vector<int32_t>>>();
    r.greedy = j["greedy"].get<std::vector<std::vector<int32_t>>>();
    r.teacher = j["teacher_logprobs"].get<std::vector<std::vector<double>>>();
    return r;
  }
  static std::unique_ptr<Engine> engine(const std::string& name, EngineOptions o = small_options()) {
    auto e = Engine::load(dir_ / name, {}, o);
    EXPECT_TRUE(e.ok()) << e.status().to_string();
    return e.ok() ? std::move(*e) : nullptr;
  }
  static EngineOptions small_options() {
    EngineOptions o;
    o.block_size = 4;  // many blocks per sequence
    o.max_num_seqs = 16;
    o.max_num_batched_tokens = 64;
    return o;
  }
  static inline fs::path dir_;
};

double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b) {
  double d = a.size() == b.size() ? 0 : 1e9;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

Request greedy_request(const std::vector<int32_t>& prompt, int64_t max_new = 24) {
  Request r;
  r.prompt_ids = prompt;
  r.sampling.temperature = 0;
  r.sampling.max_new_tokens = max_new;
  return r;
}

// ---- parity with transformers ----------------------------------------------------------------------------

class EngineParity : public EngineTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(EngineParity, GreedyEqualsTransformersGenerateAndRawLogprobsEqualTeacherForcing) {
  const Reference ref = reference(GetParam());
  auto e = engine(GetParam());
  ASSERT_TRUE(e);
  std::vector<Request> requests;
  for (const auto& p : ref.prompts) requests.push_back(greedy_request(p));
  auto outs = e->generate(requests);  // all four at once: one continuous batch
  for (std::size_t i = 0; i < outs.size(); ++i) {
    ASSERT_TRUE(outs[i].status.ok()) << outs[i].status.to_string();
    const Sample& s = outs[i].samples.at(0);
    EXPECT_EQ(s.token_ids, ref.greedy[i]) << GetParam() << " prompt " << i;
    EXPECT_LE(max_abs_diff(s.raw_logprobs, ref.teacher[i]), 1e-5) << GetParam() << " prompt " << i;
    for (float lp : s.logprobs) EXPECT_EQ(lp, 0.0f);  // greedy: a point mass
    // transformers stops at eos too: then the last token is eos and the reason "stop".
    EXPECT_EQ(s.finish_reason, s.token_ids.back() == ref.eos ? FinishReason::kStop : FinishReason::kLength);
  }
}

INSTANTIATE_TEST_SUITE_P(Tiny, EngineParity, ::testing::Values("qwen2", "qwen3", "llama"));

// ---- continuous batching equals one request at a time ----------------------------------------------------

using Outputs = std::map<uint64_t, RequestOutput>;

std::unique_ptr<EngineCore> core_for(const fs::path& dir, EngineOptions o) {
  auto model = model::load_pretrained(dir);
  EXPECT_TRUE(model.ok());
  auto tok = tokenizer::Tokenizer::load(dir / "tokenizer.json");
  EXPECT_TRUE(tok.ok());
  auto core = EngineCore::create(std::move(*model), std::move(*tok), {}, o);
  EXPECT_TRUE(core.ok()) << core.status().to_string();
  return std::move(*core);
}

void add(EngineCore& core, uint64_t id, const Request& r, Outputs& outs) {
  auto ids = core.check(r);
  ASSERT_TRUE(ids.ok()) << ids.status().to_string();
  Request q = r;
  q.prompt_ids = *ids;
  core.add(id, q, [&outs](const RequestUpdate& u) {
    if (u.finished) outs[u.output.request_id] = u.output;
  });
}

void expect_same_samples(const RequestOutput& a, const RequestOutput& b, const std::string& what) {
  ASSERT_EQ(a.samples.size(), b.samples.size()) << what;
  for (std::size_t i = 0; i < a.samples.size(); ++i) {
    EXPECT_EQ(a.samples[i].token_ids, b.samples[i].token_ids) << what << " sample " << i;
    std::vector<double> raw(b.samples[i].raw_logprobs.begin(), b.samples[i].raw_logprobs.end());
    std::vector<double> lp(b.samples[i].logprobs.begin(), b.samples[i].logprobs.end());
    EXPECT_LE(max_abs_diff(a.samples[i].raw_logprobs, raw), 1e-5) << what << " sample " << i;
    EXPECT_LE(max_abs_diff(a.samples[i].logprobs, lp), 1e-5) << what << " sample " << i;
    EXPECT_EQ(a.samples[i].finish_reason, b.samples[i].finish_reason) << what << " sample " << i;
  }
}

TEST_F(EngineTest, ContinuousBatchingEqualsOneAtATime) {
  const Reference ref = reference("qwen3");
  std::vector<Request> rs(4);
  rs[0] = greedy_request(ref.prompts[0], 30);
  rs[1].prompt_ids = ref.prompts[2];
  rs[1].sampling.temperature = 0.8, rs[1].sampling.top_p = 0.9, rs[1].sampling.seed = 7, rs[1].sampling.n = 3;
  rs[1].sampling.max_new_tokens = 20;
  rs[2].prompt_ids = ref.prompts[3];
  rs[2].sampling.temperature = 1.2, rs[2].sampling.top_k = 20, rs[2].sampling.seed = 3;
  rs[2].sampling.max_new_tokens = 28, rs[2].sampling.repetition_penalty = 1.3;
  rs[3] = greedy_request(ref.prompts[1], 16);
  rs[3].sampling.n = 2;
  // One at a time, each in a fresh engine with room to spare.
  Outputs solo;
  for (std::size_t i = 0; i < rs.size(); ++i) {
    auto core = core_for(dir_ / "qwen3", small_options());
    add(*core, i, rs[i], solo);
    while (core->has_work()) core->step();
  }
  // Together: chunked prefill (8 tokens per step), arrivals mid-decode, and a KV cache of 40 blocks of 4
  // tokens — less than the 54 the four requests need at their longest, so sequences get preempted.
  EngineOptions o = small_options();
  o.max_num_batched_tokens = 8;
  o.kv_cache_gb = 40.0 * 2 * 2 * 4 * 2 * 32 * 4 / (1ull << 30);  // layers * (k, v) * block * kv heads * dim * fp32
  auto core = core_for(dir_ / "qwen3", o);
  Outputs together;
  const std::vector<int> arrive_at_step = {0, 2, 5, 9};
  for (int step = 0; step < 10000 && (step <= 9 || core->has_work()); ++step) {
    for (std::size_t i = 0; i < rs.size(); ++i)
      if (arrive_at_step[i] == step) add(*core, i, rs[i], together);
    core->step();
  }
  ASSERT_EQ(together.size(), rs.size());
  for (std::size_t i = 0; i < rs.size(); ++i) expect_same_samples(together[i], solo[i], "request " + std::to_string(i));
  EXPECT_GT(core->stats().preemptions, 0) << "the cache was meant to be too small for all at once";
  EXPECT_GE(core->stats().max_running, 5);
  // Greedy samples of one prompt are identical; sampled ones differ; sample i of a shared prefill equals a
  // lone request seeded with sample i's seed.
  EXPECT_EQ(solo[3].samples[0].token_ids, solo[3].samples[1].token_ids);
  EXPECT_NE(solo[1].samples[0].token_ids, solo[1].samples[1].token_ids);
  Outputs alone;
  auto single = core_for(dir_ / "qwen3", small_options());
  Request r2 = rs[1];
  r2.sampling.n = 1;
  r2.sampling.seed = sample_seed(7, 2);
  add(*single, 0, r2, alone);
  while (single->has_work()) single->step();
  EXPECT_EQ(alone[0].samples[0].token_ids, solo[1].samples[2].token_ids);
}

// Several decode steps per host round trip (EngineOptions::decode_steps): the same tokens, logprobs, top
// logprobs, stops and finish reasons as one step at a time; the rounds stop short of each request's length,
// tokens drawn after a stop within a round are dropped, a repetition penalty turns rounds off while it runs.
TEST_F(EngineTest, MultiStepDecodeEqualsOneStepAtATime) {
  const Reference ref = reference("qwen3");
  std::vector<Request> rs(4);
  rs[0] = greedy_request(ref.prompts[0], 30);
  rs[0].sampling.stop_token_ids = {ref.greedy[0].at(9)};  // stops inside a round
  rs[1].prompt_ids = ref.prompts[2];
  rs[1].sampling.temperature = 0.8, rs[1].sampling.top_p = 0.9, rs[1].sampling.seed = 7, rs[1].sampling.n = 3;
  rs[1].sampling.max_new_tokens = 27, rs[1].sampling.top_logprobs = 3;
  rs[2].prompt_ids = ref.prompts[3];
  rs[2].sampling.temperature = 1.2, rs[2].sampling.top_k = 20, rs[2].sampling.seed = 3;
  rs[2].sampling.max_new_tokens = 9, rs[2].sampling.repetition_penalty = 1.3;
  rs[3] = greedy_request(ref.prompts[1], 22);
  rs[3].sampling.n = 2;
  auto run = [&](int decode_steps, EngineStats& stats) {
    EngineOptions o = small_options();
    o.decode_steps = decode_steps;
    auto core = core_for(dir_ / "qwen3", o);
    Outputs outs;
    for (std::size_t i = 0; i < rs.size(); ++i) add(*core, i, rs[i], outs);
    for (int step = 0; step < 10000 && core->has_work(); ++step) core->step();
    stats = core->stats();
    return outs;
  };
  EngineStats one_stats, multi_stats;
  Outputs one = run(1, one_stats), multi = run(4, multi_stats);
  ASSERT_EQ(one.size(), rs.size());
  ASSERT_EQ(multi.size(), rs.size());
  for (std::size_t i = 0; i < rs.size(); ++i) {
    expect_same_samples(multi[i], one[i], "request " + std::to_string(i));
    for (std::size_t j = 0; j < one[i].samples.size(); ++j) {
      const auto &a = multi[i].samples[j].top_logprobs, &b = one[i].samples[j].top_logprobs;
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t t = 0; t < a.size(); ++t) {
        ASSERT_EQ(a[t].size(), b[t].size());
        for (std::size_t q = 0; q < a[t].size(); ++q) EXPECT_EQ(a[t][q].token_id, b[t][q].token_id);
      }
      EXPECT_EQ(multi[i].samples[j].text, one[i].samples[j].text);
    }
  }
  EXPECT_EQ(one[0].samples[0].finish_reason, FinishReason::kStop);
  const auto& g = ref.greedy[0];
  const auto first = static_cast<std::size_t>(std::find(g.begin(), g.end(), g[9]) - g.begin());
  EXPECT_EQ(one[0].samples[0].token_ids, std::vector<int32_t>(g.begin(), g.begin() + first + 1));
  EXPECT_EQ(one[1].samples[0].top_logprobs.at(0).size(), 3u);
  EXPECT_EQ(one_stats.multi_step_rounds, 0);
  EXPECT_GT(multi_stats.multi_step_rounds, 0);
  EXPECT_LT(multi_stats.multi_step_rounds, multi_stats.steps);
  EXPECT_EQ(multi_stats.kv_blocks_free, multi_stats.kv_blocks_total);
  EXPECT_EQ(multi_stats.generated_tokens, one_stats.generated_tokens);
}

// ---- sampling -------------------------------------------------------------------------------------------

// The sampling distribution the engine should draw from: softmax(l / T) restricted to the smallest
// top-probability set whose mass reaches top_p (the set keeps a token while the mass before it is < top_p).
std::vector<double> truncated_softmax(const torch::Tensor& logits, double T, double top_p) {
  auto p = (logits.to(torch::kDouble) / T).softmax(0);
  auto [sorted, order] = p.sort(0, true);
  std::vector<double> out(static_cast<std::size_t>(p.size(0)), 0.0);
  double before = 0, kept = 0;
  for (int64_t i = 0; i < p.size(0) && before < top_p; ++i) {
    const double q = sorted[i].item<double>();
    out[static_cast<std::size_t>(order[i].item<int64_t>())] = q;
    before += q, kept += q;
  }
  for (double& q : out) q /= kept;
  return out;
}

// Pearson chi-square of counts against probabilities (bins with expected < 5 pooled); the upper tail
// p-value by the Wilson-Hilferty approximation. A draw outside the support gives p = 0.
double chi_square_p(const std::vector<int64_t>& counts, const std::vector<double>& probs, int64_t n) {
  double chi = 0, pooled_e = 0, pooled_o = 0;
  int bins = 0;
  for (std::size_t v = 0; v < probs.size(); ++v) {
    const double e = probs[v] * static_cast<double>(n);
    if (e == 0 && counts[v] > 0) return 0.0;
    if (e < 5) {
      pooled_e += e, pooled_o += static_cast<double>(counts[v]);
      continue;
    }
    chi += (static_cast<double>(counts[v]) - e) * (static_cast<double>(counts[v]) - e) / e, ++bins;
  }
  if (pooled_e > 0) chi += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e, ++bins;
  const double k = bins - 1;
  const double z = (std::cbrt(chi / k) - (1 - 2 / (9 * k))) / std::sqrt(2 / (9 * k));
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

TEST_F(EngineTest, SampledFrequenciesMatchTheTruncatedSoftmax) {
  const Reference ref = reference("llama");
  auto e = engine("llama");
  ASSERT_TRUE(e);
  auto model = model::load_pretrained(dir_ / "llama");
  ASSERT_TRUE(model.ok());
  torch::NoGradGuard no_grad;
  const auto& prompt = ref.prompts[1];
  auto ids = torch::tensor(std::vector<int64_t>(prompt.begin(), prompt.end())).unsqueeze(0);
  torch::Tensor last = (*model)->forward({ids})[0][-1];
  std::vector<Request> rs;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    Request r;
    r.prompt_ids = prompt;
    r.sampling.temperature = 0.7, r.sampling.top_p = 0.95, r.sampling.seed = 1000 + seed;
    r.sampling.n = 250, r.sampling.max_new_tokens = 1;
    rs.push_back(r);
  }
  std::vector<int64_t> counts(320, 0);
  int64_t n = 0;
  const auto expected = truncated_softmax(last, 0.7, 0.95);
  for (const auto& out : e->generate(rs)) {
    ASSERT_TRUE(out.status.ok()) << out.status.to_string();
    for (const auto& s : out.samples) {
      ++counts[static_cast<std::size_t>(s.token_ids.at(0))], ++n;
      EXPECT_NEAR(s.logprobs[0], std::log(expected[static_cast<std::size_t>(s.token_ids[0])]), 1e-4);
    }
  }
  const double p = chi_square_p(counts, expected, n);
  std::printf("chi-square p-value (T=0.7, top-p 0.95, %ld draws): %.4f\n", static_cast<long>(n), p);
  EXPECT_GT(p, 1e-3);
  // The test has power: the same counts against the untempered softmax are rejected.
  EXPECT_LT(chi_square_p(counts, truncated_softmax(last, 1.0, 1.0), n), 1e-3);
}

// In float64 on both sides, so that what is compared is the bookkeeping (which token, which position,
// which distribution) rather than float32 rounding; the fp32 comparison with transformers is
// EngineParity above.
TEST_F(EngineTest, RawLogprobsOfSampledTokensEqualTeacherForcedForward) {
  const Reference ref = reference("qwen2");
  auto model = model::load_pretrained(dir_ / "qwen2");
  ASSERT_TRUE(model.ok());
  model::Decoder decoder = *model;
  decoder->to(torch::kDouble);
  auto e = Engine::create(decoder, std::nullopt, {ref.eos}, small_options());
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  Request r;
  r.prompt_ids = ref.prompts[2];
  r.sampling.temperature = 0.7, r.sampling.top_p = 0.95, r.sampling.seed = 5, r.sampling.n = 3;
  r.sampling.max_new_tokens = 20;
  auto out = (*e)->generate({r})[0];
  ASSERT_TRUE(out.status.ok());
  torch::NoGradGuard no_grad;
  for (const auto& s : out.samples) {
    std::vector<int64_t> all(r.prompt_ids.begin(), r.prompt_ids.end());
    all.insert(all.end(), s.token_ids.begin(), s.token_ids.end());
    auto logp = decoder->forward({torch::tensor(all).unsqueeze(0)})[0].log_softmax(-1);
    const int64_t P = static_cast<int64_t>(r.prompt_ids.size());
    std::vector<double> teacher;
    for (std::size_t t = 0; t < s.token_ids.size(); ++t)
      teacher.push_back(logp[P - 1 + static_cast<int64_t>(t)][s.token_ids[t]].item<double>());
    EXPECT_LE(max_abs_diff(s.raw_logprobs, teacher), 1e-5) << "sample " << s.index;
    // The sampling logprob is under the tempered, truncated distribution.
    auto expected = truncated_softmax(logp[P - 1], 0.7, 0.95);
    EXPECT_NEAR(s.logprobs[0], std::log(expected[static_cast<std::size_t>(s.token_ids[0])]), 1e-5);
  }
}

// ---- memory, stops, errors --------------------------------------------------------------------------------

TEST_F(EngineTest, RequestOverTheKvBudgetQueuesAndCompletes) {
  const Reference ref = reference("qwen2");
  EngineOptions o = small_options();
  o.kv_cache_gb = 20.0 * 2 * 2 * 4 * 2 * 16 * 4 / (1ull << 30);  // 20 blocks of 4 tokens
  auto e = engine("qwen2", o);
  ASSERT_TRUE(e);
  // Each needs 11 blocks to start and 18 at its end (40 + 30 tokens): the second must wait for the first.
  auto outs = e->generate({greedy_request(ref.prompts[3], 30), greedy_request(ref.prompts[3], 30)});
  for (const auto& out : outs) {
    ASSERT_TRUE(out.status.ok()) << out.status.to_string();
    EXPECT_EQ(out.samples[0].token_ids.size(), 30u);
  }
  EXPECT_EQ(outs[0].samples[0].token_ids, outs[1].samples[0].token_ids);
  EXPECT_EQ(e->stats().max_running, 1);
  // One that could never fit (40 + 100 tokens = 35 blocks) is rejected, not queued forever.
  auto too_big = e->generate({greedy_request(ref.prompts[3], 100)})[0];
  EXPECT_EQ(too_big.status.code(), StatusCode::kInvalidArgument) << too_big.status.to_string();
}

// The first occurrence of `stop` in the text of ids, if it straddles two tokens' texts: the index of the
// token whose text completes it; else nullopt.
std::optional<std::size_t> straddling_end(const tokenizer::Tokenizer& tok, const std::vector<int32_t>& ids,
                                          const std::string& full, const std::string& stop) {
  const std::size_t at = full.find(stop);
  if (at == std::string::npos) return std::nullopt;
  for (std::size_t j = 0; j < ids.size(); ++j) {
    const std::size_t before = tok.decode(std::vector<int32_t>(ids.begin(), ids.begin() + j), true).value().size();
    const std::size_t after = tok.decode(std::vector<int32_t>(ids.begin(), ids.begin() + j + 1), true).value().size();
    if (after >= at + stop.size()) return at < before ? std::optional<std::size_t>(j) : std::nullopt;
  }
  return std::nullopt;
}

bool is_replacement_or_cut(const std::string& s) { return s.empty() || s.find("\xEF\xBF\xBD") != std::string::npos; }

TEST_F(EngineTest, StopStringSplitAcrossTokensStopsRightBeforeIt) {
  const Reference ref = reference("qwen2");
  auto e = engine("qwen2");
  ASSERT_TRUE(e);
  const auto& tok = *e->tokenizer();
  // A stop string made of the last character of one token's text and the first character of the next
  // token's text (both whole UTF-8 characters), whose first occurrence straddles the two.
  std::string stop, full;
  std::size_t stop_token = 0, which = 0;
  for (; which < ref.greedy.size() && stop.empty(); ++which) {
    const auto& ids = ref.greedy[which];
    full = tok.decode(ids, true).value();
    for (std::size_t k = 0; k + 1 < ids.size() && stop.empty(); ++k) {
      const std::string a = tok.decode({ids[k]}, true).value(), b = tok.decode({ids[k + 1]}, true).value();
      if (is_replacement_or_cut(a) || is_replacement_or_cut(b)) continue;
      std::size_t a_start = a.size() - 1;
      while (a_start > 0 && (static_cast<unsigned char>(a[a_start]) & 0xC0) == 0x80) --a_start;
      std::size_t b_len = 1;
      while (b_len < b.size() && (static_cast<unsigned char>(b[b_len]) & 0xC0) == 0x80) ++b_len;
      const std::string candidate = a.substr(a_start) + b.substr(0, b_len);
      if (auto end = straddling_end(tok, ids, full, candidate)) stop = candidate, stop_token = *end;
    }
  }
  ASSERT_FALSE(stop.empty()) << "no stop string straddling two tokens in the greedy outputs";
  --which;
  const auto& ids = ref.greedy[which];
  // The engine's own text without stops (its incremental decoding of broken UTF-8 may differ from a
  // one-shot decode), cut before the stop string's first occurrence, is what the stopped request returns.
  const std::string plain = e->generate({greedy_request(ref.prompts[which])})[0].samples.at(0).text;
  ASSERT_NE(plain.find(stop), std::string::npos);
  Request r = greedy_request(ref.prompts[which]);
  r.sampling.stop = {stop, "a stop string that never occurs"};
  std::string streamed;
  std::promise<RequestOutput> done;
  e->submit(r, [&](const RequestUpdate& u) {
    for (const auto& d : u.deltas) streamed += d.text;
    if (u.finished) done.set_value(u.output);
  });
  const RequestOutput out = done.get_future().get();
  const Sample& s = out.samples.at(0);
  EXPECT_EQ(s.finish_reason, FinishReason::kStop);
  EXPECT_EQ(s.stop_string, stop);
  EXPECT_EQ(s.text, plain.substr(0, plain.find(stop)));
  EXPECT_EQ(streamed, s.text);  // the stream never showed part of the stop string
  EXPECT_EQ(s.token_ids, std::vector<int32_t>(ids.begin(), ids.begin() + stop_token + 1));
  // A stop token id ends generation at that token, which is kept in token_ids but not in the text.
  Request t = greedy_request(ref.prompts[which]);
  t.sampling.stop_token_ids = {ids[5]};
  auto out2 = e->generate({t})[0];
  const std::size_t first = std::find(ids.begin(), ids.end(), ids[5]) - ids.begin();
  EXPECT_EQ(out2.samples[0].token_ids, std::vector<int32_t>(ids.begin(), ids.begin() + first + 1));
  EXPECT_EQ(out2.samples[0].finish_reason, FinishReason::kStop);
  EXPECT_EQ(out2.samples[0].text,
            tok.decode(std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(first)), true).value());
}

TEST_F(EngineTest, BadRequestsAreRejectedWithReasons) {
  const Reference ref = reference("llama");
  auto e = engine("llama");
  ASSERT_TRUE(e);
  std::vector<Request> bad(6, greedy_request(ref.prompts[0]));
  bad[0].prompt_ids = std::vector<int32_t>(300, 5);  // longer than the 256-token context
  bad[1].sampling.n = 10000;
  bad[2].sampling.max_new_tokens = -1;
  bad[3].prompt_ids = {};
  bad[4].prompt_ids = {1, 999};  // outside the vocabulary
  bad[5].sampling.top_p = 0;
  for (const auto& out : e->generate(bad)) {
    EXPECT_EQ(out.status.code(), StatusCode::kInvalidArgument) << out.status.to_string();
    EXPECT_TRUE(out.finished);
  }
  EXPECT_TRUE(e->generate({greedy_request(ref.prompts[0])})[0].status.ok());  // and it still works
}

TEST_F(EngineTest, CancelFinishesTheRequestEarly) {
  const Reference ref = reference("llama");
  auto e = engine("llama");
  ASSERT_TRUE(e);
  std::promise<RequestOutput> done;
  std::atomic<bool> cancelled{false};
  Engine* engine_ptr = e.get();
  e->submit(greedy_request(ref.prompts[0], 200), [&](const RequestUpdate& u) {
    if (!cancelled.exchange(true)) engine_ptr->cancel(u.output.request_id);
    if (u.finished) done.set_value(u.output);
  });
  auto out = done.get_future().get();
  EXPECT_EQ(out.samples[0].finish_reason, FinishReason::kCancelled);
  EXPECT_LT(out.samples[0].token_ids.size(), 200u);
  EXPECT_EQ(e->stats().kv_blocks_free, e->stats().kv_blocks_total);
}

TEST_F(EngineTest, WeightUpdateWaitsForInFlightRequests) {
  const Reference ref = reference("qwen2");
  auto model = model::load_pretrained(dir_ / "qwen2");
  ASSERT_TRUE(model.ok());
  model::Decoder decoder = *model;
  auto created = Engine::create(decoder, std::nullopt, {}, small_options());
  ASSERT_TRUE(created.ok());
  auto& e = *created;
  const Request r = greedy_request(ref.prompts[2], 40);
  const auto before = e->generate({r})[0];
  // A request in flight when the update arrives finishes on the old weights.
  std::promise<void> started;
  std::promise<RequestOutput> done;
  bool first = true;
  e->submit(r, [&](const RequestUpdate& u) {
    if (first) started.set_value(), first = false;
    if (u.finished) done.set_value(u.output);
  });
  started.get_future().wait();
  Status st = e->update_weights([](model::Decoder& m) {
    m->model->embed_tokens->weight.mul_(1.5);  // in place, as an optimizer step
    return Status();
  });
  ASSERT_TRUE(st.ok());
  const auto in_flight = done.get_future().get();
  EXPECT_EQ(in_flight.weight_version, 0u);
  EXPECT_EQ(in_flight.samples[0].token_ids, before.samples[0].token_ids);
  EXPECT_EQ(e->weight_version(), 1u);
  // Later requests see the new weights, without a copy: the engine reads the trainer's tensors.
  const auto after = e->generate({r})[0];
  EXPECT_EQ(after.weight_version, 1u);
  auto fresh = Engine::create(decoder, std::nullopt, {}, small_options());
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ((*fresh)->generate({r})[0].samples[0].token_ids, after.samples[0].token_ids);
  EXPECT_NE(after.samples[0].token_ids, before.samples[0].token_ids);
}

}  // namespace
}  // namespace musacoder::engine
