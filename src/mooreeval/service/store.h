// SQLite persistence of the service: jobs, results (with the full verdict JSON) and the
// job log. The one writer of a service's database is its server process (workers on
// other hosts send results back through the queue, see docs/service.md).
//
// Exactly-once results: `results.job_id` is the primary key and commit_result() inserts
// with INSERT OR IGNORE inside a transaction that also checks the job's state, so a
// second result for a job (a reclaimed job re-run by another worker) is ignored and
// reported as kDuplicate, and a result for a cancelled job is dropped (kCancelled).
//
// Thread-safety: every method may be called from any thread; one connection, serialised
// by an internal mutex (WAL mode, so readers in other processes are not blocked).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "mooreeval/service/job.h"

struct sqlite3;

namespace musacoder::service {

struct StoreOptions {
  std::filesystem::path path = "mooreeval.db";   // database file; ":memory:" for a private one
  std::chrono::milliseconds busy_timeout{5000};  // wait this long for another process's lock
};

struct JobRecord {
  std::string job_id, task_id, label, candidate_sha256;
  std::string owner;  // name of the token that submitted it ("" for jobs older than tokens)
  std::size_t candidate_bytes = 0;
  JobState state = JobState::kQueued;
  int attempts = 0;    // deliveries that started evaluating (reclaims raise it)
  std::string worker;  // consumer that ran the latest attempt
  double created_at = 0, started_at = 0, finished_at = 0;  // Unix seconds; 0: not yet
  std::string verdict;                                     // verdict class name once done
  std::optional<double> reward;                            // null for infra_error
  std::string verdict_json;                                // full verdict (schema mooreeval.verdict/1)
};

struct LogEntry {
  double at = 0;
  std::string event;   // submitted | started | result_stored | duplicate_result | ...
  std::string detail;  // free text: worker, attempt, reason
};

enum class CommitOutcome {
  kStored,      // the job's one result
  kDuplicate,   // the job already had a result; this one is ignored
  kCancelled,   // the job was cancelled first; no result stored
  kUnknownJob,  // no such job
};

enum class CancelOutcome { kCancelled, kAlreadyDone, kAlreadyCancelled, kUnknownJob };

struct StateCounts {
  int64_t queued = 0, running = 0, done = 0, cancelled = 0;
};

// A job left unfinished by an earlier process (embedded recovery after a crash).
struct UnfinishedJob {
  JobMessage job;
  int attempts = 0;
};

// A client's idempotency key for one submitting request (docs/service.md).
struct IdempotencyKey {
  std::string key;          // the Idempotency-Key header, 1..128 printable ASCII
  std::string request_sha;  // SHA-256 of method, path and body: a reused key must carry the same request
};

struct InsertOutcome {
  std::vector<std::string> job_ids;  // the stored jobs' ids (the original ones when replayed)
  bool replayed = false;             // the key was seen before with the same request: nothing inserted
  bool key_conflict = false;         // the key was seen before with another request: nothing inserted
};

struct PurgeOutcome {
  int64_t jobs = 0;  // finished jobs removed with their results and log lines
  int64_t keys = 0;  // idempotency keys removed
};

class Store {
 public:
  // Opens (creating if needed) the database and its tables. kInternal on SQLite errors.
  static Result<std::unique_ptr<Store>> open(const StoreOptions& options);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Inserts queued jobs owned by `owner`, all or none (one transaction), each with a
  // `submitted` log line. The candidate bytes are kept until the job finishes, so that
  // unfinished jobs can be recovered. With a key: a key already stored for `owner`
  // inserts nothing and returns the original ids (or key_conflict for another request);
  // otherwise the key is stored in the same transaction as the jobs.
  Result<InsertOutcome> insert_jobs(const std::vector<JobMessage>& jobs, const std::string& owner = "",
                                    const std::optional<IdempotencyKey>& key = std::nullopt);
  // What insert_jobs would answer for a key already stored (replayed or key_conflict);
  // nullopt for a new key.
  Result<std::optional<InsertOutcome>> find_key(const std::string& owner, const IdempotencyKey& key);
  // Forgets an idempotency key (its jobs could not be queued).
  Status forget_key(const std::string& owner, const std::string& key);
  // Jobs of `owner` that are queued or running.
  Result<int64_t> unfinished_count(const std::string& owner);
  // Jobs of every owner that are queued or running (an index range, not a table scan).
  Result<int64_t> unfinished_total();
  // Bytes of the database file in use (pages minus free pages).
  Result<int64_t> used_bytes();
  // Removes finished (done or cancelled) jobs that finished before `before` (Unix
  // seconds), with their results and log lines, at most `max_jobs`, oldest first; and
  // idempotency keys older than `keys_before`. Returns what was removed.
  Result<PurgeOutcome> purge(double before, int64_t max_jobs, double keys_before);

  // A worker began attempt `attempt` of a job: queued|running -> running. Ignored (ok) for
  // jobs already done or cancelled.
  Status mark_running(const std::string& job_id, const std::string& worker, int attempt);

  // Stores the job's result (see the file comment for the exactly-once rule).
  Result<CommitOutcome> commit_result(const std::string& job_id, const std::string& verdict,
                                      std::optional<double> reward, const std::string& verdict_json,
                                      const std::string& worker);

  Result<CancelOutcome> cancel(const std::string& job_id);

  // The job, with its verdict JSON when `with_verdict`; nullopt for an unknown id.
  Result<std::optional<JobRecord>> get(const std::string& job_id, bool with_verdict = true);
  Result<std::vector<LogEntry>> log(const std::string& job_id);
  Status append_log(const std::string& job_id, const std::string& event, const std::string& detail);
  Result<StateCounts> counts();
  // Jobs neither done nor cancelled, oldest first.
  Result<std::vector<UnfinishedJob>> unfinished_jobs();
  // Number of stored results.
  Result<int64_t> result_count();

 private:
  explicit Store(sqlite3* db) : db_(db) {}
  Status exec(const char* sql);
  Status migrate();
  Result<std::optional<std::vector<std::string>>> key_jobs_locked(const std::string& owner,
                                                                  const IdempotencyKey& key, bool& conflict);
  Status append_log_locked(const std::string& job_id, const std::string& event, const std::string& detail);

  Status load_unfinished();
  void unfinished_delta(const std::string& owner, int64_t delta);

  std::mutex mu_;
  sqlite3* db_;  // owned
  // Queued + running jobs per owner, kept in step with every transaction that changes a
  // job's state (this process is the store's only writer), so quota checks cost no scan.
  std::map<std::string, int64_t> unfinished_;  // GUARDED_BY(mu_)
  int64_t unfinished_total_ = 0;               // GUARDED_BY(mu_)
};

}  // namespace musacoder::service
