// Checkpoints of an RL run (train_state.h's layout): the policy as a Hugging Face model directory, plus
//   training_state/trainer_state.json   step, data position, seed, resolved config, BDR buffer, MirrorPop counters
//   training_state/optimizer-rank0-of-1.safetensors
//   training_state/rng.safetensors
//   training_state/mirror.safetensors   the MirrorPop mirror's weights (lesson mode)
// The reference is the base checkpoint itself (frozen), recorded by path. Written to a temporary directory and
// renamed into place, so a failed save (disk full) leaves every earlier checkpoint intact.
#include "core/files.h"
#include "model/checkpoint.h"
#include "train/common/train_state.h"
#include "train/rl/run_state.h"

namespace musacoder::train::rl {
namespace fs = std::filesystem;
namespace mrl = ::musacoder::rl;
namespace {

nlohmann::json pop_counters(const mrl::MirrorPopCounters& c) {
  return {{"batches", c.batches}, {"samples_seen", c.samples_seen}, {"learned", c.learned}, {"skipped", c.skipped},
          {"rechecked", c.rechecked}, {"kept_learned", c.kept_learned}, {"ceiling_missed", c.ceiling_missed},
          {"tokens_seen", c.tokens_seen}, {"tokens_skipped", c.tokens_skipped}};
}

mrl::MirrorPopCounters pop_counters(const nlohmann::json& j) {
  mrl::MirrorPopCounters c;
  c.batches = j.at("batches");
  c.samples_seen = j.at("samples_seen");
  c.learned = j.at("learned");
  c.skipped = j.at("skipped");
  c.rechecked = j.at("rechecked");
  c.kept_learned = j.at("kept_learned");
  c.ceiling_missed = j.at("ceiling_missed");
  c.tokens_seen = j.at("tokens_seen");
  c.tokens_skipped = j.at("tokens_skipped");
  return c;
}

nlohmann::json trainer_state(const RlRun& r) {
  nlohmann::json j = {{"global_step", r.step},
                      {"data_position", {{"next_prompt", r.step * r.o.prompts_per_step},
                                         {"tasks", r.tasks.size()}, {"seed", r.o.seed}}},
                      {"reference", fs::absolute(r.o.base_checkpoint).string()},
                      {"config", to_json(r.o)}};
  if (r.bdr) j["bdr"] = nlohmann::json::parse(r.bdr->save_state());
  if (r.pop) j["mirrorpop"] = pop_counters(r.pop->counters());
  return j;
}

std::vector<std::pair<std::string, torch::Tensor>> named_weights(model::Decoder& m) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (auto& p : m->named_parameters()) out.emplace_back(p.key(), p.value().detach());
  return out;
}

Status write_state(RlRun& r, const fs::path& tmp) {
  MC_RETURN_IF_ERROR(model::save_pretrained(*r.policy, tmp));
  MC_RETURN_IF_ERROR(copy_tokenizer_files(r.o.base_checkpoint, tmp));
  MC_RETURN_IF_ERROR(save_tensors(optimizer_state_file(tmp, 0, 1), r.opt->state()));
  MC_RETURN_IF_ERROR(save_tensors(tmp / "training_state" / "rng.safetensors", rng_state(r.device)));
  if (r.mirror) MC_RETURN_IF_ERROR(save_tensors(tmp / "training_state" / "mirror.safetensors", named_weights(*r.mirror)));
  return write_file_atomic(tmp / "training_state" / "trainer_state.json", trainer_state(r).dump(2) + "\n");
}

Status load_mirror(RlRun& r) {
  auto t = load_tensors(r.resume_checkpoint / "training_state" / "mirror.safetensors");
  if (!t.ok()) return t.status();
  torch::NoGradGuard no_grad;
  for (auto& p : (*r.mirror)->named_parameters()) {
    auto it = t->find(p.key());
    if (it == t->end() || it->second.sizes() != p.value().sizes()) {
      return invalid_argument("mirror.safetensors lacks or mis-shapes " + p.key());
    }
    p.value().copy_(it->second);
  }
  return {};
}

}  // namespace

Status save_checkpoint(RlRun& r) {
  auto tmp = begin_checkpoint(r.o.output_dir, r.step);
  if (!tmp.ok()) return tmp.status();
  if (Status st = write_state(r, *tmp); !st.ok()) {
    (void)remove_tree(*tmp);
    return internal_error("saving checkpoint " + std::to_string(r.step) + " failed; earlier checkpoints are intact: " +
                          st.message());
  }
  return commit_checkpoint(*tmp, r.o.output_dir, r.step, r.o.save_total_limit);
}

Status restore_checkpoint(RlRun& r) {
  auto text = read_file(r.resume_checkpoint / "training_state" / "trainer_state.json");
  if (!text.ok()) return text.status();
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.contains("global_step")) return invalid_argument("trainer_state.json is damaged");
  if (j["data_position"].value("tasks", std::size_t{0}) != r.tasks.size()) {
    return invalid_argument("the checkpoint was trained on " + j["data_position"]["tasks"].dump() +
                            " tasks; --tasks now holds " + std::to_string(r.tasks.size()));
  }
  r.step = j["global_step"].get<int64_t>();
  auto opt = load_tensors(optimizer_state_file(r.resume_checkpoint, 0, 1));
  if (!opt.ok()) return opt.status();
  MC_RETURN_IF_ERROR(r.opt->load_state(*opt));
  auto rng = load_tensors(r.resume_checkpoint / "training_state" / "rng.safetensors");
  if (!rng.ok()) return rng.status();
  MC_RETURN_IF_ERROR(restore_rng_state(*rng, r.device));
  if (r.bdr && j.contains("bdr")) {
    auto st = r.bdr->restore_state(j["bdr"].dump());
    if (!st.ok()) return invalid_argument("BDR state: " + st.message());
  }
  try {
    if (r.pop && j.contains("mirrorpop")) r.pop->restore_counters(pop_counters(j["mirrorpop"]));
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument(std::string("MirrorPop state: ") + e.what());
  }
  if (r.mirror) MC_RETURN_IF_ERROR(load_mirror(r));
  return {};
}

Status save_final_model(RlRun& r) {
  MC_RETURN_IF_ERROR(model::save_pretrained(*r.policy, r.o.output_dir));
  return copy_tokenizer_files(r.o.base_checkpoint, r.o.output_dir);
}

}  // namespace musacoder::train::rl
