#include "rl/retry_buffer.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "rl/random_draws.h"

namespace musacoder::rl {
namespace {

Status validate_group(const ScoredGroup& group, const char* where) {
  if (group.prompt_id.empty()) return invalid_argument(std::string(where) + ": empty prompt_id");
  if (group.attempts.empty()) {
    return invalid_argument(std::string(where) + ": group '" + group.prompt_id + "' has no attempts");
  }
  for (const Attempt& a : group.attempts) {
    if (!std::isfinite(a.score)) {
      return invalid_argument(std::string(where) + ": non-finite score in group '" + group.prompt_id + "'");
    }
  }
  return Status();
}

}  // namespace

double RetryBufferCounters::recovered_share() const {
  if (update_groups == 0) return 0.0;
  return static_cast<double>(recovered_groups) / static_cast<double>(update_groups);
}

Result<RetryBuffer> RetryBuffer::create(const RetryBufferOptions& options) {
  if (options.capacity == 0 || options.retry_every == 0 || options.max_retries_per_step == 0 ||
      options.max_stale_epochs == 0 || options.max_attempts_kept == 0) {
    return invalid_argument(
        "RetryBuffer: capacity, retry_every, max_retries_per_step, max_stale_epochs and max_attempts_kept "
        "must all be >= 1");
  }
  if (!std::isfinite(options.pass_threshold)) {
    return invalid_argument("RetryBuffer: pass_threshold must be finite");
  }
  return RetryBuffer(options);
}

bool RetryBuffer::passes(const ScoredGroup& group) const {
  return std::any_of(group.attempts.begin(), group.attempts.end(),
                     [&](const Attempt& a) { return a.score >= options_.pass_threshold; });
}

std::vector<Attempt> RetryBuffer::kept_attempts(const ScoredGroup& group) const {
  const std::size_t n = std::min(group.attempts.size(), options_.max_attempts_kept);
  return {group.attempts.begin(), group.attempts.begin() + static_cast<std::ptrdiff_t>(n)};
}

void RetryBuffer::evict(Entries::iterator it) {
  state_.out_of_domain.insert(it->first);
  state_.entries.erase(it);
}

void RetryBuffer::evict_stalest() {
  MC_CHECK(!state_.entries.empty());
  auto stalest =
      std::min_element(state_.entries.begin(), state_.entries.end(), [](const auto& a, const auto& b) {
        if (a.second.entered_epoch != b.second.entered_epoch)
          return a.second.entered_epoch < b.second.entered_epoch;
        return a.second.entered_seq < b.second.entered_seq;
      });
  evict(stalest);
  ++state_.counters.evicted_capacity;
}

void RetryBuffer::enforce_limits() {
  for (auto it = state_.entries.begin(); it != state_.entries.end();) {
    MC_CHECK(it->second.entered_epoch <= state_.epoch);
    if (state_.epoch - it->second.entered_epoch >= options_.max_stale_epochs) {
      auto victim = it++;
      evict(victim);
      ++state_.counters.evicted_stale;
    } else {
      ++it;
    }
  }
  while (state_.entries.size() > options_.capacity) evict_stalest();
}

Result<OfferOutcome> RetryBuffer::offer(const ScoredGroup& group) {
  if (Status s = validate_group(group, "RetryBuffer::offer"); !s.ok()) return s;
  auto it = state_.entries.find(group.prompt_id);
  if (passes(group)) {
    if (it != state_.entries.end()) {
      state_.entries.erase(it);
      ++state_.counters.solved_in_stream;
    }
    return OfferOutcome::kHasSignal;
  }
  if (it != state_.entries.end()) {
    BufferedPrompt& entry = it->second;
    entry.failed_attempts = kept_attempts(group);
    entry.attempts_total += group.attempts.size();
    entry.last_touched_seq = ++state_.seq;
    ++state_.counters.refreshed;
    return OfferOutcome::kRefreshed;
  }
  if (state_.out_of_domain.contains(group.prompt_id)) return OfferOutcome::kOutOfDomain;
  if (state_.entries.size() >= options_.capacity) evict_stalest();
  BufferedPrompt entry;
  entry.prompt_id = group.prompt_id;
  entry.failed_attempts = kept_attempts(group);
  entry.entered_epoch = state_.epoch;
  entry.entered_seq = ++state_.seq;
  entry.last_touched_seq = entry.entered_seq;
  entry.attempts_total = group.attempts.size();
  state_.entries.emplace(group.prompt_id, std::move(entry));
  ++state_.counters.entered;
  return OfferOutcome::kBuffered;
}

std::vector<std::string> RetryBuffer::due(std::size_t step) const {
  if (step % options_.retry_every != 0 || state_.entries.empty()) return {};
  std::vector<const BufferedPrompt*> order;
  order.reserve(state_.entries.size());
  for (const auto& [id, entry] : state_.entries) order.push_back(&entry);
  const std::size_t count = std::min(order.size(), options_.max_retries_per_step);
  if (options_.due_order == DueOrder::kLeastRecentlyTried) {
    // Sequence numbers are unique, so this order is total.
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count), order.end(),
                      [](const BufferedPrompt* a, const BufferedPrompt* b) {
                        return a->last_touched_seq < b->last_touched_seq;
                      });
  } else {
    // Map order (by id) is deterministic; the draw depends only on (seed, step).
    std::mt19937_64 rng(detail::mix_seed(options_.seed, step));
    detail::choose_front(order, count, rng);
  }
  std::vector<std::string> ids;
  ids.reserve(count);
  for (std::size_t i = 0; i < count; ++i) ids.push_back(order[i]->prompt_id);
  return ids;
}

Result<RetryOutcome> RetryBuffer::report_retry(const ScoredGroup& group) {
  if (Status s = validate_group(group, "RetryBuffer::report_retry"); !s.ok()) return s;
  auto it = state_.entries.find(group.prompt_id);
  if (it == state_.entries.end()) {
    return invalid_argument("RetryBuffer::report_retry: prompt '" + group.prompt_id + "' is not buffered");
  }
  ++state_.counters.retries;
  if (passes(group)) {
    state_.entries.erase(it);
    ++state_.counters.recovered_groups;
    return RetryOutcome::kRecovered;
  }
  BufferedPrompt& entry = it->second;
  entry.failed_attempts = kept_attempts(group);
  entry.attempts_total += group.attempts.size();
  entry.last_touched_seq = ++state_.seq;
  ++entry.retries;
  return RetryOutcome::kStillFailing;
}

void RetryBuffer::advance_epoch() {
  ++state_.epoch;
  enforce_limits();
}

void RetryBuffer::record_update_groups(std::size_t groups) {
  state_.counters.update_groups += groups;
}

bool RetryBuffer::contains(std::string_view prompt_id) const {
  return state_.entries.contains(prompt_id);
}

const BufferedPrompt* RetryBuffer::find(std::string_view prompt_id) const {
  auto it = state_.entries.find(prompt_id);
  return it == state_.entries.end() ? nullptr : &it->second;
}

bool RetryBuffer::is_out_of_domain(std::string_view prompt_id) const {
  return state_.out_of_domain.contains(prompt_id);
}

RetryBufferCounters RetryBuffer::counters() const {
  RetryBufferCounters c = state_.counters;
  c.buffered = state_.entries.size();
  c.out_of_domain = state_.out_of_domain.size();
  return c;
}

}  // namespace musacoder::rl
