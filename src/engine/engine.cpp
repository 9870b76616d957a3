// Engine: the thread that drives EngineCore, the inbox other threads write to, and the weight fence.
#include "engine/engine.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

#include "engine/engine_core.h"
#include "model/checkpoint.h"

namespace musacoder::engine {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kNone: break;
  }
  return "";
}

class EngineImpl {
 public:
  explicit EngineImpl(std::unique_ptr<EngineCore> core) : core_(std::move(core)) {
    thread_ = std::thread([this] { loop(); });
  }
  ~EngineImpl() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  uint64_t submit(Request r, Callback cb) {
    uint64_t id = next_id_.fetch_add(1) + 1;
    auto ids = core_->check(r);  // const and reads immutable state: safe off the engine thread
    if (!ids.ok()) {
      RequestOutput out;
      out.request_id = id;
      out.tag = r.tag;
      out.status = ids.status();
      out.finished = true;
      {
        std::lock_guard lock(mu_);
        ++rejected_;
      }
      if (cb) cb(RequestUpdate{out, {}, true});
      return id;
    }
    r.prompt_ids = std::move(*ids);
    {
      std::lock_guard lock(mu_);
      inbox_.push_back({id, std::move(r), std::move(cb)});
    }
    cv_.notify_all();
    return id;
  }

  void cancel(uint64_t id) {
    {
      std::lock_guard lock(mu_);
      cancels_.push_back(id);
    }
    cv_.notify_all();
  }

  Status update_weights(const std::function<Status(model::Decoder&)>& fn) {
    std::promise<Status> done;
    auto result = done.get_future();
    {
      std::lock_guard lock(mu_);
      updates_.push_back({fn, &done});
    }
    cv_.notify_all();
    return result.get();
  }

  EngineStats stats() const {
    EngineStats s = core_->snapshot();
    std::lock_guard lock(mu_);
    s.requests_rejected = rejected_;
    return s;
  }
  uint64_t weight_version() const {
    std::lock_guard lock(mu_);
    return version_;
  }
  EngineCore& core() { return *core_; }

 private:
  struct Submission {
    uint64_t id;
    Request request;
    Callback callback;
  };
  struct Update {
    std::function<Status(model::Decoder&)> fn;
    std::promise<Status>* done;
  };

  void loop() {
    for (;;) {
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !inbox_.empty() || !cancels_.empty() || !updates_.empty() || core_->has_work(); });
        if (stop_) break;
        for (auto& s : inbox_) core_->add(s.id, std::move(s.request), std::move(s.callback));
        inbox_.clear();
        for (uint64_t id : cancels_) core_->cancel(id);
        cancels_.clear();
      }
      apply_weight_updates();
      core_->step();
    }
    shutdown();
  }

  // The fence: with an update pending, requests that have not started wait; once no started request is
  // left, the updates run (the model is idle) and the version moves on.
  void apply_weight_updates() {
    std::vector<Update> updates;
    {
      std::lock_guard lock(mu_);
      if (updates_.empty()) return;
      core_->set_admit_new(false);
      if (core_->has_started_work()) return;
      updates.swap(updates_);
    }
    auto addresses = [&] {
      std::vector<const void*> a;
      for (const auto& p : core_->model()->parameters()) a.push_back(p.data_ptr());
      return a;
    };
    const auto before = addresses();
    std::vector<Status> results;
    for (auto& u : updates) {
      try {
        torch::NoGradGuard no_grad;
        results.push_back(u.fn(core_->model()));
      } catch (const std::exception& e) {
        results.push_back(internal_error(std::string("weight update failed: ") + e.what()));
      }
      core_->bump_weight_version();
    }
    if (addresses() != before) core_->runner().reset_graphs();
    {
      std::lock_guard lock(mu_);
      version_ = core_->weight_version();
      core_->set_admit_new(true);
    }
    for (std::size_t i = 0; i < updates.size(); ++i) updates[i].done->set_value(results[i]);  // after the version
  }

  void shutdown() {
    std::vector<Update> updates;
    {
      std::lock_guard lock(mu_);
      for (auto& s : inbox_) core_->add(s.id, std::move(s.request), std::move(s.callback));
      inbox_.clear();
      updates.swap(updates_);
    }
    for (auto& u : updates) u.done->set_value(unavailable("the engine is shutting down"));
    core_->cancel_all();
    core_->step();  // delivers the cancellations
  }

  std::unique_ptr<EngineCore> core_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Submission> inbox_;
  std::vector<uint64_t> cancels_;
  std::vector<Update> updates_;
  int64_t rejected_ = 0;
  uint64_t version_ = 0;
  bool stop_ = false;
  std::atomic<uint64_t> next_id_{0};
  std::thread thread_;
};

// ---- Engine ------------------------------------------------------------------------------------------

Engine::Engine(std::unique_ptr<EngineImpl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::create(model::Decoder model, std::optional<tokenizer::Tokenizer> tok,
                                               std::vector<int32_t> eos, const EngineOptions& options) {
  try {
    auto core = EngineCore::create(std::move(model), std::move(tok), std::move(eos), options);
    if (!core.ok()) return core.status();
    return std::unique_ptr<Engine>(new Engine(std::make_unique<EngineImpl>(std::move(*core))));
  } catch (const std::exception& e) {
    return internal_error(std::string("engine: ") + e.what());
  }
}

namespace {

void add_ids(const nlohmann::json& j, std::vector<int32_t>& out) {
  if (j.is_number_integer()) out.push_back(j.get<int32_t>());
  if (j.is_array())
    for (const auto& x : j)
      if (x.is_number_integer()) out.push_back(x.get<int32_t>());
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::load(const std::filesystem::path& dir, const model::ModelOptions& mo,
                                             const EngineOptions& options) {
  auto model = model::load_pretrained(dir, mo);
  if (!model.ok()) return model.status();
  std::optional<tokenizer::Tokenizer> tok;
  if (std::filesystem::exists(dir / "tokenizer.json")) {
    auto t = tokenizer::Tokenizer::load(dir / "tokenizer.json");
    if (!t.ok()) return t.status();
    tok.emplace(std::move(*t));
  }
  std::vector<int32_t> eos;
  add_ids((*model)->config().raw.value("eos_token_id", nlohmann::json()), eos);
  std::ifstream gen(dir / "generation_config.json");
  if (gen) {
    auto j = nlohmann::json::parse(gen, nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded()) add_ids(j.value("eos_token_id", nlohmann::json()), eos);
  }
  std::sort(eos.begin(), eos.end());
  eos.erase(std::unique(eos.begin(), eos.end()), eos.end());
  return create(std::move(*model), std::move(tok), std::move(eos), options);
}

uint64_t Engine::submit(Request request, Callback callback) {
  return impl_->submit(std::move(request), std::move(callback));
}

std::vector<RequestOutput> Engine::generate(std::vector<Request> requests) {
  std::vector<RequestOutput> outputs(requests.size());
  std::vector<std::promise<void>> done(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    submit(std::move(requests[i]), [&outputs, &done, i](const RequestUpdate& u) {
      if (!u.finished) return;
      outputs[i] = u.output;
      done[i].set_value();
    });
  }
  for (auto& d : done) d.get_future().wait();
  return outputs;
}

void Engine::cancel(uint64_t id) { impl_->cancel(id); }
Status Engine::update_weights(const std::function<Status(model::Decoder&)>& fn) { return impl_->update_weights(fn); }
uint64_t Engine::weight_version() const { return impl_->weight_version(); }
EngineStats Engine::stats() const { return impl_->stats(); }
const model::ModelConfig& Engine::config() const { return impl_->core().model()->config(); }
const tokenizer::Tokenizer* Engine::tokenizer() const { return impl_->core().tokenizer(); }
const std::vector<int32_t>& Engine::eos_token_ids() const { return impl_->core().eos_token_ids(); }
int64_t Engine::max_model_len() const { return impl_->core().max_model_len(); }
const EngineOptions& Engine::options() const { return impl_->core().options(); }
Status Engine::validate(const Request& request) const {
  auto ids = impl_->core().check(request);
  return ids.ok() ? Status() : ids.status();
}

}  // namespace musacoder::engine
