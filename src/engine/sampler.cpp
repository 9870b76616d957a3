#include "engine/sampler.h"

#include <algorithm>
#include <limits>

#include "core/splitmix.h"

namespace musacoder::engine {
namespace {

constexpr uint32_t kMix1 = 0x85ebca6bu, kMix2 = 0xc2b2ae35u;

uint32_t fmix32(uint32_t x) {
  x ^= x >> 16;
  x *= kMix1;
  x ^= x >> 13;
  x *= kMix2;
  x ^= x >> 16;
  return x;
}

// x * c mod 2^32 for 0 <= x < 2^32 held in int64, without signed overflow: split c into 16-bit halves.
torch::Tensor mul32(const torch::Tensor& x, uint32_t c) {
  const int64_t lo = c & 0xFFFFu, hi = c >> 16;
  return (x * lo + (x * hi).bitwise_and(0xFFFF).bitwise_left_shift(16)).bitwise_and(0xFFFFFFFFLL);
}

torch::Tensor fmix32(torch::Tensor x) {
  x = x.bitwise_xor(x.bitwise_right_shift(16));
  x = mul32(x, kMix1);
  x = x.bitwise_xor(x.bitwise_right_shift(13));
  x = mul32(x, kMix2);
  return x.bitwise_xor(x.bitwise_right_shift(16));
}

torch::Tensor to_device(std::vector<double> v, torch::Device d) {
  return torch::tensor(v, torch::kDouble).to(d).to(torch::kFloat).unsqueeze(1);
}

}  // namespace

uint32_t sample_key(uint64_t seed, int64_t step) {
  uint32_t k = fmix32(static_cast<uint32_t>(step) * 0x9E3779B9u + 0x7F4A7C15u);
  k = fmix32(k ^ static_cast<uint32_t>(seed >> 32));
  return fmix32(k ^ static_cast<uint32_t>(seed));
}

uint64_t sample_seed(uint64_t seed, int index) {
  if (index == 0) return seed;
  return splitmix64_mix(seed + kSplitMixGamma * static_cast<uint64_t>(index));
}

Sampler::Sampler(int64_t vocab_size, torch::Device device) : vocab_(vocab_size), device_(device) {
  vocab_hash_ = fmix32(torch::arange(vocab_size, torch::kLong) + 0x632BE5ABLL).to(device);
}

torch::Tensor Sampler::uniforms(const std::vector<uint32_t>& keys) const {
  std::vector<int64_t> k(keys.begin(), keys.end());
  auto key = torch::tensor(k, torch::kLong).to(device_).unsqueeze(1);
  return uniform_of_hash(fmix32(key.bitwise_xor(vocab_hash_.unsqueeze(0))));
}

torch::Tensor uniform_of_hash(const torch::Tensor& h) {
  // 23 bits: (k + 0.5) / 2^23 is exact in float32 for every k < 2^23, so 0 < u < 1 strictly. (With 24 bits
  // the top value, 16777215.5, rounds to 2^24: u = 1, −log(−log u) = +inf, and a token the truncation had
  // removed won the draw through NaN — one draw in ~340 at a 49K vocabulary.)
  return (h.bitwise_right_shift(9).to(torch::kFloat) + 0.5f) * (1.0f / 8388608.0f);
}

// The processed logits whose log_softmax is the sampling distribution (rows of greedy requests too; unused).
torch::Tensor Sampler::process(const torch::Tensor& logits, const std::vector<SamplingRow>& rows) const {
  const int64_t R = logits.size(0), V = logits.size(1);
  std::vector<double> temp(R), top_p(R), min_p(R), penalty(R), top_k(R);
  bool any_penalty = false, any_sort = false, any_min_p = false;
  for (int64_t r = 0; r < R; ++r) {
    const SamplingParams& p = *rows[static_cast<std::size_t>(r)].params;
    temp[r] = p.temperature > 0 ? p.temperature : 1.0;
    top_p[r] = p.top_p, min_p[r] = p.min_p, penalty[r] = p.repetition_penalty;
    top_k[r] = p.top_k > 0 ? static_cast<double>(std::min<int64_t>(p.top_k, V)) : static_cast<double>(V);
    any_penalty |= p.repetition_penalty != 1.0;
    any_sort |= p.top_p < 1.0 || (p.top_k > 0 && p.top_k < V);
    any_min_p |= p.min_p > 0;
  }
  torch::Tensor x = logits;
  if (any_penalty) {
    std::size_t longest = 1;
    for (const auto& row : rows)
      if (row.params->repetition_penalty != 1.0) longest = std::max(longest, row.history->size());
    std::vector<int64_t> ids(static_cast<std::size_t>(R) * longest, V);  // V: a padding column
    for (int64_t r = 0; r < R; ++r)
      if (rows[r].params->repetition_penalty != 1.0)
        std::copy(rows[r].history->begin(), rows[r].history->end(), ids.begin() + r * longest);
    auto idx = torch::tensor(ids, torch::kLong).view({R, static_cast<int64_t>(longest)}).to(device_);
    auto seen = torch::zeros({R, V + 1}, logits.options().dtype(torch::kBool)).scatter_(1, idx, true).narrow(1, 0, V);
    auto p = to_device(penalty, device_);
    x = torch::where(seen, torch::where(x > 0, x / p, x * p), x);
  }
  x = x / to_device(temp, device_);
  const float neg_inf = -std::numeric_limits<float>::infinity();
  if (any_sort) {
    auto [sorted, order] = x.sort(1, /*descending=*/true);
    auto rank = torch::arange(V, logits.options().dtype(torch::kFloat)).unsqueeze(0);
    sorted = sorted.masked_fill(rank >= to_device(top_k, device_), neg_inf);
    auto probs = sorted.softmax(1);
    auto before = probs.cumsum(1) - probs;
    sorted = sorted.masked_fill((before >= to_device(top_p, device_)).logical_and(rank > 0), neg_inf);
    x = torch::full_like(x, neg_inf).scatter(1, order, sorted);
  }
  if (any_min_p) {
    auto probs = x.softmax(1);
    auto cut = std::get<0>(probs.max(1, true)) * to_device(min_p, device_);
    x = x.masked_fill(probs < cut, neg_inf);
  }
  return x;
}

std::vector<SampledToken> Sampler::sample(const torch::Tensor& logits, const std::vector<SamplingRow>& rows) const {
  if (logits.size(0) == 0) return {};
  return to_host({draw(logits, rows)}, rows)[0];
}

DeviceDraw Sampler::draw(const torch::Tensor& logits, const std::vector<SamplingRow>& rows) const {
  const int64_t R = logits.size(0);
  auto raw = logits.log_softmax(1);
  std::vector<uint32_t> keys;
  std::vector<uint8_t> greedy;
  int kmax = 0;
  bool all_greedy = true;
  for (const auto& row : rows) {
    keys.push_back(sample_key(row.seed, row.step));
    greedy.push_back(row.params->temperature <= 0);
    all_greedy &= row.params->temperature <= 0;
    kmax = std::max(kmax, row.params->top_logprobs);
  }
  auto argmax = raw.argmax(1);
  torch::Tensor token = argmax, samp_lp = torch::zeros({R}, raw.options());
  if (!all_greedy) {
    auto lq = process(logits, rows).log_softmax(1);
    auto score = lq - torch::log(-torch::log(uniforms(keys)));
    auto drawn = score.argmax(1);
    auto is_greedy = torch::tensor(std::vector<int64_t>(greedy.begin(), greedy.end()), torch::kLong)
                         .to(device_).to(torch::kBool);
    token = torch::where(is_greedy, argmax, drawn);
    samp_lp = torch::where(is_greedy, samp_lp, lq.gather(1, token.unsqueeze(1)).squeeze(1));
  }
  std::vector<torch::Tensor> cols = {token.to(torch::kDouble).unsqueeze(1), samp_lp.to(torch::kDouble).unsqueeze(1),
                                     raw.gather(1, token.unsqueeze(1)).to(torch::kDouble)};
  const int64_t k = kmax > 0 ? std::min<int64_t>(kmax, raw.size(1)) : 0;
  if (k > 0) {
    auto [vals, ids] = raw.topk(k, 1);
    cols.push_back(ids.to(torch::kDouble));
    cols.push_back(vals.to(torch::kDouble));
  }
  return {token, torch::cat(cols, 1), k};
}

std::vector<std::vector<SampledToken>> Sampler::to_host(const std::vector<DeviceDraw>& draws,
                                                        const std::vector<SamplingRow>& rows) {
  std::vector<std::vector<SampledToken>> out;
  if (draws.empty()) return out;
  std::vector<torch::Tensor> parts;
  for (const auto& d : draws) parts.push_back(d.host.flatten());
  auto host = torch::cat(parts).to(torch::kCPU).contiguous();  // the one sync
  const double* a = host.data_ptr<double>();
  for (const auto& d : draws) {
    const int64_t R = d.host.size(0), C = d.host.size(1), k = d.top;
    std::vector<SampledToken> step(static_cast<std::size_t>(R));
    for (int64_t r = 0; r < R; ++r, a += C) {
      SampledToken& s = step[static_cast<std::size_t>(r)];
      s.token = static_cast<int32_t>(a[0]);
      s.logprob = static_cast<float>(a[1]);
      s.raw_logprob = static_cast<float>(a[2]);
      for (int64_t j = 0; j < std::min<int64_t>(k, rows[static_cast<std::size_t>(r)].params->top_logprobs);
           ++j)
        s.top.push_back({static_cast<int32_t>(a[3 + j]), static_cast<float>(a[3 + k + j])});
    }
    out.push_back(std::move(step));
  }
  return out;
}

}  // namespace musacoder::engine
