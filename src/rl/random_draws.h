#pragma once
// Internal to mc_rl (not part of the public API): random draws that are identical on every standard
// library. std::mt19937_64's output sequence is fixed by the standard, but uniform_int_distribution,
// uniform_real_distribution and std::shuffle are not, so seeded decisions are built from raw engine
// output here.

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "core/splitmix.h"

namespace musacoder::rl::detail {

// SplitMix64 finaliser: turns (seed, counter) pairs into well-spread engine seeds.
inline std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t counter) {
  return splitmix64_mix(seed ^ (counter + kSplitMixGamma + (seed << 6) + (seed >> 2)));
}

// Uniform double in [0, 1) from the top 53 bits.
inline double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// Uniform integer in [0, n) without modulo bias (rejection sampling). Requires n > 0.
inline std::size_t uniform_index(std::mt19937_64& rng, std::size_t n) {
  const std::uint64_t bound = static_cast<std::uint64_t>(n);
  const std::uint64_t limit = UINT64_MAX - (UINT64_MAX % bound);
  std::uint64_t draw = rng();
  while (draw >= limit) draw = rng();
  return static_cast<std::size_t>(draw % bound);
}

// Moves a uniformly chosen subset of `count` elements to the front of `items` (partial Fisher-Yates).
template <typename T>
void choose_front(std::vector<T>& items, std::size_t count, std::mt19937_64& rng) {
  for (std::size_t i = 0; i < count && i + 1 < items.size(); ++i) {
    const std::size_t j = i + uniform_index(rng, items.size() - i);
    std::swap(items[i], items[j]);
  }
}

}  // namespace musacoder::rl::detail
