#include "mooreeval/pipeline/batch.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "core/files.h"

namespace musacoder::eval {

namespace fs = std::filesystem;

Result<std::vector<BatchJob>> discover_samples(const std::vector<task::TaskSpec>& tasks,
                                               const fs::path& samples_dir) {
  std::error_code ec;
  if (!fs::is_directory(samples_dir, ec))
    return not_found("samples directory not found: " + samples_dir.string());
  std::vector<BatchJob> jobs;
  for (const auto& t : tasks) {
    std::vector<fs::path> files;
    fs::path single = samples_dir / (t.id + ".py");
    if (fs::is_regular_file(single, ec)) files.push_back(single);
    fs::path many = samples_dir / t.id;
    if (fs::is_directory(many, ec)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::directory_iterator(many, ec)) {
        auto ext = e.path().extension();
        if (e.is_regular_file() && (ext == ".py" || ext == ".md" || ext == ".txt")) found.push_back(e.path());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    }
    for (std::size_t i = 0; i < files.size(); ++i)
      jobs.push_back({t, files[i], t.id + "#" + std::to_string(i)});
  }
  if (jobs.empty()) return not_found("no samples for any task under " + samples_dir.string());
  return jobs;
}

std::vector<Verdict> run_batch(Evaluator& evaluator, const std::vector<BatchJob>& jobs, int workers,
                               const std::function<void(std::size_t, const Verdict&)>& on_done) {
  std::vector<Verdict> verdicts(jobs.size());
  std::atomic<std::size_t> next{0};
  std::mutex done_mu;
  auto work = [&] {
    for (std::size_t i = next++; i < jobs.size(); i = next++) {
      const BatchJob& job = jobs[i];
      // Read a little over the limit, so an oversized submission is reported as such.
      auto text = read_file(job.sample, evaluator.options().max_submission_bytes + 1);
      Verdict v = text.ok() ? evaluator.evaluate(job.task, *text)
                            : evaluator.reject_submission(job.task, text.status().message());
      std::lock_guard<std::mutex> lock(done_mu);
      verdicts[i] = std::move(v);
      if (on_done) on_done(i, verdicts[i]);
    }
  };
  std::vector<std::thread> pool;
  for (int w = 0; w < std::max(1, workers); ++w) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  return verdicts;
}

}  // namespace musacoder::eval
