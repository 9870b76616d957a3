// The lean headers as a lean build's CUDA translation unit sees them when its sources never
// name std::string (MOOREEVAL_LEAN_NO_STRING, src/mooreeval/compile/lean_build.cpp): <string> stays out
// (it is a fifth of nvcc's time for such a unit) and TORCH_CHECK's messages still format.
#define MOOREEVAL_LEAN_NO_STRING
#include "mooreeval_lean/bindings.h"
#include "mooreeval_lean/tensor.h"

// Checked before gtest brings <string> in; _GLIBCXX_STRING is libstdc++'s guard of <string>.
#if defined(_GLIBCXX_STRING)
constexpr bool kStringIncluded = true;
#else
constexpr bool kStringIncluded = false;
#endif

#include <gtest/gtest.h>

namespace {

TEST(LeanNoString, HeadersLeaveStringOut) {
  EXPECT_FALSE(kStringIncluded) << "a lean header (or a standard header it includes) pulls in <string>";
}

TEST(LeanNoString, MessagesFormatWithoutString) {
  const int64_t shape[] = {2, 3};
  EXPECT_STREQ(
      mooreeval_lean::str("n=", 3, " x=", 0.5, " ", c10::kFloat, " ", c10::IntArrayRef(shape, 2)).c_str(),
      "n=3 x=0.5 Float [2, 3]");
  EXPECT_STREQ(
      mooreeval_lean::check_message("n > 0", mooreeval_lean::str()).c_str(),
      "Expected n > 0 to be true, but got false.  (Could this error message be improved?  If so, please "
      "report an enhancement request to PyTorch.)");
}

}  // namespace
