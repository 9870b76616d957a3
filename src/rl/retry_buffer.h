#pragma once
// Buffered Dynamic Retry (DESIGN §4, lesson §五): prompts whose K samples all fail give GRPO a zero
// gradient. Instead of dropping them, the trainer parks them here with their failed code and verdicts,
// re-samples them with the (stronger) current policy every N steps, and trains on the group as soon as
// one sample passes. Prompts that stay unsolved too long are evicted and marked out-of-domain.
//
// Trainer loop:
//   after scoring a regular group:     buffer.offer(group)           (buffers it if all K fail)
//   each step:                         for id in buffer.due(step): re-sample K, then
//                                      buffer.report_retry(group)    (kRecovered → add group to the update)
//   after the step's update:           buffer.record_update_groups(groups in the update)
//   at each epoch boundary:            buffer.advance_epoch()        (staleness eviction)
//   checkpoint:                        save_state() / restore_state()
//
// Rules:
//   * An attempt passes when score ≥ pass_threshold; a group "fails" when none of its attempts passes.
//   * Staleness: a prompt entered in epoch e is evicted by the advance_epoch() that makes the epoch
//     e + max_stale_epochs, so every buffered prompt always has age (epoch − entered_epoch) <
//     max_stale_epochs. Re-offering a buffered prompt refreshes its attempts but not its age.
//   * Capacity: inserting into a full buffer first evicts the stalest prompt (lowest entered epoch, then
//     earliest insertion); it is marked out-of-domain and counted in evicted_capacity.
//   * Out-of-domain prompts are never buffered again (offer → kOutOfDomain); the set only grows.
//   * due(step) is empty unless step % retry_every == 0; then it returns at most max_retries_per_step
//     prompt ids, either least-recently-tried first (default; ties by insertion order) or a uniform sample
//     seeded by (seed, step). Both are deterministic functions of (options, state, step); due() does not
//     change state, so asking twice gives the same answer.
//
// Thread-safety: none; one trainer thread owns a RetryBuffer (external locking otherwise).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "core/status.h"

namespace musacoder::rl {

struct Attempt {
  std::string code;     // candidate source as the model wrote it
  std::string verdict;  // MooreEval verdict, e.g. "compile_error: ..." (fed back when re-prompting)
  double score = 0.0;   // reward in the caller's scale; passes when ≥ pass_threshold

  bool operator==(const Attempt&) const = default;
};

struct ScoredGroup {
  std::string prompt_id;          // stable id of the task/prompt, e.g. "level1/19_ReLU"
  std::vector<Attempt> attempts;  // the K samples of this prompt, K ≥ 1
};

enum class DueOrder {
  kLeastRecentlyTried,  // round-robin: prompts offered/retried longest ago come first
  kSeededSample,        // uniform sample without replacement, seeded by (seed, step)
};

struct RetryBufferOptions {
  // Most prompts held (--bdr-buffer-size). ≥ 1.
  std::size_t capacity = 4096;
  // Retry rounds happen on steps that are multiples of this (--bdr-retry-every). ≥ 1.
  std::size_t retry_every = 4;
  // Most prompts one retry round returns (bounds the extra rollout cost of a step). ≥ 1.
  std::size_t max_retries_per_step = 64;
  // Epochs a prompt may stay before it is evicted as out-of-domain (--bdr-max-stale-epochs). ≥ 1.
  std::size_t max_stale_epochs = 5;
  // An attempt passes when its score ≥ this (0.6: compiled and all checks pass under MooreEval's default
  // reward; 1.0 for the paper's tiered score). Finite.
  double pass_threshold = 0.6;
  // Failed attempts stored per prompt (the first ones of its latest group). Memory is about
  // capacity × this × code size, so keep it small. ≥ 1.
  std::size_t max_attempts_kept = 4;
  // Which buffered prompts due() picks when more than max_retries_per_step are buffered.
  DueOrder due_order = DueOrder::kLeastRecentlyTried;
  // Seed for DueOrder::kSeededSample.
  std::uint64_t seed = 0;
};

struct BufferedPrompt {
  std::string prompt_id;
  std::vector<Attempt> failed_attempts;  // latest failed group, at most max_attempts_kept
  std::size_t entered_epoch = 0;         // epoch it was buffered in (its age is epoch() − this)
  std::uint64_t entered_seq = 0;         // insertion order (tie-break for "stalest")
  std::uint64_t last_touched_seq = 0;    // last offer/retry (orders kLeastRecentlyTried)
  std::size_t attempts_total = 0;        // failed attempts seen while buffered
  std::size_t retries = 0;               // retry rounds reported

  bool operator==(const BufferedPrompt&) const = default;
};

struct RetryBufferCounters {
  std::size_t buffered = 0;          // prompts in the buffer now
  std::size_t entered = 0;           // insertions ever (a prompt can enter again after leaving)
  std::size_t refreshed = 0;         // offers of an already-buffered prompt that failed again
  std::size_t retries = 0;           // report_retry() calls
  std::size_t recovered_groups = 0;  // retries with ≥ 1 pass: groups that joined an update
  std::size_t solved_in_stream = 0;  // buffered prompts that passed when offered by the regular stream
  std::size_t evicted_stale = 0;     // evicted by advance_epoch()
  std::size_t evicted_capacity = 0;  // evicted to make room
  std::size_t out_of_domain = 0;     // size of the out-of-domain set
  std::size_t update_groups = 0;     // total update groups reported via record_update_groups()

  // recovered_groups / update_groups (lesson: 8–12%); 0 before any update is reported.
  double recovered_share() const;
  bool operator==(const RetryBufferCounters&) const = default;
};

enum class OfferOutcome {
  kHasSignal,    // ≥ 1 attempt passed; not buffered (a buffered copy is removed: solved_in_stream)
  kBuffered,     // all failed; newly buffered
  kRefreshed,    // all failed; already buffered, attempts refreshed (age kept)
  kOutOfDomain,  // all failed; the prompt was evicted earlier and is not buffered again
};

enum class RetryOutcome {
  kRecovered,     // ≥ 1 pass: left the buffer, the group should join this step's update
  kStillFailing,  // all failed again: stays, attempts refreshed, goes to the back of the retry order
};

class RetryBuffer {
 public:
  // Errors (invalid): an option out of its documented range.
  static Result<RetryBuffer> create(const RetryBufferOptions& options = {});

  // Records a freshly scored regular group. Errors (invalid): empty prompt id, no attempts, a
  // non-finite score. On error nothing changes.
  Result<OfferOutcome> offer(const ScoredGroup& group);

  // Prompt ids to re-sample at `step` (see the header comment for order and determinism).
  std::vector<std::string> due(std::size_t step) const;

  // Result of re-sampling a buffered prompt. Errors (invalid): the prompt is not buffered, or the group
  // is malformed as for offer(). On error nothing changes.
  Result<RetryOutcome> report_retry(const ScoredGroup& group);

  // Moves to the next epoch and evicts prompts that reached max_stale_epochs (marked out-of-domain).
  void advance_epoch();

  // The caller reports how many groups went into an update (regular and recovered).
  void record_update_groups(std::size_t groups);

  bool contains(std::string_view prompt_id) const;
  // nullptr when not buffered. The pointer is invalidated by any non-const call.
  const BufferedPrompt* find(std::string_view prompt_id) const;
  bool is_out_of_domain(std::string_view prompt_id) const;
  const std::set<std::string, std::less<>>& out_of_domain() const { return state_.out_of_domain; }
  std::size_t size() const { return state_.entries.size(); }
  std::size_t epoch() const { return state_.epoch; }
  const RetryBufferOptions& options() const { return options_; }
  // Counters; buffered and out_of_domain reflect the current sizes.
  RetryBufferCounters counters() const;

  // JSON snapshot of the whole state (not the options, which come from the run's configuration).
  std::string save_state() const;
  // Replaces the state with a snapshot from save_state(). The current options are then enforced: prompts
  // over max_stale_epochs or over capacity are evicted as usual (and counted). Errors (error): the text is
  // not JSON or not a valid snapshot (wrong format tag or version, missing or mistyped fields, duplicate
  // prompts, an entry newer than the epoch). On error the state is unchanged.
  Status restore_state(std::string_view json);

 private:
  using Entries = std::map<std::string, BufferedPrompt, std::less<>>;
  // Everything save_state() stores; restore_state() builds a new one and swaps it in.
  struct State {
    Entries entries;
    std::set<std::string, std::less<>> out_of_domain;
    RetryBufferCounters counters;  // buffered/out_of_domain are filled in by counters()
    std::size_t epoch = 0;
    std::uint64_t seq = 0;  // event counter behind entered_seq / last_touched_seq
  };

  explicit RetryBuffer(const RetryBufferOptions& options) : options_(options) {}
  bool passes(const ScoredGroup& group) const;
  std::vector<Attempt> kept_attempts(const ScoredGroup& group) const;
  void evict(Entries::iterator it);
  void evict_stalest();
  // Evicts prompts at or over max_stale_epochs, then the stalest while over capacity (both counted).
  void enforce_limits();

  RetryBufferOptions options_;
  State state_;
};

}  // namespace musacoder::rl
