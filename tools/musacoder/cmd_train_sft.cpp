// musacoder train-sft: supervised fine-tuning (lesson stage 1) — flags → train::sft::SftOptions → run_sft.
//   musacoder train-sft --base-model DIR --dataset FILE.jsonl --backend cuda|cpu|torch_musa --max-seq-len
//   8192
//       --gradient-checkpointing --bf16 --num-train-epochs 2 --learning-rate 5e-6 --output-dir DIR [...]
// --config FILE.toml sets any flag by its long name (`learning-rate = 5e-6`); flags on the command line win.
// Several processes: `torchrun --no-python --nproc-per-node N musacoder train-sft ...` or --nproc-per-node N
// (this process then starts N ranks of itself with torchrun's environment and waits for them).
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "commands.h"
#include "config_file.h"
#include "train/sft/trainer.h"

extern char** environ;

namespace musacoder::tool {
namespace {

struct TrainSftFlags {
  train::sft::SftOptions o;
  std::string base_model, dataset, eval_dataset, output_dir, resume_from, config_file;
  int nproc_per_node = 1;
};

// This process's command line as given (the launcher re-runs it per rank).
std::vector<std::string> own_command_line() {
  std::vector<std::string> argv;
  std::FILE* f = std::fopen("/proc/self/cmdline", "rb");
  if (f == nullptr) return argv;
  std::string cur;
  for (int c; (c = std::fgetc(f)) != EOF;) {
    if (c == '\0') {
      argv.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(static_cast<char>(c));
    }
  }
  std::fclose(f);
  return argv;
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 29500;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  if (fd >= 0) close(fd);
  return port;
}

// Starts `n` ranks of this program (argv without --nproc-per-node) with torchrun's variables; the first
// failure stops the others. Returns the exit code of the run.
int launch_ranks(const std::vector<std::string>& argv, int n) {
  const std::string port =
      std::getenv("MASTER_PORT") ? std::getenv("MASTER_PORT") : std::to_string(free_port());
  std::vector<pid_t> pids;
  for (int rank = 0; rank < n; ++rank) {
    std::vector<std::string> env_s = {
        "RANK=" + std::to_string(rank),    "LOCAL_RANK=" + std::to_string(rank),
        "WORLD_SIZE=" + std::to_string(n), "LOCAL_WORLD_SIZE=" + std::to_string(n),
        "MASTER_ADDR=127.0.0.1",           "MASTER_PORT=" + port};
    for (char** e = environ; *e != nullptr; ++e) {
      std::string v = *e;
      bool ours = false;
      for (const char* k :
           {"RANK=", "LOCAL_RANK=", "WORLD_SIZE=", "LOCAL_WORLD_SIZE=", "MASTER_ADDR=", "MASTER_PORT="})
        ours = ours || v.starts_with(k);
      if (!ours) env_s.push_back(v);
    }
    std::vector<char*> env, args;
    for (auto& s : env_s) env.push_back(s.data());
    env.push_back(nullptr);
    std::vector<std::string> argv_copy = argv;
    for (auto& s : argv_copy) args.push_back(s.data());
    args.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, args.data(), env.data()) != 0) {
      std::fprintf(stderr, "musacoder train-sft: cannot start rank %d\n", rank);
      for (pid_t p : pids) kill(p, SIGTERM);
      return 3;
    }
    pids.push_back(pid);
  }
  int code = 0;
  for (std::size_t left = pids.size(); left > 0; --left) {
    int status = 0;
    pid_t done = wait(&status);
    const int c = WIFEXITED(status) ? WEXITSTATUS(status) : 3;
    if (c != 0 && code == 0) {
      code = c;
      std::fprintf(stderr, "musacoder train-sft: a rank (pid %d) failed; stopping the others\n", done);
      for (pid_t p : pids)
        if (p != done) kill(p, SIGTERM);
    }
  }
  return code;
}

int run_train_sft(TrainSftFlags& f) {
  if (f.nproc_per_node > 1 && std::getenv("WORLD_SIZE") == nullptr) {
    std::vector<std::string> argv, given = own_command_line();
    for (std::size_t i = 0; i < given.size(); ++i) {
      if (given[i] == "--nproc-per-node") {
        ++i;
        continue;
      }
      if (!given[i].starts_with("--nproc-per-node=")) argv.push_back(given[i]);
    }
    return launch_ranks(argv, f.nproc_per_node);
  }
  signal(SIGXFSZ, SIG_IGN);  // a file-size limit must fail the write (and the save), not kill the process
  f.o.base_model = f.base_model;
  f.o.dataset = f.dataset;
  f.o.eval_dataset = f.eval_dataset;
  f.o.output_dir = f.output_dir;
  f.o.resume_from = f.resume_from;
  auto r = train::sft::run_sft(f.o);
  if (!r.ok()) return fail("train-sft", r.status());
  std::fprintf(stderr, "train-sft: %lld updates; model in %s\n", static_cast<long long>(r->steps),
               r->final_model.c_str());
  return 0;
}

void add_data_flags(CLI::App* s, TrainSftFlags& f) {
  s->add_option("--base-model", f.base_model, "Hugging Face model directory to start from")->required();
  s->add_option("--dataset", f.dataset, "training JSONL (chat messages or prompt/completion)")->required();
  s->add_option("--eval-dataset", f.eval_dataset, "evaluation JSONL");
  s->add_option("--output-dir", f.output_dir, "run directory (checkpoints, metrics, final model)")
      ->required();
  s->add_option("--resume-from", f.resume_from, "checkpoint-N directory or run directory to resume");
  s->add_flag("--overwrite", f.o.overwrite, "replace a run already in --output-dir");
  s->add_option("--max-seq-len", f.o.max_seq_len, "tokens per packed row")->capture_default_str();
  s->add_option("--per-device-batch-tokens", f.o.per_device_batch_tokens,
                "tokens per micro-batch per device (rows = this / max-seq-len; 0 = one row)")
      ->capture_default_str();
  s->add_option("--loss-on", f.o.loss_on, "all-assistant | last-turn | all (every token, prompts included)")
      ->capture_default_str();
  s->add_option("--too-long", f.o.too_long, "truncate | drop examples longer than --max-seq-len")
      ->capture_default_str();
  s->add_flag("--skip-bad-rows", f.o.skip_bad_rows, "skip (and count) malformed lines instead of failing");
  s->add_flag("!--no-packing", f.o.packing, "one example per row");
}

void add_optim_flags(CLI::App* s, TrainSftFlags& f) {
  s->add_option("--backend", f.o.backend, "cpu | cuda | torch_musa")->capture_default_str();
  s->add_flag("--bf16", f.o.bf16, "bf16 parameters with fp32 master weights and AdamW state");
  s->add_flag("--gradient-checkpointing", f.o.gradient_checkpointing, "recompute each layer in backward");
  s->add_option("--num-train-epochs", f.o.num_train_epochs)->capture_default_str();
  s->add_option("--max-steps", f.o.max_steps, "updates in the run (overrides epochs; 0 = from epochs)")
      ->capture_default_str();
  s->add_option("--stop-after-step", f.o.stop_after_step,
                "checkpoint and stop after this update, schedule unchanged");
  s->add_option("--gradient-accumulation-steps", f.o.gradient_accumulation_steps)->capture_default_str();
  s->add_option("--learning-rate", f.o.learning_rate)->capture_default_str();
  s->add_option("--lr-scheduler", f.o.lr_scheduler, "cosine | linear | constant")->capture_default_str();
  s->add_option("--warmup-ratio", f.o.warmup_ratio)->capture_default_str();
  s->add_option("--min-lr-ratio", f.o.min_lr_ratio, "cosine floor / peak")->capture_default_str();
  s->add_option("--weight-decay", f.o.weight_decay)->capture_default_str();
  s->add_option("--adam-beta1", f.o.adam_beta1)->capture_default_str();
  s->add_option("--adam-beta2", f.o.adam_beta2)->capture_default_str();
  s->add_option("--adam-epsilon", f.o.adam_epsilon)->capture_default_str();
  s->add_flag(
      "--one-pass-adamw", f.o.one_pass_adamw,
      "CUDA, bf16/fp16: the optimizer step as one kernel over the kept bf16 gradients (docs/training.md)");
  s->add_option("--max-grad-norm", f.o.max_grad_norm, "0 = no clipping")->capture_default_str();
  s->add_option("--seed", f.o.seed)->capture_default_str();
  s->add_option("--lora-rank", f.o.lora_rank, "LoRA rank (0 = full fine-tuning)")->capture_default_str();
  s->add_option("--lora-alpha", f.o.lora_alpha)->capture_default_str();
  s->add_option("--lora-targets", f.o.lora_targets, "projections (q_proj ... down_proj, all-linear)")
      ->delimiter(',')
      ->capture_default_str();
  s->add_flag("--lora-merge", f.o.lora_merge, "also write the merged model to OUTPUT_DIR/merged");
}

void add_run_flags(CLI::App* s, TrainSftFlags& f) {
  s->add_option("--nproc-per-node", f.nproc_per_node,
                "start this many ranks here (Gloo on CPU, NCCL on CUDA)")
      ->capture_default_str();
  s->add_option("--dist-backend", f.o.dist_backend, "auto | gloo | nccl")->capture_default_str();
  s->add_flag("!--no-zero1", f.o.zero1, "replicate optimizer state on every rank");
  s->add_option("--save-steps", f.o.save_steps, "checkpoint every N updates (0 = at the end)")
      ->capture_default_str();
  s->add_option("--save-total-limit", f.o.save_total_limit, "keep the newest N checkpoints (0 = all)")
      ->capture_default_str();
  s->add_option("--eval-steps", f.o.eval_steps, "evaluate every N updates (0 = at the end)")
      ->capture_default_str();
  s->add_option("--logging-steps", f.o.logging_steps)->capture_default_str();
  s->add_flag("!--no-tensorboard", f.o.tensorboard, "no TensorBoard event files");
  s->add_flag("!--no-progress", f.o.progress_bar, "no progress output");
}

}  // namespace

Command add_train_sft_command(CLI::App& app) {
  auto flags = std::make_shared<TrainSftFlags>();
  CLI::App* sub = app.add_subcommand("train-sft",
                                     "supervised fine-tuning on chat JSONL (resumable, data parallel, LoRA)");
  sub->add_option("--config", flags->config_file,
                  "TOML file whose keys are flag names; command-line flags win");
  add_data_flags(sub, *flags);
  add_optim_flags(sub, *flags);
  add_run_flags(sub, *flags);
  // A flag given twice (or in --config and on the command line) takes its last value.
  take_last_values(sub);
  return {sub, [flags, sub] {
            return run_with_config("train-sft", sub, flags->config_file,
                                   [&] { return run_train_sft(*flags); });
          }};
}

}  // namespace musacoder::tool
