#include "train/rl/options.h"

namespace musacoder::train::rl {

nlohmann::json to_json(const RlOptions& o) {
  return {{"base_checkpoint", o.base_checkpoint.string()},
          {"tasks", o.tasks.string()},
          {"output_dir", o.output_dir.string()},
          {"resume_from", o.resume_from.string()},
          {"reward_env", o.reward_env},
          {"reward_env_workers", o.reward_env_workers},
          {"reward_env_run_slots", o.reward_env_run_slots},
          {"verifier_backend", o.verifier_backend},
          {"verifier_wait_seconds", o.verifier_wait_seconds},
          {"infra_retries", o.infra_retries},
          {"verifier_cache_dir", o.verifier_cache_dir.string()},
          {"verifier_build_path", o.verifier_build_path},
          {"samples_per_prompt", o.samples_per_prompt},
          {"prompts_per_step", o.prompts_per_step},
          {"max_turns", o.max_turns},
          {"temperature", o.temperature},
          {"top_p", o.top_p},
          {"max_new_tokens", o.max_new_tokens},
          {"algorithm", o.algorithm},
          {"kl_coef", o.kl_coef},
          {"clip_low", o.clip_low},
          {"clip_high", o.clip_high},
          {"ppo_epochs", o.ppo_epochs},
          {"learning_rate", o.learning_rate},
          {"max_grad_norm", o.max_grad_norm},
          {"weight_decay", o.weight_decay},
          {"one_pass_adamw", o.one_pass_adamw},
          {"max_steps", o.max_steps},
          {"seed", o.seed},
          {"enable_prime_echo", o.enable_prime_echo},
          {"prime_echo_gamma", o.prime_echo_gamma},
          {"prime_echo_eta", o.prime_echo_eta},
          {"prime_echo_mode", o.prime_echo_mode},
          {"enable_bdr", o.enable_bdr},
          {"bdr_buffer_size", o.bdr_buffer_size},
          {"bdr_max_stale_epochs", o.bdr_max_stale_epochs},
          {"bdr_retry_every", o.bdr_retry_every},
          {"bdr_max_retries_per_step", o.bdr_max_retries_per_step},
          {"enable_mirrorpop", o.enable_mirrorpop},
          {"mirrorpop_tau", o.mirrorpop_tau},
          {"mirrorpop_mode", o.mirrorpop_mode},
          {"mirrorpop_ema", o.mirrorpop_ema},
          {"mirrorpop_update_every", o.mirrorpop_update_every},
          {"mirrorpop_decay", o.mirrorpop_decay},
          {"mirrorpop_delta", o.mirrorpop_delta},
          {"device", o.device},
          {"bf16", o.bf16},
          {"lora_rank", o.lora_rank},
          {"lora_alpha", o.lora_alpha},
          {"lora_targets", o.lora_targets},
          {"kv_cache_gb", o.kv_cache_gb},
          {"kv_cache_memory_fraction", o.kv_cache_memory_fraction},
          {"max_model_len", o.max_model_len},
          {"update_batch_tokens", o.update_batch_tokens},
          {"gradient_checkpointing", o.gradient_checkpointing},
          {"save_steps", o.save_steps},
          {"save_total_limit", o.save_total_limit}};
}

namespace {
Status one_of(const std::string& flag, const std::string& v, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (v == a) return {};
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  return invalid_argument("--" + flag + " '" + v + "' is not one of " + list);
}
}  // namespace

Status validate(const RlOptions& o) {
  if (o.base_checkpoint.empty()) return invalid_argument("--base-checkpoint is required");
  if (o.tasks.empty()) return invalid_argument("--tasks is required (a folder of KernelBench-format tasks)");
  if (o.output_dir.empty()) return invalid_argument("--output-dir is required");
  if (o.samples_per_prompt < 2) return invalid_argument("--samples-per-prompt must be >= 2 (a group needs a baseline)");
  if (o.prompts_per_step < 1) return invalid_argument("--prompts-per-step must be >= 1");
  if (o.max_turns < 1) return invalid_argument("--max-turns must be >= 1");
  if (!(o.temperature > 0)) return invalid_argument("--temperature must be > 0 (RL samples)");
  if (!(o.top_p > 0 && o.top_p <= 1)) return invalid_argument("--top-p must be in (0, 1]");
  if (o.max_new_tokens < 1) return invalid_argument("--max-new-tokens must be >= 1");
  if (o.ppo_epochs < 1) return invalid_argument("--ppo-epochs must be >= 1");
  if (!(o.learning_rate > 0)) return invalid_argument("--learning-rate must be positive");
  if (o.kl_coef < 0) return invalid_argument("--kl-coef must be >= 0");
  if (o.clip_low < 0 || o.clip_low >= 1 || o.clip_high < 0) return invalid_argument("--clip-low in [0, 1), --clip-high >= 0");
  if (o.max_steps < 1) return invalid_argument("--max-steps must be >= 1");
  if (o.reward_env_workers < 1) return invalid_argument("--reward-env-workers must be >= 1");
  if (o.reward_env_run_slots < 0)
    return invalid_argument("--reward-env-run-slots must be >= 0 (0: by backend)");
  if (o.update_batch_tokens < 1) return invalid_argument("--update-batch-tokens must be >= 1");
  if (o.kv_cache_gb < 0) return invalid_argument("--kv-cache-gb must be >= 0");
  if (!(o.kv_cache_memory_fraction > 0 && o.kv_cache_memory_fraction < 1)) {
    return invalid_argument("--kv-cache-memory-fraction must be in (0, 1)");
  }
  if (o.bdr_retry_every < 1 || o.bdr_buffer_size < 1 || o.bdr_max_stale_epochs < 1) {
    return invalid_argument("--bdr-retry-every, --bdr-buffer-size and --bdr-max-stale-epochs must be >= 1");
  }
  if (o.lora_rank != 0) {
    return invalid_argument("--lora-rank: train-rl trains full weights for now (the engine generates from the "
                            "decoder's own weights; LoRA needs a merge fence)");
  }
  if (o.bf16 && o.device == "cpu") return invalid_argument("--bf16 needs a GPU --device (cpu trains in fp32)");
  if (o.reward_env != "mooreeval" && !o.reward_env.starts_with("http://")) {
    return invalid_argument("--reward-env must be 'mooreeval' or http://HOST:PORT (the MooreEval service)");
  }
  MC_RETURN_IF_ERROR(one_of("algorithm", o.algorithm, {"grpo", "dr_grpo", "rloo"}));
  MC_RETURN_IF_ERROR(one_of("prime-echo-mode", o.prime_echo_mode, {"lesson", "paper"}));
  MC_RETURN_IF_ERROR(one_of("mirrorpop-mode", o.mirrorpop_mode, {"lesson", "paper"}));
  MC_RETURN_IF_ERROR(one_of("mirrorpop-ema", o.mirrorpop_ema, {"same", "cpu"}));
  MC_RETURN_IF_ERROR(one_of("backend", o.verifier_backend, {"cpu", "cuda", "musa"}));
  MC_RETURN_IF_ERROR(one_of("build-path", o.verifier_build_path, {"auto", "lean", "full"}));
  return {};
}

}  // namespace musacoder::train::rl
