// FusedLinear: the parts of a fused projection stay the model's parameters (views of one tensor), an in-place
// update of a part reaches the fused product, a replaced parameter is re-fused, and parts that cannot share
// one tensor run one by one — each against the parts' own Linear forwards.
#include "engine/fused_linear.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace musacoder::engine {
namespace {

std::vector<torch::nn::Linear> projections(bool bias) {
  torch::manual_seed(5);
  return {torch::nn::Linear(torch::nn::LinearOptions(8, 6).bias(bias)),
          torch::nn::Linear(torch::nn::LinearOptions(8, 2).bias(bias)),
          torch::nn::Linear(torch::nn::LinearOptions(8, 2).bias(bias))};
}

void expect_equal_to_parts(const FusedLinear& f, std::vector<torch::nn::Linear>& parts,
                           const torch::Tensor& x) {
  const auto out = f(x);
  ASSERT_EQ(out.size(), parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i)
    EXPECT_TRUE(torch::allclose(out[i], parts[i](x), 1e-6, 1e-6)) << i;
}

TEST(FusedLinear, PartsStayParametersAndInPlaceUpdatesReachTheProduct) {
  auto parts = projections(true);
  const auto* impl = parts[1]->weight.unsafeGetTensorImpl();
  FusedLinear f(parts);
  ASSERT_TRUE(f.fused());
  EXPECT_EQ(parts[1]->weight.unsafeGetTensorImpl(), impl);  // the same parameter, now a view
  EXPECT_TRUE(parts[1]->weight.is_alias_of(parts[0]->weight));
  torch::NoGradGuard no_grad;
  auto x = torch::randn({3, 8});
  expect_equal_to_parts(f, parts, x);
  parts[2]->weight.add_(1.0);  // an optimizer step, in place
  parts[0]->bias.mul_(-2.0);
  EXPECT_FALSE(f.refresh());
  expect_equal_to_parts(f, parts, x);
}

TEST(FusedLinear, AReplacedParameterIsFusedAgain) {
  auto parts = projections(false);
  FusedLinear f(parts);
  torch::NoGradGuard no_grad;
  parts[1]->weight.set_data(torch::randn({2, 8}));  // what Module::to or an assigning load does
  auto x = torch::randn({4, 8});
  EXPECT_TRUE(f.refresh());
  EXPECT_TRUE(parts[1]->weight.is_alias_of(parts[2]->weight));
  expect_equal_to_parts(f, parts, x);
  for (auto& p : parts) p->to(torch::kDouble);
  EXPECT_TRUE(f.refresh());
  expect_equal_to_parts(f, parts, x.to(torch::kDouble));
  EXPECT_FALSE(f.refresh());
}

TEST(FusedLinear, PartsThatCannotShareRunOneByOne) {
  auto parts = projections(true);
  parts[2] = torch::nn::Linear(torch::nn::LinearOptions(8, 2).bias(false));  // bias on some parts only
  FusedLinear f(parts);
  EXPECT_FALSE(f.fused());
  EXPECT_FALSE(parts[0]->weight.is_alias_of(parts[1]->weight));
  torch::NoGradGuard no_grad;
  expect_equal_to_parts(f, parts, torch::randn({2, 8}));
}

}  // namespace
}  // namespace musacoder::engine
