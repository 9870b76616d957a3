// Sampler: one batched draw per row of logits, on the logits' device, with one device-to-host copy.
//
// Per row (SamplingParams): repetition penalty (HF: a seen token's logit l becomes l/p if l > 0 else l*p),
// temperature, top-k, top-p (keep a sorted token while the mass before it is < top_p), min-p (drop p <
// min_p * p_max); the processed logits' log_softmax is the sampling distribution. The draw is the
// exponential race argmax_v(log q_v - log E_v), E_v = -log u_v, which picks v with probability q_v. The
// uniforms come from a counter-based hash of (row key, v) in 32-bit integer arithmetic on the device, so a
// draw depends only on the row's seed and token index — never on the batch, the device or preemption.
// Greedy rows (temperature 0) take the raw argmax; their sampling logprob is 0 (a point mass).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "engine/engine.h"

namespace musacoder::engine {

struct SamplingRow {
  const SamplingParams* params = nullptr;
  uint64_t seed = 0;      // the sample's seed (request seed mixed with the sample index)
  int64_t step = 0;       // index of the token being drawn among the sample's generated tokens
  const std::vector<int32_t>* history = nullptr;  // prompt + generated ids (repetition penalty only)
};

struct SampledToken {
  int32_t token = 0;
  float logprob = 0;      // under the sampling distribution
  float raw_logprob = 0;  // under the raw model distribution
  std::vector<TopLogprob> top;
};

// The 32-bit key of a (seed, step) pair; the row's uniforms are hash(key, token id).
uint32_t sample_key(uint64_t seed, int64_t step);
// Seed of sample `index` of a request seeded with `seed`.
uint64_t sample_seed(uint64_t seed, int index);
// The uniform in (0, 1), strictly, of each 32-bit hash (int64 values in [0, 2^32)): its top 23 bits, centred.
torch::Tensor uniform_of_hash(const torch::Tensor& h);

// One batched draw still on the device (no sync): what Sampler::to_host turns into SampledTokens.
struct DeviceDraw {
  torch::Tensor token;  // (R) int64: the drawn ids (the next step's input ids in a multi-step decode)
  torch::Tensor host;  // (R, 3 + 2k) float64: token, sampling logprob, raw logprob, k top ids, k top logprobs
  int64_t top = 0;     // k
};

class Sampler {
 public:
  Sampler(int64_t vocab_size, torch::Device device);
  // logits (R, V) float32 on the sampler's device; rows.size() == R. draw() + to_host(): one sync.
  std::vector<SampledToken> sample(const torch::Tensor& logits, const std::vector<SamplingRow>& rows) const;
  // The draw, queued on the device; rows[r].history is read only for a repetition penalty.
  DeviceDraw draw(const torch::Tensor& logits, const std::vector<SamplingRow>& rows) const;
  // Several draws of R rows each (the steps of a multi-step decode) with one device-to-host copy:
  // result[j][r] is draw j's row r; rows gives each row's top_logprobs.
  static std::vector<std::vector<SampledToken>> to_host(const std::vector<DeviceDraw>& draws,
                                                        const std::vector<SamplingRow>& rows);
  // The uniforms (R, V) in (0, 1) for the given keys; exposed for tests.
  torch::Tensor uniforms(const std::vector<uint32_t>& keys) const;

 private:
  torch::Tensor process(const torch::Tensor& logits, const std::vector<SamplingRow>& rows) const;
  int64_t vocab_;
  torch::Device device_;
  torch::Tensor vocab_hash_;  // (V) int64: hash of each token id
};

}  // namespace musacoder::engine
