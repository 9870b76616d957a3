#include "train/common/train_state.h"

#include <algorithm>
#include <regex>

#include "core/files.h"
#include "model/safetensors.h"

namespace musacoder::train {
namespace fs = std::filesystem;
namespace {

// checkpoint-<N> directories of `dir`, ascending by N.
std::vector<std::pair<int64_t, fs::path>> checkpoints(const fs::path& dir) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  static const std::regex kName("checkpoint-([0-9]+)");
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string name = e.path().filename().string();
    if (e.is_directory() && std::regex_match(name, m, kName)) out.emplace_back(std::stoll(m[1].str()), e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool is_run_entry(const std::string& name) {
  return name == kRunMarker || name == "metrics.jsonl" || name == "tensorboard" || name.starts_with("checkpoint-") ||
         name.starts_with(".tmp-checkpoint-") || name.starts_with("model") || name == "adapter_model.safetensors" ||
         name == "adapter_config.json";
}

}  // namespace

Status prepare_output_dir(const fs::path& output_dir, bool overwrite) {
  std::error_code ec;
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(output_dir, ec)) {
    if (is_run_entry(e.path().filename().string())) found.push_back(e.path());
  }
  if (!found.empty() && !overwrite) {
    return failed_precondition("--output-dir " + output_dir.string() + " holds another run or model (" +
                               found.front().filename().string() +
                               "); pass --resume-from to continue it or --overwrite to replace it");
  }
  for (const auto& p : found) MC_RETURN_IF_ERROR(remove_tree(p));
  fs::create_directories(output_dir, ec);
  if (ec) return internal_error("cannot create --output-dir " + output_dir.string() + ": " + ec.message());
  return {};
}

fs::path checkpoint_dir(const fs::path& output_dir, int64_t step) {
  return output_dir / ("checkpoint-" + std::to_string(step));
}

Result<fs::path> begin_checkpoint(const fs::path& output_dir, int64_t step) {
  fs::path tmp = output_dir / (".tmp-checkpoint-" + std::to_string(step));
  MC_RETURN_IF_ERROR(remove_tree(tmp));
  std::error_code ec;
  fs::create_directories(tmp / "training_state", ec);
  if (ec) return internal_error("cannot create " + tmp.string() + ": " + ec.message());
  return tmp;
}

Status commit_checkpoint(const fs::path& tmp, const fs::path& output_dir, int64_t step, int64_t keep_last) {
  const fs::path final_dir = checkpoint_dir(output_dir, step);
  MC_RETURN_IF_ERROR(remove_tree(final_dir));
  std::error_code ec;
  fs::rename(tmp, final_dir, ec);
  if (ec) return internal_error("cannot rename " + tmp.string() + " to " + final_dir.string() + ": " + ec.message());
  auto all = checkpoints(output_dir);
  for (std::size_t i = 0; keep_last > 0 && i + static_cast<std::size_t>(keep_last) < all.size(); ++i) {
    MC_RETURN_IF_ERROR(remove_tree(all[i].second));
  }
  return {};
}

Result<fs::path> resolve_checkpoint(const fs::path& path) {
  std::error_code ec;
  if (fs::exists(path / "training_state" / "trainer_state.json", ec)) return path;
  auto all = checkpoints(path);
  if (all.empty()) return not_found("--resume-from " + path.string() + " is neither a checkpoint nor a run with one");
  return all.back().second;
}

Status copy_tokenizer_files(const fs::path& from, const fs::path& to) {
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
                           "merges.txt", "chat_template.jinja", "chat_template.json", "generation_config.json",
                           "added_tokens.json"}) {
    std::error_code ec;
    if (!fs::exists(from / name, ec)) continue;
    auto text = read_file(from / name, 1u << 30);
    if (!text.ok()) return text.status();
    MC_RETURN_IF_ERROR(write_file_atomic(to / name, *text));
  }
  return {};
}

Status save_tensors(const fs::path& file, const std::vector<std::pair<std::string, torch::Tensor>>& t) {
  try {
    std::vector<std::pair<std::string, torch::Tensor>> cpu;
    for (const auto& [name, x] : t) cpu.emplace_back(name, x.detach().to(torch::kCPU).contiguous());
    return model::write_safetensors(file, cpu);
  } catch (const std::exception& e) {
    return internal_error("writing " + file.string() + ": " + e.what());
  }
}

Result<std::map<std::string, torch::Tensor>> load_tensors(const fs::path& file) {
  auto f = model::SafetensorsFile::open(file);
  if (!f.ok()) return f.status();
  std::map<std::string, torch::Tensor> out;
  for (const auto& [name, entry] : (*f)->entries()) {
    auto t = (*f)->tensor(name);
    if (!t.ok()) return t.status();
    out[name] = t->clone();
  }
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>> rng_state(const torch::Device& device) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  out.emplace_back("cpu", at::globalContext().defaultGenerator(torch::kCPU).get_state());
  if (device.is_cuda()) {
    out.emplace_back(device.str(), at::globalContext().defaultGenerator(device).get_state());
  }
  return out;
}

Status restore_rng_state(const std::map<std::string, torch::Tensor>& state, const torch::Device& device) {
  try {
    for (const auto& [name, t] : state) {
      // A Generator is a handle: the copy sets the default generator's state.
      if (name == "cpu") at::Generator(at::globalContext().defaultGenerator(torch::kCPU)).set_state(t);
      if (device.is_cuda() && name == device.str()) at::Generator(at::globalContext().defaultGenerator(device)).set_state(t);
    }
  } catch (const std::exception& e) {
    return invalid_argument(std::string("restoring the RNG state: ") + e.what());
  }
  return {};
}

fs::path optimizer_state_file(const fs::path& checkpoint, int rank, int world_size) {
  return checkpoint / "training_state" /
         ("optimizer-rank" + std::to_string(rank) + "-of-" + std::to_string(world_size) + ".safetensors");
}

}  // namespace musacoder::train
