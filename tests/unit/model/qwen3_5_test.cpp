// Qwen3.5 hybrid pieces without transformers: the config dialect, and the delta rule's two algorithms
// against each other (chunked == recurrent for any chunk size, with an initial state; packed sequences ==
// separate calls; gradients of both forms agree).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/config.h"
#include "model/delta_rule.h"

namespace musacoder::model {
namespace {

using nlohmann::json;

json text_config() {
  return {{"model_type", "qwen3_5_text"}, {"vocab_size", 64},           {"hidden_size", 32},
          {"intermediate_size", 48},      {"num_hidden_layers", 6},     {"num_attention_heads", 2},
          {"num_key_value_heads", 1},     {"head_dim", 16},             {"linear_num_key_heads", 1},
          {"linear_num_value_heads", 2},  {"linear_key_head_dim", 8},   {"linear_value_head_dim", 8}};
}

TEST(Qwen35Config, ParsesBothDialectsWithTransformersDefaults) {
  auto c = parse_config(text_config());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->architecture, Architecture::kQwen35);
  EXPECT_FALSE(c->text_config_nested);
  // full_attention_interval 4 by default: layers 3 is full attention, the others linear.
  ASSERT_EQ(c->layer_types.size(), 6u);
  EXPECT_EQ(c->layer_types[3], LayerType::kFullAttention);
  EXPECT_EQ(c->layer_types[4], LayerType::kLinearAttention);
  EXPECT_EQ(c->rope.partial_rotary_factor, 0.25);
  EXPECT_EQ(c->rope.theta, 10000.0);
  EXPECT_EQ(c->linear.conv_kernel_dim, 4);
  EXPECT_TRUE(c->attn_output_gate);

  json wrapped = {{"model_type", "qwen3_5"}, {"tie_word_embeddings", true}, {"text_config", text_config()}};
  wrapped["text_config"]["full_attention_interval"] = 2;
  wrapped["text_config"]["tie_word_embeddings"] = false;  // transformers reads the outer flag
  wrapped["text_config"]["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e7},
                                               {"partial_rotary_factor", 0.5}, {"mrope_section", {1, 1, 0}},
                                               {"mrope_interleaved", true}};
  c = parse_config(wrapped);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(c->text_config_nested);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_EQ(c->layer_types[1], LayerType::kFullAttention);
  EXPECT_EQ(c->layer_types[2], LayerType::kLinearAttention);
  EXPECT_EQ(c->rope.theta, 1e7);
  EXPECT_EQ(c->rope.mrope_section, (std::vector<int64_t>{1, 1, 0}));
  // Round trip: explicit layer_types replace the interval; the nesting is kept.
  json out = to_json(*c);
  EXPECT_EQ(out["model_type"], "qwen3_5");
  EXPECT_EQ(out["text_config"]["layer_types"][1], "full_attention");
  auto again = parse_config(out);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->layer_types, c->layer_types);
  EXPECT_EQ(again->rope.partial_rotary_factor, 0.5);
}

TEST(Qwen35Config, RejectsWhatTheModelCannotRun) {
  json j = text_config();
  j["linear_num_value_heads"] = 3;  // not a multiple of the key heads (2 after the next line)
  j["linear_num_key_heads"] = 2;
  EXPECT_NE(parse_config(j).status().message().find("multiple"), std::string::npos);
  j = text_config();
  j["layer_types"] = {"linear_attention", "full_attention"};
  EXPECT_NE(parse_config(j).status().message().find("layer_types has 2"), std::string::npos);
  j = text_config();
  j["layer_types"] = {"sliding_attention", "a", "b", "c", "d", "e"};
  EXPECT_NE(parse_config(j).status().message().find("sliding_attention"), std::string::npos);
  j = text_config();
  j["attn_output_gate"] = false;
  EXPECT_NE(parse_config(j).status().message().find("attn_output_gate"), std::string::npos);
  EXPECT_NE(parse_config({{"model_type", "qwen3_5"}}).status().message().find("text_config"), std::string::npos);
  // The dense families still refuse partial RoPE.
  json dense = {{"model_type", "qwen3"}, {"vocab_size", 8}, {"hidden_size", 8}, {"intermediate_size", 8},
                {"num_hidden_layers", 1}, {"num_attention_heads", 2}, {"rope_parameters",
                {{"rope_type", "default"}, {"rope_theta", 1e4}, {"partial_rotary_factor", 0.5}}}};
  EXPECT_NE(parse_config(dense).status().message().find("partial_rotary_factor"), std::string::npos);
}

struct DeltaInputs {
  torch::Tensor q, k, v, g, beta;
};

// B rows, T tokens, Hk = 2 query/key heads serving Hv = 4 value heads, dk = 8, dv = 6.
DeltaInputs random_inputs(int64_t B, int64_t T, uint64_t seed) {
  torch::manual_seed(seed);
  return {torch::randn({B, T, 2, 8}), torch::randn({B, T, 2, 8}), torch::randn({B, T, 4, 6}),
          -torch::rand({B, T, 4}) * 0.5, torch::rand({B, T, 4})};
}

double max_abs(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

TEST(DeltaRule, ChunkedEqualsRecurrentForAnyChunkSizeAndInitialState) {
  DeltaInputs in = random_inputs(2, 37, 1);
  torch::Tensor s0 = torch::randn({2, 4, 8, 6}) * 0.3;
  DeltaRuleOutput ref = recurrent_gated_delta_rule(in.q, in.k, in.v, in.g, in.beta, s0);
  for (int64_t chunk : {1, 4, 16, 64}) {
    DeltaRuleOutput r = chunk_gated_delta_rule(in.q, in.k, in.v, in.g, in.beta, s0, {}, chunk);
    EXPECT_LE(max_abs(r.out, ref.out), 1e-5) << "chunk " << chunk;
    EXPECT_LE(max_abs(r.final_state, ref.final_state), 1e-5) << "chunk " << chunk;
  }
  // Continuing from a final state equals one call over the concatenation.
  DeltaRuleOutput first = chunk_gated_delta_rule(in.q.narrow(1, 0, 20), in.k.narrow(1, 0, 20),
                                                 in.v.narrow(1, 0, 20), in.g.narrow(1, 0, 20),
                                                 in.beta.narrow(1, 0, 20), s0, {}, 8);
  DeltaRuleOutput rest = chunk_gated_delta_rule(in.q.narrow(1, 20, 17), in.k.narrow(1, 20, 17),
                                                in.v.narrow(1, 20, 17), in.g.narrow(1, 20, 17),
                                                in.beta.narrow(1, 20, 17), first.final_state, {}, 8);
  EXPECT_LE(max_abs(torch::cat({first.out, rest.out}, 1), ref.out), 1e-5);
  EXPECT_LE(max_abs(rest.final_state, ref.final_state), 1e-5);
}

TEST(DeltaRule, PackedSequencesRestartTheState) {
  DeltaInputs in = random_inputs(1, 29, 2);
  // Three sequences of 5, 13 and 11 tokens in one row (ids need only differ from their neighbours).
  torch::Tensor seq = torch::cat({torch::full({1, 5}, 7L), torch::full({1, 13}, 3L), torch::full({1, 11}, 7L)}, 1);
  DeltaRuleOutput packed = chunk_gated_delta_rule(in.q, in.k, in.v, in.g, in.beta, {}, seq, 4);
  EXPECT_FALSE(packed.final_state.defined());
  int64_t start = 0;
  for (int64_t len : {5, 13, 11}) {
    auto part = [&](const torch::Tensor& x) { return x.narrow(1, start, len); };
    DeltaRuleOutput alone = recurrent_gated_delta_rule(part(in.q), part(in.k), part(in.v), part(in.g), part(in.beta));
    EXPECT_LE(max_abs(part(packed.out), alone.out), 1e-5) << "sequence at " << start;
    start += len;
  }
  EXPECT_THROW(chunk_gated_delta_rule(in.q, in.k, in.v, in.g, in.beta, torch::zeros({1, 4, 8, 6}), seq),
               c10::Error);
}

TEST(DeltaRule, ChunkedAndRecurrentGradientsAgree) {
  DeltaInputs in = random_inputs(1, 21, 3);
  std::vector<torch::Tensor> leaves{in.q, in.k, in.v, in.g, in.beta};
  auto grads = [&](bool chunked) {
    std::vector<torch::Tensor> xs;
    for (const auto& t : leaves) xs.push_back(t.clone().requires_grad_(true));
    torch::Tensor w = torch::linspace(-1, 1, 21 * 4 * 6).view({1, 21, 4, 6});
    DeltaRuleOutput r = chunked ? chunk_gated_delta_rule(xs[0], xs[1], xs[2], xs[3], xs[4], {}, {}, 8)
                                : recurrent_gated_delta_rule(xs[0], xs[1], xs[2], xs[3], xs[4]);
    (r.out * w).sum().backward();
    std::vector<torch::Tensor> out;
    for (const auto& x : xs) out.push_back(x.grad());
    return out;
  };
  auto a = grads(true), b = grads(false);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_LE(max_abs(a[i], b[i]), 1e-4) << "input " << i;
}

}  // namespace
}  // namespace musacoder::model
