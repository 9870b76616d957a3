// The runner processes' environment (runner_environment): the runner dir on PYTHONPATH, and OpenMP pools
// passive unless the operator chose otherwise (an idle spinning pool looked like a busy background thread).
#include <gtest/gtest.h>

#include "mooreeval/runner/runner.h"

namespace musacoder::run {
namespace {

TEST(RunnerEnvironment, OpenMpPoolsArePassiveUnlessExtraEnvSaysOtherwise) {
  RunnerOptions o;
  o.runner_dir = "/opt/runner";
  auto env = runner_environment(o);
  EXPECT_EQ(env.at("OMP_WAIT_POLICY"), "PASSIVE");
  EXPECT_EQ(env.at("PYTHONPATH").rfind("/opt/runner", 0), 0u);
  o.extra_env["OMP_WAIT_POLICY"] = "ACTIVE";
  EXPECT_EQ(runner_environment(o).at("OMP_WAIT_POLICY"), "ACTIVE");
}

}  // namespace
}  // namespace musacoder::run
