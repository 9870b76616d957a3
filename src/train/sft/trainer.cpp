#include "train/sft/trainer.h"

#include <sys/resource.h>
#include <unistd.h>

#include <ATen/DeviceAccelerator.h>

#include <chrono>
#include <cmath>
#include <optional>

#include "core/files.h"
#include "model/checkpoint.h"
#include "train/common/lora.h"
#include "train/common/metrics.h"
#include "train/common/optimizer.h"
#include "train/common/parallel.h"
#include "train/common/schedule.h"
#include "train/common/train_state.h"
#include "train/sft/batch.h"

namespace musacoder::train::sft {
namespace fs = std::filesystem;
namespace {

// Everything a run holds once set up.
struct Run {
  SftOptions o;
  DistEnv env;
  torch::Device device{torch::kCPU};
  std::unique_ptr<DataParallel> dp;
  std::optional<tokenizer::Tokenizer> tok;
  tokenizer::ChatTemplateOptions chat;
  SftDataset train, eval;
  std::optional<model::Decoder> model;
  std::optional<LoraAdapters> lora;
  std::unique_ptr<AdamW> opt;
  std::vector<int> owner;
  std::vector<StepPlan> plan, eval_plan;
  ScheduleOptions schedule;
  std::optional<TrainingForward> forward;
  LossOptions loss;
  int64_t step = 0;  // updates done
  fs::path resume_checkpoint;
  std::optional<MetricsLogger> metrics;
  double flops_per_token_base = 0;  // 6·N
  double peak_flops = 0;
};

Result<torch::Device> resolve_device(const SftOptions& o, const DistEnv& env) {
  if (o.backend == "cpu") return torch::Device(torch::kCPU);
  if (o.backend == "cuda") {
    if (!torch::cuda::is_available()) return unavailable("--backend cuda: CUDA is not available to libtorch");
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
  }
  if (o.backend == "torch_musa") {
    if (!c10::is_privateuse1_backend_registered() || c10::get_privateuse1_backend() != "musa") {
      return unavailable("--backend torch_musa: this libtorch has no MUSA device (torch_musa registers it; run on a "
                         "MUSA machine with torch_musa installed and loaded)");
    }
    return torch::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(env.local_rank));
  }
  return invalid_argument("unknown --backend '" + o.backend + "' (cpu, cuda or torch_musa)");
}

std::vector<int64_t> lengths_of(const SftDataset& d, bool trained) {
  std::vector<int64_t> out;
  for (const auto& e : d.examples) out.push_back(trained ? e.trained_tokens() : static_cast<int64_t>(e.ids.size()));
  return out;
}

Status load_data(Run& r) {
  auto tok = tokenizer::Tokenizer::load(r.o.base_model / "tokenizer.json");
  if (!tok.ok()) return tok.status();
  r.tok.emplace(std::move(*tok));
  auto chat = chat_template_for(r.o.base_model, *r.tok);
  if (!chat.ok()) return chat.status();
  r.chat = *chat;
  SftDataOptions d;
  auto loss_on = parse_loss_on(r.o.loss_on);
  auto too_long = parse_too_long(r.o.too_long);
  if (!loss_on.ok()) return loss_on.status();
  if (!too_long.ok()) return too_long.status();
  d.loss_on = *loss_on;
  d.too_long = *too_long;
  d.max_seq_len = r.o.max_seq_len;
  d.skip_bad_rows = r.o.skip_bad_rows;
  auto train = load_sft_dataset(r.o.dataset, *r.tok, r.chat, d);
  if (!train.ok()) return train.status();
  r.train = std::move(*train);
  if (!r.o.eval_dataset.empty()) {
    auto eval = load_sft_dataset(r.o.eval_dataset, *r.tok, r.chat, d);
    if (!eval.ok()) return eval.status();
    r.eval = std::move(*eval);
  }
  PlanOptions p;
  p.row_capacity = r.o.max_seq_len;
  p.rows_per_micro = std::max<int64_t>(1, (r.o.per_device_batch_tokens > 0 ? r.o.per_device_batch_tokens
                                                                           : r.o.max_seq_len) / r.o.max_seq_len);
  p.micro_per_step = r.o.gradient_accumulation_steps * r.env.world_size;
  p.epochs = r.o.num_train_epochs;
  p.seed = r.o.seed;
  p.pack = r.o.packing;
  if (r.o.max_steps > 0) {  // enough epochs to fill max_steps, then cut
    auto one = plan_steps(lengths_of(r.train, false), lengths_of(r.train, true), {p.row_capacity, p.rows_per_micro,
                          p.micro_per_step, 1, p.seed, p.pack});
    p.epochs = (r.o.max_steps + static_cast<int64_t>(one.size()) - 1) / static_cast<int64_t>(one.size());
  }
  r.plan = plan_steps(lengths_of(r.train, false), lengths_of(r.train, true), p);
  if (r.o.max_steps > 0) r.plan.resize(static_cast<std::size_t>(r.o.max_steps));
  p.epochs = 1;
  p.pack = r.o.packing;
  p.micro_per_step = r.env.world_size;
  if (!r.eval.examples.empty()) r.eval_plan = plan_steps(lengths_of(r.eval, false), lengths_of(r.eval, true), p);
  return {};
}

Status load_model(Run& r) {
  model::ModelOptions mo;
  mo.device = r.device.str();
  mo.dtype = r.o.bf16 ? "bfloat16" : "float32";
  const bool full_from_checkpoint = !r.resume_checkpoint.empty() && r.o.lora_rank == 0;
  auto m = model::load_pretrained(full_from_checkpoint ? r.resume_checkpoint : r.o.base_model, mo);
  if (!m.ok()) return m.status();
  r.model.emplace(std::move(*m));
  (*r.model)->train();
  if (r.o.lora_rank > 0) {
    LoraOptions lo;
    lo.rank = r.o.lora_rank;
    lo.alpha = r.o.lora_alpha;
    lo.targets = r.o.lora_targets;
    auto lora = LoraAdapters::attach(*r.model, lo, r.o.seed);
    if (!lora.ok()) return lora.status();
    r.lora.emplace(std::move(*lora));
    if (!r.resume_checkpoint.empty()) MC_RETURN_IF_ERROR(r.lora->load_peft(r.resume_checkpoint));
  }
  for (const SftDataset* d : {&r.train, &r.eval}) {
    for (const auto& e : d->examples) {
      for (int32_t id : e.ids) {
        if (id >= (*r.model)->config().vocab_size) {
          return invalid_argument("token id " + std::to_string(id) + " (line " + std::to_string(e.line) +
                                  ") is outside the model's vocab_size " +
                                  std::to_string((*r.model)->config().vocab_size) + ": tokenizer and model differ");
        }
      }
    }
  }
  r.forward.emplace((*r.model)->config());
  r.loss.gradient_checkpointing = r.o.gradient_checkpointing;
  const auto& c = (*r.model)->config();
  int64_t params = 0;
  for (const auto& p : (*r.model)->parameters()) params += p.numel();
  if (c.tie_word_embeddings) params += c.vocab_size * c.hidden_size;  // the LM head matmul
  params -= c.vocab_size * c.hidden_size;                             // the embedding lookup is not a matmul
  r.flops_per_token_base = static_cast<double>(params);
  r.peak_flops = r.device.is_cuda() ? 989e12 : 0.0;  // H100/H200 SXM dense bf16
  return {};
}

std::vector<NamedParam> trainable(Run& r) {
  std::vector<NamedParam> out;
  if (r.lora) {
    for (auto& [name, t] : r.lora->named_parameters()) out.push_back({name, t});
    return out;
  }
  for (auto& p : (*r.model)->named_parameters()) {
    if (p.value().requires_grad()) out.push_back({p.key(), p.value()});
  }
  return out;
}

void make_optimizer(Run& r) {
  std::vector<NamedParam> params = trainable(r);
  std::vector<int64_t> numels;
  for (const auto& p : params) numels.push_back(p.param.numel());
  r.owner = r.o.zero1 ? DataParallel::assign_owners(numels, r.env.world_size)
                      : std::vector<int>(params.size(), r.env.rank);
  std::vector<bool> owned;
  for (int o : r.owner) owned.push_back(o == r.env.rank);
  AdamWOptions ao;
  ao.beta1 = r.o.adam_beta1;
  ao.beta2 = r.o.adam_beta2;
  ao.eps = r.o.adam_epsilon;
  ao.weight_decay = r.o.weight_decay;
  ao.one_pass_kernel = r.o.one_pass_adamw;
  r.opt = std::make_unique<AdamW>(std::move(params), ao, std::move(owned));
  auto kind = parse_lr_schedule(r.o.lr_scheduler);
  r.schedule.kind = kind.ok() ? *kind : LrSchedule::kCosine;
  r.schedule.peak_lr = r.o.learning_rate;
  r.schedule.total_steps = static_cast<int64_t>(r.plan.size());
  r.schedule.warmup_steps = warmup_steps_for_ratio(r.o.warmup_ratio, r.schedule.total_steps);
  r.schedule.min_lr_ratio = r.o.min_lr_ratio;
}

TrainingForward::LayerHook layer_hook(Run& r) {
  if (!r.lora) return {};
  LoraAdapters* lora = &*r.lora;
  return [lora](int64_t layer) { lora->materialize_layer(layer); };
}

// --- checkpoints ---------------------------------------------------------------------------------------------

nlohmann::json trainer_state(const Run& r) {
  const StepPlan* next = r.step < static_cast<int64_t>(r.plan.size()) ? &r.plan[static_cast<std::size_t>(r.step)] : nullptr;
  return {{"global_step", r.step},
          {"total_steps", r.plan.size()},
          {"epoch", next ? next->epoch : r.o.num_train_epochs},
          {"data_position", {{"next_step", r.step}, {"epoch", next ? next->epoch : r.o.num_train_epochs},
                             {"examples", r.train.examples.size()}, {"seed", r.o.seed}}},
          {"world_size", r.env.world_size},
          {"config", to_json(r.o)}};
}

// The model files of `dir`: a PEFT adapter with LoRA, else the full model (rank 0 only).
Status save_model_files(Run& r, const fs::path& dir) {
  if (r.env.rank != 0) return {};
  if (r.lora) {
    MC_RETURN_IF_ERROR(r.lora->save_peft(dir, fs::absolute(r.o.base_model).string()));
  } else {
    MC_RETURN_IF_ERROR(model::save_pretrained(*r.model, dir));
  }
  return copy_tokenizer_files(r.o.base_model, dir);
}

Status save_checkpoint(Run& r) {
  fs::path tmp = r.o.output_dir / (".tmp-checkpoint-" + std::to_string(r.step));
  if (r.env.rank == 0) {
    auto t = begin_checkpoint(r.o.output_dir, r.step);
    if (!t.ok()) return t.status();
  }
  r.dp->barrier();
  Status st = save_model_files(r, tmp);
  if (st.ok()) st = save_tensors(optimizer_state_file(tmp, r.env.rank, r.env.world_size), r.opt->state());
  if (st.ok() && r.env.rank == 0) {
    st = save_tensors(tmp / "training_state" / "rng.safetensors", rng_state(r.device));
    if (st.ok()) st = write_file_atomic(tmp / "training_state" / "trainer_state.json", trainer_state(r).dump(2) + "\n");
  }
  r.dp->barrier();  // every rank's shard is written (a failing rank exits and the others time out)
  if (!st.ok()) {
    (void)remove_tree(tmp);
    return internal_error("saving checkpoint " + std::to_string(r.step) + " failed; earlier checkpoints are intact: " +
                          st.message());
  }
  if (r.env.rank == 0) MC_RETURN_IF_ERROR(commit_checkpoint(tmp, r.o.output_dir, r.step, r.o.save_total_limit));
  r.dp->barrier();
  return {};
}

Status restore_state(Run& r) {
  auto state_text = read_file(r.resume_checkpoint / "training_state" / "trainer_state.json");
  if (!state_text.ok()) return state_text.status();
  auto state = nlohmann::json::parse(*state_text, nullptr, false);
  if (state.is_discarded() || !state.contains("global_step")) return invalid_argument("trainer_state.json is damaged");
  if (state.value("world_size", 1) != r.env.world_size) {
    return invalid_argument("the checkpoint was written by " + std::to_string(state.value("world_size", 1)) +
                            " ranks; resume with the same number (ZeRO-1 optimizer shards)");
  }
  if (state["total_steps"].get<std::size_t>() != r.plan.size() ||
      state["data_position"]["examples"].get<std::size_t>() != r.train.examples.size()) {
    return invalid_argument("the checkpoint's data plan differs (dataset, epochs, batch or seed changed)");
  }
  r.step = state["global_step"].get<int64_t>();
  auto opt = load_tensors(optimizer_state_file(r.resume_checkpoint, r.env.rank, r.env.world_size));
  if (!opt.ok()) return opt.status();
  MC_RETURN_IF_ERROR(r.opt->load_state(*opt));
  auto rng = load_tensors(r.resume_checkpoint / "training_state" / "rng.safetensors");
  if (!rng.ok()) return rng.status();
  return restore_rng_state(*rng, r.device);
}

// --- steps ----------------------------------------------------------------------------------------------------

struct StepOutput {
  torch::Tensor loss, grad_norm;  // device scalars
  int64_t tokens = 0, trained = 0;
  double attention_flops = 0;     // Σ per example 6·L·C·len²/2, this rank
};

StepOutput train_step(Run& r, const StepPlan& s) {
  StepOutput out;
  out.loss = torch::zeros({}, torch::TensorOptions().device(r.device).dtype(torch::kFloat));
  const auto& c = (*r.model)->config();
  const double denom = static_cast<double>(std::max<int64_t>(1, s.trained_tokens));
  auto hook = layer_hook(r);
  for (std::size_t i = static_cast<std::size_t>(r.env.rank); i < s.micro_batches.size();
       i += static_cast<std::size_t>(r.env.world_size)) {
    MicroBatch mb = make_micro_batch(r.train.examples, s.micro_batches[i], r.device);
    torch::Tensor loss = micro_batch_loss_sum(*r.model, *r.forward, mb, r.loss, hook) / denom;
    loss.backward();
    r.opt->accumulate_grads();
    out.loss += loss.detach();
    out.tokens += mb.tokens;
    for (const auto& row : s.micro_batches[i].rows) {
      for (int64_t e : row.examples) {
        const double len = static_cast<double>(r.train.examples[static_cast<std::size_t>(e)].ids.size());
        out.attention_flops += 3.0 * static_cast<double>(c.num_hidden_layers * c.hidden_size) * len * len;
      }
    }
  }
  if (r.lora) r.lora->restore();
  std::vector<torch::Tensor> reduce = r.opt->grads();
  reduce.push_back(out.loss);
  r.dp->all_reduce_sum(reduce);
  out.grad_norm = r.opt->clip_grad_norm(r.o.max_grad_norm);
  r.opt->step(learning_rate(r.schedule, r.step));
  if (r.env.world_size > 1 && r.o.zero1) {
    std::vector<torch::Tensor> params;
    for (const auto& p : r.opt->params()) params.push_back(p.param.detach());
    r.dp->broadcast_from_owners(params, r.owner);
  }
  out.trained = s.trained_tokens;
  return out;
}

double evaluate(Run& r) {
  torch::NoGradGuard no_grad;
  torch::Tensor sum = torch::zeros({}, torch::TensorOptions().device(r.device).dtype(torch::kFloat));
  int64_t trained = 0;
  auto hook = layer_hook(r);
  for (const auto& s : r.eval_plan) {
    trained += s.trained_tokens;
    for (std::size_t i = static_cast<std::size_t>(r.env.rank); i < s.micro_batches.size();
         i += static_cast<std::size_t>(r.env.world_size)) {
      MicroBatch mb = make_micro_batch(r.eval.examples, s.micro_batches[i], r.device);
      sum += micro_batch_loss_sum(*r.model, *r.forward, mb, r.loss, hook);
    }
  }
  if (r.lora) r.lora->restore();
  std::vector<torch::Tensor> reduce{sum};
  r.dp->all_reduce_sum(reduce);
  return sum.item<double>() / static_cast<double>(std::max<int64_t>(1, trained));
}

double peak_memory_gib(const torch::Device& device) {
  if (device.is_cuda()) {
    auto stats = at::accelerator::getDeviceStats(device.index());
    return static_cast<double>(stats.allocated_bytes[0].peak) / (1u << 30);
  }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / (1u << 20);  // KiB → GiB (host peak RSS)
}

Status log_step(Run& r, const StepOutput& out, double seconds, std::optional<ProgressBar>& bar) {
  const double loss = out.loss.item<double>(), norm = out.grad_norm.item<double>();  // the step's one host sync
  const double tps = static_cast<double>(out.tokens) / std::max(seconds, 1e-9);     // this rank
  const double flops = 6.0 * r.flops_per_token_base * static_cast<double>(out.tokens) + out.attention_flops;
  Scalars s = {{"loss", loss},
               {"lr", learning_rate(r.schedule, r.step - 1)},
               {"grad_norm", norm},
               {"tokens_per_second", tps * r.env.world_size},
               {"mfu", r.peak_flops > 0 ? flops / seconds / r.peak_flops : 0.0},
               {"peak_memory_gib", peak_memory_gib(r.device)},
               {"epoch", static_cast<double>(r.plan[static_cast<std::size_t>(r.step - 1)].epoch)},
               {"trained_tokens", static_cast<double>(out.trained)}};
  if (bar) bar->update(r.step, {{"loss", loss}, {"lr", s[1].second}, {"tok/s", s[3].second}});
  return r.metrics->log(r.step, "train", s);
}

Status setup(Run& r) {
  auto env = dist_env_from_environment();
  if (!env.ok()) return env.status();
  r.env = *env;
  auto device = resolve_device(r.o, r.env);
  if (!device.ok()) return device.status();
  r.device = *device;
  if (r.device.is_cuda()) at::accelerator::setDeviceIndex(r.device.index());
  torch::manual_seed(r.o.seed);
  if (!r.o.resume_from.empty()) {
    auto ck = resolve_checkpoint(r.o.resume_from);
    if (!ck.ok()) return ck.status();
    r.resume_checkpoint = *ck;
  } else if (r.env.rank == 0) {
    MC_RETURN_IF_ERROR(prepare_output_dir(r.o.output_dir, r.o.overwrite));
  }
  MC_RETURN_IF_ERROR(load_data(r));
  MC_RETURN_IF_ERROR(load_model(r));
  ParallelOptions po;
  po.backend = r.o.dist_backend;
  auto dp = DataParallel::create(r.env, r.device, po);
  if (!dp.ok()) return dp.status();
  r.dp = std::move(*dp);
  make_optimizer(r);
  if (!r.resume_checkpoint.empty()) MC_RETURN_IF_ERROR(restore_state(r));
  if (r.env.rank == 0) {
    std::error_code ec;
    fs::create_directories(r.o.output_dir, ec);
    nlohmann::json marker = {{"command", "train-sft"}, {"config", to_json(r.o)}};
    MC_RETURN_IF_ERROR(write_file_atomic(r.o.output_dir / kRunMarker, marker.dump(2) + "\n"));
    auto m = MetricsLogger::open(r.o.output_dir, r.o.tensorboard);
    if (!m.ok()) return m.status();
    r.metrics.emplace(std::move(*m));
  }
  return {};
}

void print_data_summary(const Run& r) {
  if (r.env.rank != 0) return;
  const SftDataStats& s = r.train.stats;
  std::fprintf(stderr,
               "train-sft: %lld examples (%lld tokens, %lld trained) from %lld rows; %lld bad rows skipped, "
               "%lld truncated, %lld dropped as too long; %zu updates; world size %d%s\n",
               static_cast<long long>(s.examples), static_cast<long long>(s.tokens),
               static_cast<long long>(s.trained_tokens), static_cast<long long>(s.lines),
               static_cast<long long>(s.bad_rows), static_cast<long long>(s.truncated),
               static_cast<long long>(s.dropped_too_long), r.plan.size(), r.env.world_size,
               r.step > 0 ? (", resuming after update " + std::to_string(r.step)).c_str() : "");
  if (s.bad_rows > 0) std::fprintf(stderr, "train-sft: first bad row: %s\n", s.first_bad_row.c_str());
}

Status finish(Run& r) {
  if (r.lora && r.o.lora_merge && r.env.rank == 0) {
    MC_RETURN_IF_ERROR(r.lora->save_peft(r.o.output_dir, fs::absolute(r.o.base_model).string()));
    r.lora->merge();
    MC_RETURN_IF_ERROR(model::save_pretrained(*r.model, r.o.output_dir / "merged"));
    return copy_tokenizer_files(r.o.base_model, r.o.output_dir / "merged");
  }
  return save_model_files(r, r.o.output_dir);
}

Status train_loop(Run& r, SftResult& result) {
  std::optional<ProgressBar> bar;
  if (r.env.rank == 0 && r.o.progress_bar) bar.emplace(r.step, static_cast<int64_t>(r.plan.size()), isatty(2) == 1);
  const auto total = static_cast<int64_t>(r.plan.size());
  const int64_t stop = r.o.stop_after_step > 0 ? std::min(total, r.o.stop_after_step) : total;
  while (r.step < stop) {
    const auto t0 = std::chrono::steady_clock::now();
    StepOutput out = train_step(r, r.plan[static_cast<std::size_t>(r.step)]);
    ++r.step;
    if (r.env.rank == 0 && (r.step % std::max<int64_t>(1, r.o.logging_steps) == 0 || r.step == stop)) {
      if (r.device.is_cuda()) torch::cuda::synchronize(r.device.index());
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      MC_RETURN_IF_ERROR(log_step(r, out, secs, bar));
      result.final_loss = out.loss.item<double>();
    }
    if (!r.eval_plan.empty() && r.o.eval_steps > 0 && r.step % r.o.eval_steps == 0) {
      const double e = evaluate(r);
      if (r.env.rank == 0) MC_RETURN_IF_ERROR(r.metrics->log(r.step, "eval", {{"loss", e}}));
    }
    if ((r.o.save_steps > 0 && r.step % r.o.save_steps == 0) || r.step == stop) {
      MC_RETURN_IF_ERROR(save_checkpoint(r));
    }
  }
  if (bar) bar->finish();
  result.steps = r.step;
  return {};
}

}  // namespace

nlohmann::json to_json(const SftOptions& o) {
  return {{"base_model", o.base_model.string()},
          {"dataset", o.dataset.string()},
          {"eval_dataset", o.eval_dataset.string()},
          {"output_dir", o.output_dir.string()},
          {"resume_from", o.resume_from.string()},
          {"max_seq_len", o.max_seq_len},
          {"per_device_batch_tokens", o.per_device_batch_tokens},
          {"loss_on", o.loss_on},
          {"too_long", o.too_long},
          {"skip_bad_rows", o.skip_bad_rows},
          {"packing", o.packing},
          {"backend", o.backend},
          {"bf16", o.bf16},
          {"gradient_checkpointing", o.gradient_checkpointing},
          {"num_train_epochs", o.num_train_epochs},
          {"max_steps", o.max_steps},
          {"gradient_accumulation_steps", o.gradient_accumulation_steps},
          {"learning_rate", o.learning_rate},
          {"lr_scheduler", o.lr_scheduler},
          {"warmup_ratio", o.warmup_ratio},
          {"min_lr_ratio", o.min_lr_ratio},
          {"weight_decay", o.weight_decay},
          {"adam_beta1", o.adam_beta1},
          {"adam_beta2", o.adam_beta2},
          {"adam_epsilon", o.adam_epsilon},
          {"one_pass_adamw", o.one_pass_adamw},
          {"max_grad_norm", o.max_grad_norm},
          {"seed", o.seed},
          {"lora_rank", o.lora_rank},
          {"lora_alpha", o.lora_alpha},
          {"lora_targets", o.lora_targets},
          {"lora_merge", o.lora_merge},
          {"dist_backend", o.dist_backend},
          {"zero1", o.zero1},
          {"save_steps", o.save_steps},
          {"save_total_limit", o.save_total_limit},
          {"eval_steps", o.eval_steps},
          {"logging_steps", o.logging_steps}};
}

Status validate(const SftOptions& o) {
  if (o.base_model.empty()) return invalid_argument("--base-model is required");
  if (o.dataset.empty()) return invalid_argument("--dataset is required");
  if (o.output_dir.empty()) return invalid_argument("--output-dir is required");
  if (o.max_seq_len < 2) return invalid_argument("--max-seq-len must be at least 2");
  if (o.gradient_accumulation_steps < 1) return invalid_argument("--gradient-accumulation-steps must be >= 1");
  if (o.num_train_epochs < 1 && o.max_steps <= 0) return invalid_argument("--num-train-epochs must be >= 1");
  if (!(o.learning_rate > 0)) return invalid_argument("--learning-rate must be positive");
  if (o.warmup_ratio < 0 || o.warmup_ratio > 1) return invalid_argument("--warmup-ratio must be in [0, 1]");
  if (o.max_grad_norm < 0) return invalid_argument("--max-grad-norm must be >= 0");
  if (o.lora_rank < 0) return invalid_argument("--lora-rank must be >= 0");
  if (o.bf16 && o.backend == "cpu") return invalid_argument("--bf16 needs a GPU backend (cpu trains in fp32)");
  if (o.stop_after_step < 0 || o.max_steps < 0 || o.save_steps < 0) return invalid_argument("step counts must be >= 0");
  auto s = parse_lr_schedule(o.lr_scheduler);
  if (!s.ok()) return s.status();
  auto l = parse_loss_on(o.loss_on);
  if (!l.ok()) return l.status();
  auto t = parse_too_long(o.too_long);
  return t.ok() ? Status() : t.status();
}

Result<SftResult> run_sft(const SftOptions& options) {
  MC_RETURN_IF_ERROR(validate(options));
  Run r;
  r.o = options;
  try {
    MC_RETURN_IF_ERROR(setup(r));
    print_data_summary(r);
    SftResult result;
    MC_RETURN_IF_ERROR(train_loop(r, result));
    const bool complete = r.step == static_cast<int64_t>(r.plan.size());
    const bool evaluated_last = r.o.eval_steps > 0 && r.step % r.o.eval_steps == 0;
    if (complete && !r.eval_plan.empty() && !evaluated_last) {
      const double e = evaluate(r);
      if (r.env.rank == 0) MC_RETURN_IF_ERROR(r.metrics->log(r.step, "eval", {{"loss", e}}));
    }
    if (complete) MC_RETURN_IF_ERROR(finish(r));
    r.dp->barrier();
    result.final_model = r.o.output_dir;
    return result;
  } catch (const std::exception& e) {
    return internal_error(std::string("training failed: ") + e.what());
  }
}

}  // namespace musacoder::train::sft
