// MC_CHECK: always-on invariant checks. A failure is a bug in this program, not bad input:
// it prints the condition and location and aborts.
#pragma once

#include <cstdio>
#include <cstdlib>

#define MC_CHECK(cond)                                                                   \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "MC_CHECK failed: %s at %s:%d\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)
