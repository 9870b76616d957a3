// SplitMix64 (Steele, Lea and Flood): the project's one way to turn seeds and counters into well-spread 64-bit
// values that are the same on every platform and standard library.
#pragma once

#include <cstdint>

namespace musacoder {

inline constexpr uint64_t kSplitMixGamma = 0x9E3779B97F4A7C15ull;

// The output function: a bijective mix of z.
inline uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The generator: advances `state` by the gamma and returns the mix of the new state.
inline uint64_t splitmix64_next(uint64_t& state) {
  return splitmix64_mix(state += kSplitMixGamma);
}

}  // namespace musacoder
