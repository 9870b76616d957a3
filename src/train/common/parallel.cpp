#include "train/common/parallel.h"

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef MUSACODER_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef MUSACODER_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <cstdlib>
#include <numeric>

namespace musacoder::train {
namespace {

const char* env_or_null(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

Result<int> env_int(const char* name, int fallback) {
  const char* v = env_or_null(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1 << 20) return invalid_argument(std::string(name) + "='" + v + "' is not a valid number");
  return static_cast<int>(x);
}

class SingleProcess final : public DataParallel {
 public:
  explicit SingleProcess(DistEnv env) : DataParallel(std::move(env), "none") {}
  void all_reduce_sum(std::vector<torch::Tensor>&) override {}
  void broadcast_from_owners(std::vector<torch::Tensor>&, const std::vector<int>&) override {}
  void barrier() override {}
};

// Consecutive runs of tensors with the same dtype (and, for broadcasts, the same owner), at most `bytes` each.
std::vector<std::vector<std::size_t>> buckets(const std::vector<torch::Tensor>& t, const std::vector<int>& owner,
                                              int64_t bytes) {
  std::vector<std::vector<std::size_t>> out;
  int64_t used = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const int64_t b = t[i].numel() * static_cast<int64_t>(t[i].element_size());
    const bool same = !out.empty() && t[out.back().back()].scalar_type() == t[i].scalar_type() &&
                      (owner.empty() || owner[out.back().back()] == owner[i]) && used + b <= bytes;
    if (!same) {
      out.emplace_back();
      used = 0;
    }
    out.back().push_back(i);
    used += b;
  }
  return out;
}

torch::Tensor flatten(const std::vector<torch::Tensor>& t, const std::vector<std::size_t>& idx) {
  std::vector<torch::Tensor> parts;
  for (std::size_t i : idx) parts.push_back(t[i].reshape({-1}));
  return torch::cat(parts);
}

void unflatten(const torch::Tensor& flat, std::vector<torch::Tensor>& t, const std::vector<std::size_t>& idx) {
  int64_t off = 0;
  for (std::size_t i : idx) {
    t[i].copy_(flat.narrow(0, off, t[i].numel()).view(t[i].sizes()));
    off += t[i].numel();
  }
}

class ProcessGroupParallel final : public DataParallel {
 public:
  ProcessGroupParallel(DistEnv env, std::string backend, c10::intrusive_ptr<c10d::Backend> pg, int64_t bucket_bytes)
      : DataParallel(std::move(env), std::move(backend)), pg_(std::move(pg)), bucket_bytes_(bucket_bytes) {}

  void all_reduce_sum(std::vector<torch::Tensor>& tensors) override {
    torch::NoGradGuard no_grad;
    auto groups = buckets(tensors, {}, bucket_bytes_);
    std::vector<std::vector<torch::Tensor>> flats;
    std::vector<c10::intrusive_ptr<c10d::Work>> work;
    for (const auto& g : groups) {
      flats.push_back({flatten(tensors, g)});
      work.push_back(pg_->allreduce(flats.back()));
    }
    for (std::size_t k = 0; k < groups.size(); ++k) {
      work[k]->wait();
      unflatten(flats[k][0], tensors, groups[k]);
    }
  }

  void broadcast_from_owners(std::vector<torch::Tensor>& tensors, const std::vector<int>& owner) override {
    torch::NoGradGuard no_grad;
    auto groups = buckets(tensors, owner, bucket_bytes_);
    std::vector<std::vector<torch::Tensor>> flats;
    std::vector<c10::intrusive_ptr<c10d::Work>> work;
    for (const auto& g : groups) {
      flats.push_back({flatten(tensors, g)});
      c10d::BroadcastOptions o;
      o.rootRank = owner[g.front()];
      work.push_back(pg_->broadcast(flats.back(), o));
    }
    for (std::size_t k = 0; k < groups.size(); ++k) {
      work[k]->wait();
      if (owner[groups[k].front()] != rank()) unflatten(flats[k][0], tensors, groups[k]);
    }
  }

  void barrier() override { pg_->barrier()->wait(); }

 private:
  c10::intrusive_ptr<c10d::Backend> pg_;
  int64_t bucket_bytes_;
};

#ifdef MUSACODER_HAVE_GLOO
c10::intrusive_ptr<c10d::Backend> make_gloo(const c10::intrusive_ptr<c10d::Store>& store, const DistEnv& env,
                                            std::chrono::milliseconds timeout) {
  auto o = c10d::ProcessGroupGloo::Options::create();
  o->timeout = timeout;
  const bool loopback = env.master_addr == "127.0.0.1" || env.master_addr == "localhost";
  o->devices.push_back(loopback ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                : c10d::ProcessGroupGloo::createDefaultDevice());
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, o);
}
#endif

}  // namespace

Result<DistEnv> dist_env_from_environment() {
  DistEnv e;
  if (env_or_null("WORLD_SIZE") == nullptr) {
    if (env_or_null("RANK") != nullptr) return invalid_argument("RANK is set but WORLD_SIZE is not");
    return e;
  }
  auto world = env_int("WORLD_SIZE", 1), rank = env_int("RANK", -1), local = env_int("LOCAL_RANK", 0),
       port = env_int("MASTER_PORT", 29500);
  for (const auto* r : {&world, &rank, &local, &port}) {
    if (!r->ok()) return r->status();
  }
  if (*world < 1 || *rank < 0 || *rank >= *world) {
    return invalid_argument("RANK " + std::to_string(*rank) + " is outside WORLD_SIZE " + std::to_string(*world));
  }
  e.world_size = *world;
  e.rank = *rank;
  e.local_rank = *local;
  e.master_port = *port;
  if (const char* a = env_or_null("MASTER_ADDR")) e.master_addr = a;
  return e;
}

std::vector<int> DataParallel::assign_owners(const std::vector<int64_t>& numels, int world_size) {
  std::vector<std::size_t> order(numels.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return numels[a] > numels[b]; });
  std::vector<int64_t> load(static_cast<std::size_t>(world_size), 0);
  std::vector<int> owner(numels.size(), 0);
  for (std::size_t i : order) {
    const auto r = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    owner[i] = static_cast<int>(r);
    load[r] += numels[i];
  }
  return owner;
}

Result<std::unique_ptr<DataParallel>> DataParallel::create(const DistEnv& env, const torch::Device& device,
                                                           const ParallelOptions& options) {
  if (env.world_size == 1) return std::unique_ptr<DataParallel>(new SingleProcess(env));
  std::string backend = options.backend == "auto" ? (device.is_cuda() ? "nccl" : "gloo") : options.backend;
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<uint16_t>(env.master_port);
    so.isServer = env.rank == 0;
    so.numWorkers = env.world_size;
    so.timeout = options.timeout;
    auto store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
    c10::intrusive_ptr<c10d::Backend> pg;
    if (backend == "gloo") {
#ifdef MUSACODER_HAVE_GLOO
      pg = make_gloo(store, env, options.timeout);
#else
      return unavailable("the gloo backend was not compiled in (gloo's headers were missing: install libgloo-dev)");
#endif
    } else if (backend == "nccl") {
#ifdef MUSACODER_HAVE_NCCL
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = options.timeout;
      pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world_size, o);
#else
      return unavailable("the nccl backend was not compiled in (configure with NCCL headers: MUSACODER_WITH_NCCL)");
#endif
    } else {
      return invalid_argument("unknown distributed backend '" + backend + "' (gloo, nccl or auto)");
    }
    return std::unique_ptr<DataParallel>(new ProcessGroupParallel(env, backend, std::move(pg), options.bucket_bytes));
  } catch (const std::exception& e) {
    return unavailable("joining the " + backend + " process group (rank " + std::to_string(env.rank) + " of " +
                       std::to_string(env.world_size) + " at " + env.master_addr + ":" +
                       std::to_string(env.master_port) + "): " + e.what());
  }
}

}  // namespace musacoder::train
