// Config parsing, safetensors I/O and the model's error paths, without Python.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/files.h"
#include "model/checkpoint.h"

namespace musacoder::model {
namespace {

using nlohmann::json;

json tiny_config(const std::string& type = "qwen3") {
  return {{"model_type", type},       {"vocab_size", 32},
          {"hidden_size", 16},        {"intermediate_size", 32},
          {"num_hidden_layers", 1},   {"num_attention_heads", 4},
          {"num_key_value_heads", 2}, {"max_position_embeddings", 64},
          {"rope_theta", 10000.0}};
}

// libtorch's CUDA wheels export their own copy of std::filesystem, whose remove_all crashed a
// program linking mc_model when a TempDir went out of scope (issue 6). TempDir removes through
// remove_tree (nftw) instead; this runs it inside such a program, with a tree deep enough to walk.
TEST(Linking, TempDirRemovesItsTreeInAProgramThatLinksLibtorch) {
  std::filesystem::path where;
  {
    auto dir = TempDir::create("mc-model-linking-");
    ASSERT_TRUE(dir.ok()) << dir.status().to_string();
    where = dir->path();
    std::filesystem::create_directories(where / "a" / "b" / "c");
    std::ofstream(where / "a" / "b" / "c" / "weights.bin") << "x";
    std::ofstream(where / "a" / "top.json") << "{}";
    std::filesystem::create_symlink(where / "a", where / "link");
  }
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(where))) << where;
}

TEST(Config, ParsesBothRopeDialectsAndRejectsUnknowns) {
  auto c = parse_config(tiny_config("qwen2"));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(c->attention_bias);
  EXPECT_FALSE(c->o_proj_bias);
  EXPECT_EQ(c->head_dim, 4);
  json v5 = tiny_config("llama");
  v5.erase("rope_theta");
  v5["rope_parameters"] = {{"rope_type", "llama3"},   {"rope_theta", 5e5},
                           {"factor", 8.0},           {"low_freq_factor", 1.0},
                           {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 32}};
  c = parse_config(v5);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->rope.type, RopeType::kLlama3);
  EXPECT_EQ(c->rope.theta, 5e5);
  // to_json keeps the dialect and round-trips.
  auto again = parse_config(to_json(*c));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->rope.factor, 8.0);

  auto bad = parse_config(tiny_config("mistral"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unsupported model_type 'mistral'"), std::string::npos);
  json j = tiny_config();
  j["num_key_value_heads"] = 3;
  EXPECT_NE(parse_config(j).status().message().find("multiple"), std::string::npos);
  j = tiny_config();
  j["rope_scaling"] = {{"rope_type", "longrope"}, {"factor", 2.0}};
  EXPECT_NE(parse_config(j).status().message().find("longrope"), std::string::npos);
  j = tiny_config();
  j.erase("hidden_size");
  EXPECT_NE(parse_config(j).status().message().find("hidden_size"), std::string::npos);
}

TEST(Safetensors, RoundTripsDtypesAndRejectsTruncatedFiles) {
  auto dir = TempDir::create("mc-st");
  ASSERT_TRUE(dir.ok());
  auto path = dir->path() / "t.safetensors";
  std::vector<std::pair<std::string, torch::Tensor>> tensors = {
      {"bf16", torch::randn({3, 5}).to(torch::kBFloat16)},
      {"f16", torch::randn({7}).to(torch::kHalf)},
      {"f32", torch::randn({2, 3, 4}).transpose(0, 2)},  // non-contiguous input
      {"i64", torch::arange(5)}};
  ASSERT_TRUE(write_safetensors(path, tensors).ok());
  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ((*f)->metadata().at("format"), "pt");
  for (const auto& [name, t] : tensors) {
    auto got = (*f)->tensor(name);
    ASSERT_TRUE(got.ok());
    EXPECT_TRUE(torch::equal(*got, t.contiguous())) << name;
  }
  EXPECT_EQ((*f)->tensor("nope").status().code(), StatusCode::kNotFound);

  auto text = read_file(path);
  ASSERT_TRUE(text.ok());
  for (std::size_t cut : {std::size_t{3}, std::size_t{20}, text->size() - 4}) {
    auto bad = dir->path() / "cut.safetensors";
    ASSERT_TRUE(write_file_atomic(bad, text->substr(0, cut)).ok());
    auto r = SafetensorsFile::open(bad);
    EXPECT_FALSE(r.ok()) << "cut at " << cut;
  }
  EXPECT_FALSE(write_safetensors(path, {{"a", torch::zeros({1})}, {"a", torch::zeros({1})}}).ok());
}

TEST(Checkpoint, NamesMissingUnexpectedAndMisshapedTensors) {
  auto c = parse_config(tiny_config());
  ASSERT_TRUE(c.ok());
  Decoder model(*c);
  auto dir = TempDir::create("mc-ck");
  ASSERT_TRUE(dir.ok());
  ModelOptions o;
  o.max_shard_bytes = 4096;  // several shards
  ASSERT_TRUE(save_pretrained(model, dir->path(), o).ok());
  ASSERT_TRUE(std::filesystem::exists(dir->path() / "model.safetensors.index.json"));
  auto loaded = load_pretrained(dir->path());
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();

  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& p : model->named_parameters()) {
    if (p.key() == "model.norm.weight") continue;  // missing
    torch::Tensor t = p.key() == "lm_head.weight" ? torch::zeros({3, 3}) : p.value().detach();
    tensors.emplace_back(p.key(), t);
  }
  tensors.emplace_back("model.extra.weight", torch::zeros({2}));
  ASSERT_TRUE(write_safetensors_dir(dir->path(), tensors, 1ull << 30).ok());
  auto bad = load_pretrained(dir->path());
  ASSERT_FALSE(bad.ok());
  const std::string& m = bad.status().message();
  EXPECT_NE(m.find("missing (1): model.norm.weight"), std::string::npos) << m;
  EXPECT_NE(m.find("unexpected (1): model.extra.weight"), std::string::npos) << m;
  EXPECT_NE(m.find("shape mismatch (1): lm_head.weight"), std::string::npos) << m;
  EXPECT_FALSE(load_pretrained(dir->path() / "nowhere").ok());
}

TEST(Decoder, PackedPositionsRestartAndBadIdsThrow) {
  torch::Tensor seq = torch::tensor({0, 0, 0, 5, 5, 2}, torch::kLong).unsqueeze(0);
  EXPECT_TRUE(
      torch::equal(packed_position_ids(seq), torch::tensor({0, 1, 2, 0, 1, 0}, torch::kLong).unsqueeze(0)));
  torch::Tensor mask = packed_causal_mask(seq);
  EXPECT_TRUE(mask[0][0][4][3].item<bool>());
  EXPECT_FALSE(mask[0][0][3][2].item<bool>());  // no attention across sequences
  EXPECT_FALSE(mask[0][0][3][4].item<bool>());  // causal
  auto c = parse_config(tiny_config());
  ASSERT_TRUE(c.ok());
  Decoder model(*c);
  torch::NoGradGuard no_grad;
  EXPECT_THROW(model->forward({torch::tensor({{1, 40}}, torch::kLong)}), c10::Error);  // id >= vocab
  EXPECT_THROW(model->forward({torch::tensor({{1.0, 2.0}})}), c10::Error);             // not int64
  EXPECT_EQ(model->forward({torch::tensor({{1, 2, 3}}, torch::kLong)}).sizes(), (c10::IntArrayRef{1, 3, 32}));
}

// Runs are stretches of equal ids within a row; a row boundary always starts a run (rows 0 and 1 both hold id
// 7 at their seam). On the CPU packed_sdpa falls back to the dense mask, so it equals grouped_sdpa with it.
TEST(Decoder, PackedCuSeqlensAndItsDenseFallback) {
  torch::Tensor seq = torch::tensor({{0, 0, 1, 1, 1, 7}, {7, 7, 7, 2, 3, 3}}, torch::kLong);
  EXPECT_TRUE(torch::equal(packed_cu_seqlens(seq), torch::tensor({0, 2, 5, 6, 9, 10, 12}, torch::kInt)));
  EXPECT_TRUE(torch::equal(packed_cu_seqlens(torch::zeros({1, 1}, torch::kLong)),
                           torch::tensor({0, 1}, torch::kInt)));
  EXPECT_EQ(packed_attention_mask(seq, torch::kBFloat16).scalar_type(), torch::kBool);  // CPU: the dense mask
  torch::manual_seed(3);
  const int64_t B = 2, H = 4, Hkv = 2, T = 6, D = 8;
  auto q = torch::randn({B, H, T, D}), k = torch::randn({B, Hkv, T, D}), v = torch::randn({B, Hkv, T, D});
  auto dense = grouped_sdpa(q, k, v, packed_causal_mask(seq), false, 0.3);
  auto packed = grouped_sdpa(q, k, v, packed_cu_seqlens(seq), false, 0.3);
  EXPECT_TRUE(torch::allclose(packed, dense, 1e-6, 1e-6));
  // The first token of every run attends only to itself: its output is its own v row (of its kv head).
  EXPECT_TRUE(torch::allclose(packed.index({1, 0, 3}), v.index({1, 0, 3}), 1e-6, 1e-6));
}

}  // namespace
}  // namespace musacoder::model
