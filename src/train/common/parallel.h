// Data parallelism over c10d, the collective layer PyTorch's DDP/FSDP sit on (libtorch's ProcessGroupGloo on CPU,
// ProcessGroupNCCL on CUDA; rendezvous through c10d's TCPStore). No transport of our own.
//
// Ranks come from torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) — set either by
// `torchrun --no-python --nproc-per-node N musacoder ...` or by musacoder's own --nproc-per-node launcher.
// Gradients: every rank computes its micro-batches' gradients of the globally normalised loss (a sum), then
// all_reduce_sum adds them: flat buckets of at most bucket_bytes, every bucket's collective launched before the
// first wait. ZeRO-1: parameter i is owned by one rank (assign_owners balances element counts); only the owner
// keeps its AdamW state and updates it, then broadcast_from_owners sends the new values to every rank.
// Thread-safety: one thread drives a DataParallel; collectives are issued in the same order on every rank.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace musacoder::train {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
};

// The torchrun variables; all absent → a single process. Partial or inconsistent values → kInvalidArgument.
Result<DistEnv> dist_env_from_environment();

struct ParallelOptions {
  std::string backend = "auto";                    // "gloo", "nccl", or "auto" (nccl on CUDA, gloo on CPU)
  std::chrono::milliseconds timeout{30 * 60 * 1000};  // rendezvous and collective timeout
  int64_t bucket_bytes = 25ll << 20;               // gradient bucket size (DDP's default)
};

class DataParallel {
 public:
  // Joins the process group (world_size 1: no process group; every collective is a no-op).
  static Result<std::unique_ptr<DataParallel>> create(const DistEnv& env, const torch::Device& device,
                                                      const ParallelOptions& options);
  virtual ~DataParallel() = default;

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  const std::string& backend_name() const { return backend_name_; }

  // In place: tensors[i] ← Σ_ranks tensors[i]. Tensors must be contiguous; any dtype mix (bucketed per dtype).
  virtual void all_reduce_sum(std::vector<torch::Tensor>& tensors) = 0;
  // In place on every rank: tensors[i] ← tensors[i] of rank owner[i].
  virtual void broadcast_from_owners(std::vector<torch::Tensor>& tensors, const std::vector<int>& owner) = 0;
  virtual void barrier() = 0;

  // ZeRO-1 owners: the largest tensors first, each to the rank with the fewest elements so far.
  static std::vector<int> assign_owners(const std::vector<int64_t>& numels, int world_size);

 protected:
  DataParallel(DistEnv env, std::string backend) : env_(std::move(env)), backend_name_(std::move(backend)) {}
  DistEnv env_;
  std::string backend_name_;
};

}  // namespace musacoder::train
