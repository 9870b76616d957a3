#include "mooreeval/service/store.h"

#include <sqlite3.h>

#include "core/text.h"

namespace musacoder::service {

namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS jobs(
  id TEXT PRIMARY KEY,
  task TEXT NOT NULL,
  label TEXT NOT NULL DEFAULT '',
  candidate BLOB NOT NULL,
  candidate_sha256 TEXT NOT NULL,
  candidate_bytes INTEGER NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  worker TEXT NOT NULL DEFAULT '',
  created_at REAL NOT NULL,
  started_at REAL NOT NULL DEFAULT 0,
  finished_at REAL NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE TABLE IF NOT EXISTS results(
  job_id TEXT PRIMARY KEY REFERENCES jobs(id),
  verdict TEXT NOT NULL,
  reward REAL,
  verdict_json TEXT NOT NULL,
  worker TEXT NOT NULL,
  stored_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS job_log(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id TEXT NOT NULL,
  at REAL NOT NULL,
  event TEXT NOT NULL,
  detail TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS job_log_job ON job_log(job_id);
CREATE TABLE IF NOT EXISTS idempotency(
  owner TEXT NOT NULL,
  key TEXT NOT NULL,
  request_sha TEXT NOT NULL,
  job_ids TEXT NOT NULL,
  created_at REAL NOT NULL,
  PRIMARY KEY(owner, key));
CREATE INDEX IF NOT EXISTS idempotency_age ON idempotency(created_at);
)sql";

// Added after the first release: applied to databases created before (see migrate()).
constexpr const char* kOwnerIndexes = R"sql(
CREATE INDEX IF NOT EXISTS jobs_owner_state ON jobs(owner, state);
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs(state, finished_at);
)sql";

// RAII prepared statement with positional binding helpers.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool prepared() const { return rc_ == SQLITE_OK; }
  Stmt& text(int i, const std::string& s) {
    sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& blob(int i, const std::string& s) {
    sqlite3_bind_blob(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& real(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  Stmt& integer(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Stmt& real_or_null(int i, std::optional<double> v) {
    if (v) return real(i, *v);
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return sqlite3_step(stmt_); }
  std::string col_text(int i) const {
    auto* p = reinterpret_cast<const char*>(sqlite3_column_blob(stmt_, i));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, i))) : std::string();
  }
  double col_real(int i) const { return sqlite3_column_double(stmt_, i); }
  int64_t col_int(int i) const { return sqlite3_column_int64(stmt_, i); }
  bool col_null(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
  Status error(const char* what) const {
    return internal_error(std::string("sqlite: ") + what + ": " + sqlite3_errmsg(db_));
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

// Rolls back unless committed: every early return inside a transaction stays atomic.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) {
    ok_ = sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
  }
  ~Transaction() {
    if (ok_ && !done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  bool begun() const { return ok_; }
  Status commit() {
    done_ = true;
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK)
      return internal_error(std::string("sqlite: commit: ") + sqlite3_errmsg(db_));
    return {};
  }

 private:
  sqlite3* db_;
  bool ok_ = false, done_ = false;
};

Status begin_error(sqlite3* db) {
  return internal_error(std::string("sqlite: begin: ") + sqlite3_errmsg(db));
}

}  // namespace

Result<std::unique_ptr<Store>> Store::open(const StoreOptions& options) {
  sqlite3* db = nullptr;
  const std::string path = options.path.string();
  int rc = sqlite3_open_v2(path.c_str(), &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return internal_error("cannot open database " + path + ": " + msg);
  }
  std::unique_ptr<Store> store(new Store(db));
  sqlite3_busy_timeout(db, static_cast<int>(options.busy_timeout.count()));
  // WAL: status reads from other processes (sqlite3 CLI, tests) never block the writer;
  // synchronous=NORMAL in WAL mode is durable against process crashes (not power loss
  // of the last transactions), which is what "committed before acked" needs here.
  // auto_vacuum=INCREMENTAL takes effect on a new file only (before the first table):
  // then purge() gives freed pages back to the file system.
  MC_RETURN_IF_ERROR(store->exec("PRAGMA auto_vacuum=INCREMENTAL"));
  if (path != ":memory:") MC_RETURN_IF_ERROR(store->exec("PRAGMA journal_mode=WAL"));
  MC_RETURN_IF_ERROR(store->exec("PRAGMA synchronous=NORMAL"));
  MC_RETURN_IF_ERROR(store->exec(kSchema));
  MC_RETURN_IF_ERROR(store->migrate());
  MC_RETURN_IF_ERROR(store->load_unfinished());
  return store;
}

Status Store::migrate() {
  Stmt q(db_, "SELECT COUNT(*) FROM pragma_table_info('jobs') WHERE name='owner'");
  if (!q.prepared() || q.step() != SQLITE_ROW) return q.error("schema check");
  if (q.col_int(0) == 0) MC_RETURN_IF_ERROR(exec("ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT ''"));
  return exec(kOwnerIndexes);
}

Status Store::load_unfinished() {
  Stmt s(db_, "SELECT owner, COUNT(*) FROM jobs WHERE state IN ('queued', 'running') GROUP BY owner");
  if (!s.prepared()) return s.error("prepare unfinished counts");
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) unfinished_delta(s.col_text(0), s.col_int(1));
  if (rc != SQLITE_DONE) return s.error("unfinished counts");
  return {};
}

void Store::unfinished_delta(const std::string& owner, int64_t delta) {
  unfinished_total_ += delta;
  if ((unfinished_[owner] += delta) <= 0) unfinished_.erase(owner);
}

Store::~Store() {
  sqlite3_close(db_);
}

Status Store::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return internal_error("sqlite: " + msg);
  }
  return {};
}

Status Store::append_log_locked(const std::string& job_id, const std::string& event,
                                const std::string& detail) {
  Stmt s(db_, "INSERT INTO job_log(job_id, at, event, detail) VALUES(?, ?, ?, ?)");
  if (!s.prepared()) return s.error("prepare log");
  s.text(1, job_id).real(2, unix_now()).text(3, event).text(4, detail);
  if (s.step() != SQLITE_DONE) return s.error("insert log");
  return {};
}

Status Store::append_log(const std::string& job_id, const std::string& event, const std::string& detail) {
  std::lock_guard<std::mutex> lock(mu_);
  return append_log_locked(job_id, event, detail);
}

Result<std::optional<std::vector<std::string>>> Store::key_jobs_locked(const std::string& owner,
                                                                       const IdempotencyKey& key,
                                                                       bool& conflict) {
  Stmt q(db_, "SELECT request_sha, job_ids FROM idempotency WHERE owner=? AND key=?");
  if (!q.prepared()) return q.error("prepare key lookup");
  q.text(1, owner).text(2, key.key);
  const int rc = q.step();
  if (rc == SQLITE_DONE) return std::optional<std::vector<std::string>>();
  if (rc != SQLITE_ROW) return q.error("key lookup");
  conflict = q.col_text(0) != key.request_sha;
  std::vector<std::string> ids;
  const std::string joined = q.col_text(1);
  for (std::size_t p = 0; p < joined.size(); p += 33) ids.push_back(joined.substr(p, 32));
  return std::optional<std::vector<std::string>>(std::move(ids));
}

Result<InsertOutcome> Store::insert_jobs(const std::vector<JobMessage>& jobs, const std::string& owner,
                                         const std::optional<IdempotencyKey>& key) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  if (!tx.begun()) return begin_error(db_);
  InsertOutcome out;
  if (key) {
    auto earlier = key_jobs_locked(owner, *key, out.key_conflict);
    if (!earlier.ok()) return earlier.status();
    if (*earlier) {
      out.replayed = !out.key_conflict;
      out.job_ids = std::move(**earlier);
      return out;  // nothing written; the transaction rolls back
    }
  }
  const double now = unix_now();
  std::string joined;
  for (const auto& j : jobs) {
    Stmt s(db_,
           "INSERT INTO jobs(id, task, label, candidate, candidate_sha256, candidate_bytes, state, created_at, "
           "owner) VALUES(?, ?, ?, ?, ?, ?, 'queued', ?, ?)");
    if (!s.prepared()) return s.error("prepare insert job");
    s.text(1, j.job_id).text(2, j.task_id).text(3, j.label).blob(4, j.candidate);
    s.text(5, sha256_hex(j.candidate)).integer(6, static_cast<int64_t>(j.candidate.size())).real(7, now);
    s.text(8, owner);
    if (s.step() != SQLITE_DONE) return s.error("insert job");
    MC_RETURN_IF_ERROR(append_log_locked(j.job_id, "submitted", "task " + j.task_id));
    joined += (joined.empty() ? "" : ",") + j.job_id;
    out.job_ids.push_back(j.job_id);
  }
  if (key) {
    Stmt k(db_, "INSERT INTO idempotency(owner, key, request_sha, job_ids, created_at) VALUES(?, ?, ?, ?, ?)");
    if (!k.prepared()) return k.error("prepare insert key");
    k.text(1, owner).text(2, key->key).text(3, key->request_sha).text(4, joined).real(5, now);
    if (k.step() != SQLITE_DONE) return k.error("insert key");
  }
  MC_RETURN_IF_ERROR(tx.commit());
  unfinished_delta(owner, static_cast<int64_t>(jobs.size()));
  return out;
}

Result<std::optional<InsertOutcome>> Store::find_key(const std::string& owner, const IdempotencyKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  InsertOutcome out;
  auto earlier = key_jobs_locked(owner, key, out.key_conflict);
  if (!earlier.ok()) return earlier.status();
  if (!*earlier) return std::optional<InsertOutcome>();
  out.replayed = !out.key_conflict;
  out.job_ids = std::move(**earlier);
  return std::optional<InsertOutcome>(std::move(out));
}

Status Store::forget_key(const std::string& owner, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "DELETE FROM idempotency WHERE owner=? AND key=?");
  if (!s.prepared()) return s.error("prepare forget key");
  s.text(1, owner).text(2, key);
  if (s.step() != SQLITE_DONE) return s.error("forget key");
  return {};
}

Result<int64_t> Store::unfinished_count(const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = unfinished_.find(owner);
  return it == unfinished_.end() ? int64_t{0} : it->second;
}

Result<int64_t> Store::unfinished_total() {
  std::lock_guard<std::mutex> lock(mu_);
  return unfinished_total_;
}

Result<int64_t> Store::used_bytes() {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_,
         "SELECT (SELECT page_count FROM pragma_page_count()) - (SELECT freelist_count FROM "
         "pragma_freelist_count()), (SELECT page_size FROM pragma_page_size())");
  if (!s.prepared() || s.step() != SQLITE_ROW) return s.error("database size");
  return s.col_int(0) * s.col_int(1);
}

Result<PurgeOutcome> Store::purge(double before, int64_t max_jobs, double keys_before) {
  std::lock_guard<std::mutex> lock(mu_);
  PurgeOutcome out;
  {
    Transaction tx(db_);
    if (!tx.begun()) return begin_error(db_);
    MC_RETURN_IF_ERROR(exec("CREATE TEMP TABLE IF NOT EXISTS purge_ids(id TEXT PRIMARY KEY)"));
    MC_RETURN_IF_ERROR(exec("DELETE FROM purge_ids"));
    Stmt pick(db_,
              "INSERT INTO purge_ids SELECT id FROM jobs WHERE state IN ('done', 'cancelled') AND "
              "finished_at < ? ORDER BY finished_at LIMIT ?");
    if (!pick.prepared()) return pick.error("prepare purge");
    pick.real(1, before).integer(2, max_jobs);
    if (pick.step() != SQLITE_DONE) return pick.error("purge pick");
    out.jobs = sqlite3_changes(db_);
    MC_RETURN_IF_ERROR(exec("DELETE FROM results WHERE job_id IN (SELECT id FROM purge_ids)"));
    MC_RETURN_IF_ERROR(exec("DELETE FROM job_log WHERE job_id IN (SELECT id FROM purge_ids)"));
    MC_RETURN_IF_ERROR(exec("DELETE FROM jobs WHERE id IN (SELECT id FROM purge_ids)"));
    Stmt keys(db_, "DELETE FROM idempotency WHERE created_at < ?");
    if (!keys.prepared()) return keys.error("prepare purge keys");
    keys.real(1, keys_before);
    if (keys.step() != SQLITE_DONE) return keys.error("purge keys");
    out.keys = sqlite3_changes(db_);
    MC_RETURN_IF_ERROR(tx.commit());
  }
  if (out.jobs > 0) (void)exec("PRAGMA incremental_vacuum");
  return out;
}

Status Store::mark_running(const std::string& job_id, const std::string& worker, int attempt) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  if (!tx.begun()) return begin_error(db_);
  Stmt s(db_,
         "UPDATE jobs SET state='running', worker=?, attempts=MAX(attempts, ?), started_at=? "
         "WHERE id=? AND state IN ('queued', 'running')");
  if (!s.prepared()) return s.error("prepare mark running");
  s.text(1, worker).integer(2, attempt).real(3, unix_now()).text(4, job_id);
  if (s.step() != SQLITE_DONE) return s.error("mark running");
  const bool changed = sqlite3_changes(db_) > 0;
  MC_RETURN_IF_ERROR(append_log_locked(job_id, changed ? "started" : "started_ignored",
                                       "attempt " + std::to_string(attempt) + " on " + worker));
  return tx.commit();
}

Result<CommitOutcome> Store::commit_result(const std::string& job_id, const std::string& verdict,
                                           std::optional<double> reward, const std::string& verdict_json,
                                           const std::string& worker) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  if (!tx.begun()) return begin_error(db_);
  Stmt q(db_, "SELECT state, owner FROM jobs WHERE id=?");
  if (!q.prepared()) return q.error("prepare job state");
  q.text(1, job_id);
  int rc = q.step();
  if (rc == SQLITE_DONE) return CommitOutcome::kUnknownJob;
  if (rc != SQLITE_ROW) return q.error("job state");
  const std::string state = q.col_text(0), owner = q.col_text(1);
  CommitOutcome outcome;
  if (state == "cancelled") {
    outcome = CommitOutcome::kCancelled;
    MC_RETURN_IF_ERROR(append_log_locked(job_id, "result_dropped", "job was cancelled; from " + worker));
  } else {
    Stmt ins(db_,
             "INSERT OR IGNORE INTO results(job_id, verdict, reward, verdict_json, worker, stored_at) "
             "VALUES(?, ?, ?, ?, ?, ?)");
    if (!ins.prepared()) return ins.error("prepare insert result");
    ins.text(1, job_id).text(2, verdict).real_or_null(3, reward).text(4, verdict_json).text(5, worker);
    ins.real(6, unix_now());
    if (ins.step() != SQLITE_DONE) return ins.error("insert result");
    if (sqlite3_changes(db_) == 1) {
      outcome = CommitOutcome::kStored;
      // The candidate is needed only to recover an unfinished job; its SHA-256 stays.
      Stmt up(db_, "UPDATE jobs SET state='done', finished_at=?, candidate=x'' WHERE id=?");
      if (!up.prepared()) return up.error("prepare finish job");
      up.real(1, unix_now()).text(2, job_id);
      if (up.step() != SQLITE_DONE) return up.error("finish job");
      MC_RETURN_IF_ERROR(append_log_locked(job_id, "result_stored", verdict + " from " + worker));
    } else {
      outcome = CommitOutcome::kDuplicate;
      MC_RETURN_IF_ERROR(
          append_log_locked(job_id, "duplicate_result", verdict + " from " + worker + " ignored"));
    }
  }
  MC_RETURN_IF_ERROR(tx.commit());
  if (outcome == CommitOutcome::kStored) unfinished_delta(owner, -1);
  return outcome;
}

Result<CancelOutcome> Store::cancel(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  if (!tx.begun()) return begin_error(db_);
  Stmt q(db_, "SELECT state, owner FROM jobs WHERE id=?");
  if (!q.prepared()) return q.error("prepare job state");
  q.text(1, job_id);
  int rc = q.step();
  if (rc == SQLITE_DONE) return CancelOutcome::kUnknownJob;
  if (rc != SQLITE_ROW) return q.error("job state");
  const std::string state = q.col_text(0), owner = q.col_text(1);
  if (state == "done") return CancelOutcome::kAlreadyDone;
  if (state == "cancelled") return CancelOutcome::kAlreadyCancelled;
  Stmt up(db_, "UPDATE jobs SET state='cancelled', finished_at=?, candidate=x'' WHERE id=?");
  if (!up.prepared()) return up.error("prepare cancel");
  up.real(1, unix_now()).text(2, job_id);
  if (up.step() != SQLITE_DONE) return up.error("cancel");
  MC_RETURN_IF_ERROR(append_log_locked(job_id, "cancelled", "was " + state));
  MC_RETURN_IF_ERROR(tx.commit());
  unfinished_delta(owner, -1);
  return CancelOutcome::kCancelled;
}

Result<std::optional<JobRecord>> Store::get(const std::string& job_id, bool with_verdict) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_,
         with_verdict
             ? "SELECT j.id, j.task, j.label, j.candidate_sha256, j.candidate_bytes, j.state, j.attempts, "
               "j.worker, j.created_at, j.started_at, j.finished_at, r.verdict, r.reward, r.verdict_json, j.owner "
               "FROM jobs j LEFT JOIN results r ON r.job_id = j.id WHERE j.id=?"
             : "SELECT j.id, j.task, j.label, j.candidate_sha256, j.candidate_bytes, j.state, j.attempts, "
               "j.worker, j.created_at, j.started_at, j.finished_at, r.verdict, r.reward, '', j.owner "
               "FROM jobs j LEFT JOIN results r ON r.job_id = j.id WHERE j.id=?");
  if (!s.prepared()) return s.error("prepare get job");
  s.text(1, job_id);
  int rc = s.step();
  if (rc == SQLITE_DONE) return std::optional<JobRecord>();
  if (rc != SQLITE_ROW) return s.error("get job");
  JobRecord r;
  r.job_id = s.col_text(0);
  r.task_id = s.col_text(1);
  r.label = s.col_text(2);
  r.candidate_sha256 = s.col_text(3);
  r.candidate_bytes = static_cast<std::size_t>(s.col_int(4));
  if (!parse_job_state(s.col_text(5), r.state))
    return internal_error("job " + job_id + ": bad state in database");
  r.attempts = static_cast<int>(s.col_int(6));
  r.worker = s.col_text(7);
  r.created_at = s.col_real(8);
  r.started_at = s.col_real(9);
  r.finished_at = s.col_real(10);
  r.verdict = s.col_text(11);
  if (!s.col_null(12)) r.reward = s.col_real(12);
  r.verdict_json = s.col_text(13);
  r.owner = s.col_text(14);
  return std::optional<JobRecord>(std::move(r));
}

Result<std::vector<LogEntry>> Store::log(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "SELECT at, event, detail FROM job_log WHERE job_id=? ORDER BY seq");
  if (!s.prepared()) return s.error("prepare log");
  s.text(1, job_id);
  std::vector<LogEntry> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) out.push_back({s.col_real(0), s.col_text(1), s.col_text(2)});
  if (rc != SQLITE_DONE) return s.error("read log");
  return out;
}

Result<StateCounts> Store::counts() {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "SELECT state, COUNT(*) FROM jobs GROUP BY state");
  if (!s.prepared()) return s.error("prepare counts");
  StateCounts c;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    JobState st;
    if (!parse_job_state(s.col_text(0), st)) continue;
    int64_t n = s.col_int(1);
    switch (st) {
      case JobState::kQueued:
        c.queued = n;
        break;
      case JobState::kRunning:
        c.running = n;
        break;
      case JobState::kDone:
        c.done = n;
        break;
      case JobState::kCancelled:
        c.cancelled = n;
        break;
    }
  }
  if (rc != SQLITE_DONE) return s.error("counts");
  return c;
}

Result<std::vector<UnfinishedJob>> Store::unfinished_jobs() {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_,
         "SELECT id, task, candidate, label, attempts FROM jobs WHERE state IN ('queued', 'running') "
         "ORDER BY created_at, rowid");
  if (!s.prepared()) return s.error("prepare unfinished");
  std::vector<UnfinishedJob> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW)
    out.push_back(
        {{s.col_text(0), s.col_text(1), s.col_text(2), s.col_text(3)}, static_cast<int>(s.col_int(4))});
  if (rc != SQLITE_DONE) return s.error("unfinished");
  return out;
}

Result<int64_t> Store::result_count() {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "SELECT COUNT(*) FROM results");
  if (!s.prepared() || s.step() != SQLITE_ROW) return s.error("result count");
  return s.col_int(0);
}

}  // namespace musacoder::service
