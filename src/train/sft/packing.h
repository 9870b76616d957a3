// The data plan: which examples go into which packed row, micro-batch and optimizer step, for every epoch —
// computed up front from the example lengths alone, identically on every rank, so the schedule knows its length,
// every rank knows the global token count of a step without communication, and the data position of the
// training state is just (step).
//
// Per epoch e: order = shuffle(0..n-1) by (seed, e) (Fisher–Yates over splitmix64: the same on every platform);
// rows = best-fit packing of the examples in that order into rows of `row_capacity` tokens (an example goes to
// the fullest open row it fits, else opens a new row; rows keep creation order); micro-batches = consecutive
// groups of rows_per_micro rows; steps = consecutive groups of micro_per_step micro-batches (the last step of an
// epoch may hold fewer). Micro-batch i of a step belongs to rank i % world_size.
#pragma once

#include <cstdint>
#include <vector>

namespace musacoder::train::sft {

struct PackedRow {
  std::vector<int64_t> examples;  // indexes into the dataset, in row order
  int64_t tokens = 0;
};

struct MicroBatchPlan {
  std::vector<PackedRow> rows;
  int64_t trained_tokens = 0;
};

struct StepPlan {
  int64_t epoch = 0;
  std::vector<MicroBatchPlan> micro_batches;  // micro_batches[i] runs on rank i % world_size
  int64_t trained_tokens = 0;                 // over all micro-batches: the loss normaliser of this step
  int64_t tokens = 0;
};

struct PlanOptions {
  int64_t row_capacity = 8192;  // --max-seq-len
  int64_t rows_per_micro = 1;   // --per-device-batch-tokens / --max-seq-len
  int64_t micro_per_step = 1;   // --gradient-accumulation-steps × world size
  int64_t epochs = 1;
  uint64_t seed = 42;
  bool pack = true;             // false: one example per row
};

// A permutation of 0..n-1 determined by (seed, epoch).
std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed, int64_t epoch);

// Rows of at most `capacity` tokens; every length must be in [1, capacity].
std::vector<PackedRow> pack_rows(const std::vector<int64_t>& lengths, const std::vector<int64_t>& order,
                                 int64_t capacity);

// Every step of the run. lengths[i] / trained[i]: tokens and trained tokens of example i.
std::vector<StepPlan> plan_steps(const std::vector<int64_t>& lengths, const std::vector<int64_t>& trained,
                                 const PlanOptions& o);

}  // namespace musacoder::train::sft
