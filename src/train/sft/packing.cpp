#include "train/sft/packing.h"

#include <map>

#include "core/check.h"
#include "core/splitmix.h"

namespace musacoder::train::sft {
namespace {


std::vector<MicroBatchPlan> group_rows(std::vector<PackedRow> rows, const std::vector<int64_t>& trained,
                                       int64_t rows_per_micro) {
  std::vector<MicroBatchPlan> micro;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i % static_cast<std::size_t>(rows_per_micro) == 0) micro.emplace_back();
    for (int64_t e : rows[i].examples) micro.back().trained_tokens += trained[static_cast<std::size_t>(e)];
    micro.back().rows.push_back(std::move(rows[i]));
  }
  return micro;
}

}  // namespace

std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  uint64_t state = seed * 0x100000001b3ull + static_cast<uint64_t>(epoch);
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(splitmix64_next(state) % static_cast<uint64_t>(i + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

std::vector<PackedRow> pack_rows(const std::vector<int64_t>& lengths, const std::vector<int64_t>& order,
                                 int64_t capacity) {
  std::vector<PackedRow> rows;
  std::multimap<int64_t, std::size_t> open;  // free tokens -> row
  for (int64_t e : order) {
    const int64_t len = lengths[static_cast<std::size_t>(e)];
    MC_CHECK(len >= 1 && len <= capacity);
    auto it = open.lower_bound(len);  // the fullest row with room
    std::size_t r;
    if (it == open.end()) {
      r = rows.size();
      rows.emplace_back();
    } else {
      r = it->second;
      open.erase(it);
    }
    rows[r].examples.push_back(e);
    rows[r].tokens += len;
    if (rows[r].tokens < capacity) open.emplace(capacity - rows[r].tokens, r);
  }
  return rows;
}

std::vector<StepPlan> plan_steps(const std::vector<int64_t>& lengths, const std::vector<int64_t>& trained,
                                 const PlanOptions& o) {
  MC_CHECK(o.rows_per_micro >= 1 && o.micro_per_step >= 1 && lengths.size() == trained.size());
  std::vector<StepPlan> steps;
  const auto n = static_cast<int64_t>(lengths.size());
  for (int64_t epoch = 0; epoch < o.epochs; ++epoch) {
    std::vector<int64_t> order = shuffled_order(n, o.seed, epoch);
    std::vector<PackedRow> rows = o.pack ? pack_rows(lengths, order, o.row_capacity) : std::vector<PackedRow>{};
    for (int64_t e : o.pack ? std::vector<int64_t>{} : order)
      rows.push_back({{e}, lengths[static_cast<std::size_t>(e)]});
    std::vector<MicroBatchPlan> micro = group_rows(std::move(rows), trained, o.rows_per_micro);
    for (std::size_t i = 0; i < micro.size(); ++i) {
      if (i % static_cast<std::size_t>(o.micro_per_step) == 0) steps.push_back({epoch, {}, 0, 0});
      steps.back().trained_tokens += micro[i].trained_tokens;
      for (const auto& r : micro[i].rows) steps.back().tokens += r.tokens;
      steps.back().micro_batches.push_back(std::move(micro[i]));
    }
  }
  return steps;
}

}  // namespace musacoder::train::sft
