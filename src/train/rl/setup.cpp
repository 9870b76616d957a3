// Setting up a run: tasks, tokenizer and chat template, policy (+ engine), reference, mirror, verifier,
// optimizer and the RL components.
#include <algorithm>
#include <fstream>

#include "core/files.h"
#include "model/checkpoint.h"
#include "train/common/train_state.h"
#include "train/rl/model_copies.h"
#include "train/rl/run_state.h"
#include "train/sft/dataset.h"

namespace musacoder::train::rl {
namespace fs = std::filesystem;
namespace mrl = ::musacoder::rl;
namespace {

void add_ids(const nlohmann::json& v, std::vector<int32_t>& out) {
  if (v.is_number_integer()) out.push_back(v.get<int32_t>());
  if (v.is_array()) {
    for (const auto& x : v) {
      if (x.is_number_integer()) out.push_back(x.get<int32_t>());
    }
  }
}

// The checkpoint's eos ids plus the chat template's end-of-turn token.
std::vector<int32_t> stop_ids(const fs::path& dir, const model::Decoder& m, const tokenizer::Tokenizer& tok) {
  std::vector<int32_t> eos;
  add_ids(m->config().raw.value("eos_token_id", nlohmann::json()), eos);
  std::ifstream gen(dir / "generation_config.json");
  if (gen) {
    auto j = nlohmann::json::parse(gen, nullptr, false);
    if (!j.is_discarded()) add_ids(j.value("eos_token_id", nlohmann::json()), eos);
  }
  for (const char* end : {"<|im_end|>", "<|eot_id|>"}) {
    auto ids = tok.encode(end);
    if (ids.ok() && ids->size() == 1) eos.push_back((*ids)[0]);
  }
  std::sort(eos.begin(), eos.end());
  eos.erase(std::unique(eos.begin(), eos.end()), eos.end());
  return eos;
}

Status load_text_side(RlRun& r) {
  auto tasks = load_task_set(r.o.tasks);
  if (!tasks.ok()) return tasks.status();
  r.tasks = std::move(*tasks);
  auto tok = tokenizer::Tokenizer::load(r.o.base_checkpoint / "tokenizer.json");
  if (!tok.ok()) return tok.status();
  r.tok.emplace(std::move(*tok));
  auto chat = sft::chat_template_for(r.o.base_checkpoint, *r.tok);
  if (!chat.ok()) {
    return failed_precondition("--base-checkpoint " + r.o.base_checkpoint.string() +
                               " has no chat template (its tokenizer has neither <|im_start|> nor "
                               "<|start_header_id|>): RL prompts are chat turns; fine-tune an instruct model or "
                               "run train-sft first (" + chat.status().message() + ")");
  }
  prompts::PromptOptions po;
  auto target = prompts::parse_target(r.o.verifier_backend);
  if (!target.ok()) return target.status();
  po.target = *target;
  r.codec.emplace(*r.tok, *chat, po);
  return {};
}

Status load_models(RlRun& r) {
  model::ModelOptions mo;
  mo.device = r.device.str();
  mo.dtype = r.o.bf16 ? "bfloat16" : "float32";
  // The policy starts from the checkpoint being resumed (its weights), the reference always from the base.
  const fs::path from = r.resume_checkpoint.empty() ? r.o.base_checkpoint : r.resume_checkpoint;
  auto policy = model::load_pretrained(from, mo);
  if (!policy.ok()) return policy.status();
  r.policy.emplace(std::move(*policy));
  for (auto& p : (*r.policy)->parameters()) p.set_requires_grad(true);
  r.forward.emplace((*r.policy)->config());
  r.shape.micro_batch_tokens = r.o.update_batch_tokens;
  r.shape.checkpoint = r.o.gradient_checkpointing;
  if (r.o.kl_coef > 0) {
    auto ref = model::load_pretrained(r.o.base_checkpoint, mo);
    if (!ref.ok()) return ref.status();
    r.reference.emplace(std::move(*ref));
    for (auto& p : (*r.reference)->parameters()) p.set_requires_grad(false);
  }
  engine::EngineOptions eo;
  eo.kv_cache_gb = r.o.kv_cache_gb;
  eo.kv_cache_memory_fraction = r.o.kv_cache_memory_fraction;
  eo.max_model_len = r.o.max_model_len;
  // The update writes the weights in place (AdamW, the bf16 copy of its fp32 masters, MirrorPop's copies), so
  // graphs captured in one step decode with the next step's weights (EngineCuda.GraphsCapturedBeforeAnInPlace…).
  eo.cuda_graphs = r.o.rollout_cuda_graphs;
  auto engine_tok = tokenizer::Tokenizer::load(r.o.base_checkpoint / "tokenizer.json");  // the engine owns its copy
  if (!engine_tok.ok()) return engine_tok.status();
  auto stops = stop_ids(from, *r.policy, *r.tok);
  auto engine = engine::Engine::create(*r.policy, std::move(*engine_tok), std::move(stops), eo);
  if (!engine.ok()) return engine.status();
  r.engine = std::move(*engine);
  return {};
}

Status make_components(RlRun& r) {
  std::vector<NamedParam> params;
  for (auto& p : (*r.policy)->named_parameters()) params.push_back({p.key(), p.value()});
  AdamWOptions ao;
  ao.weight_decay = r.o.weight_decay;
  ao.one_pass_kernel = r.o.one_pass_adamw;
  r.opt = std::make_unique<AdamW>(std::move(params), ao);
  if (r.o.enable_bdr) {
    mrl::RetryBufferOptions bo;
    bo.capacity = static_cast<std::size_t>(r.o.bdr_buffer_size);
    bo.retry_every = static_cast<std::size_t>(r.o.bdr_retry_every);
    bo.max_stale_epochs = static_cast<std::size_t>(r.o.bdr_max_stale_epochs);
    bo.max_retries_per_step = static_cast<std::size_t>(std::max<int64_t>(1, r.o.bdr_max_retries_per_step));
    bo.seed = r.o.seed;
    auto b = mrl::RetryBuffer::create(bo);
    if (!b.ok()) return invalid_argument("BDR: " + b.status().message());
    r.bdr.emplace(std::move(b).value());
  }
  if (r.o.enable_mirrorpop) {
    mrl::MirrorPopOptions mo;
    mo.tau = r.o.mirrorpop_tau;
    mo.seed = r.o.seed;
    auto p = mrl::MirrorPop::create(mo);
    if (!p.ok()) return invalid_argument("MirrorPop: " + p.status().message());
    r.pop.emplace(std::move(p).value());
    auto e = mrl::EmaSchedule::create({0, static_cast<std::size_t>(std::max<int64_t>(1, r.o.mirrorpop_update_every)),
                                       r.o.mirrorpop_decay});
    if (!e.ok()) return invalid_argument("MirrorPop EMA: " + e.status().message());
    r.ema.emplace(std::move(e).value());
    if (r.o.mirrorpop_mode == "lesson") {
      r.mirror.emplace(clone_decoder(*r.policy, r.o.mirrorpop_ema == "cpu" ? torch::Device(torch::kCPU) : r.device));
    }
  }
  RewardEnvOptions ro;
  ro.endpoint = r.o.reward_env;
  ro.backend = r.o.verifier_backend;
  ro.workers = r.o.reward_env_workers;
  ro.run_slots = r.o.reward_env_run_slots;
  ro.wait_seconds = r.o.verifier_wait_seconds;
  ro.seed = r.o.seed;
  ro.build_path = r.o.verifier_build_path;
  ro.cache_dir = r.o.verifier_cache_dir.empty() ? r.o.output_dir / "build-cache" : r.o.verifier_cache_dir;
  auto env = RewardEnv::create(ro);
  if (!env.ok()) return env.status();
  r.rewards = std::move(*env);
  return {};
}

Result<torch::Device> resolve_device(const std::string& d) {
  if (d == "cpu") return torch::Device(torch::kCPU);
  if (d == "cuda") {
    if (!torch::cuda::is_available()) return unavailable("--device cuda: CUDA is not available to libtorch");
    return torch::Device(torch::kCUDA, 0);
  }
  return invalid_argument("--device must be cpu or cuda, not '" + d + "'");
}

}  // namespace

Status setup_run(RlRun& r) {
  auto device = resolve_device(r.o.device);
  if (!device.ok()) return device.status();
  r.device = *device;
  torch::manual_seed(r.o.seed);
  if (!r.o.resume_from.empty()) {
    auto ck = resolve_checkpoint(r.o.resume_from);
    if (!ck.ok()) return ck.status();
    r.resume_checkpoint = *ck;
  } else {
    MC_RETURN_IF_ERROR(prepare_output_dir(r.o.output_dir, r.o.overwrite));
  }
  MC_RETURN_IF_ERROR(load_text_side(r));
  MC_RETURN_IF_ERROR(load_models(r));
  MC_RETURN_IF_ERROR(make_components(r));
  if (!r.resume_checkpoint.empty()) MC_RETURN_IF_ERROR(restore_checkpoint(r));
  nlohmann::json marker = {{"command", "train-rl"}, {"config", to_json(r.o)}};
  MC_RETURN_IF_ERROR(write_file_atomic(r.o.output_dir / kRunMarker, marker.dump(2) + "\n"));
  auto m = MetricsLogger::open(r.o.output_dir, r.o.tensorboard);
  if (!m.ok()) return m.status();
  r.metrics.emplace(std::move(*m));
  return {};
}

}  // namespace musacoder::train::rl
