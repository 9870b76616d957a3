#include "mooreeval/pipeline/replay.h"

namespace musacoder::eval {

using nlohmann::json;

namespace {

Result<std::uint64_t> seed_at(const json& j, const std::string& what) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<std::int64_t>() >= 0))
    return invalid_argument("replay: config.seeds." + what + " is not a seed");
  return j.get<std::uint64_t>();
}

Result<std::vector<std::uint64_t>> seed_list(const json& seeds, const char* key) {
  if (!seeds.contains(key) || !seeds[key].is_array())
    return invalid_argument(std::string("replay: config.seeds.") + key + " is missing");
  std::vector<std::uint64_t> out;
  for (std::size_t i = 0; i < seeds[key].size(); ++i) {
    auto s = seed_at(seeds[key][i], std::string(key) + "[" + std::to_string(i) + "]");
    if (!s.ok()) return s.status();
    out.push_back(*s);
  }
  return out;
}

// Copies config[key] into `field` when the verdict recorded it.
template <typename T>
void take(const json& config, const char* key, T& field) {
  if (config.contains(key) && (config[key].is_number() || config[key].is_boolean())) field = config[key].get<T>();
}

}  // namespace

Result<EvalSeeds> seeds_of_verdict(const json& verdict) {
  if (!verdict.contains("config") || !verdict["config"].contains("seeds"))
    return invalid_argument("replay: the verdict records no seeds (config.seeds)");
  const json& seeds = verdict["config"]["seeds"];
  EvalSeeds out;
  if (!seeds.contains("init")) return invalid_argument("replay: config.seeds.init is missing");
  auto init = seed_at(seeds["init"], "init");
  if (!init.ok()) return init.status();
  auto recheck = seeds.contains("recheck") ? seed_at(seeds["recheck"], "recheck")
                                           : Result<std::uint64_t>(invalid_argument("replay: config.seeds.recheck is missing"));
  if (!recheck.ok()) return recheck.status();
  auto trials = seed_list(seeds, "trials");
  if (!trials.ok()) return trials.status();
  auto checks = seed_list(seeds, "checks");
  if (!checks.ok()) return checks.status();
  out.init = *init;
  out.recheck = *recheck;
  out.trials = std::move(*trials);
  out.checks = std::move(*checks);
  return out;
}

Result<EvalOptions> options_for_replay(const json& verdict, EvalOptions o) {
  auto seeds = seeds_of_verdict(verdict);
  if (!seeds.ok()) return seeds.status();
  const json& c = verdict["config"];
  if (!c.is_object()) return invalid_argument("replay: the verdict's config is not an object");
  if (c.contains("backend")) {
    auto backend = build::parse_backend(c.value("backend", ""));
    if (!backend.ok()) return backend.status();
    o.backend = *backend;
  }
  if (c.contains("build_path")) {
    auto path = build::parse_build_path(c.value("build_path", ""));
    if (!path.ok()) return path.status();
    o.build_path = *path;
  }
  take(c, "tolerance_rtol", o.rtol);
  take(c, "tolerance_atol", o.atol);
  take(c, "warmup_iters", o.warmup_iters);
  take(c, "benchmark_iters", o.benchmark_iters);
  take(c, "flush_l2", o.flush_l2);
  take(c, "host_head_start", o.host_head_start);
  take(c, "timing_rounds", o.timing_rounds);
  take(c, "stable_malloc", o.stable_malloc);
  take(c, "cpu_threads", o.cpu_threads);
  take(c, "poison_bytes", o.poison_bytes);
  take(c, "gpu_index", o.gpu_index);
  o.replay_seeds = std::move(*seeds);
  return o;
}

}  // namespace musacoder::eval
