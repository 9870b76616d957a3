#include "mooreeval/pipeline/timing_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <shared_mutex>
#include <thread>
#include <vector>

namespace musacoder::eval {
namespace {

using namespace std::chrono_literals;

TEST(TimingLock, SharedHoldersOverlapAndTimingExcludesThem) {
  TimingLock lock;
  std::atomic<int> inside{0}, max_inside{0};
  std::atomic<bool> overlap_while_timing{false};
  std::atomic<bool> timing{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      for (int k = 0; k < 50; ++k) {
        std::shared_lock<TimingLock> shared(lock);
        if (timing) overlap_while_timing = true;
        const int now = ++inside;
        int seen = max_inside;
        while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(200us);
        --inside;
      }
    });
  threads.emplace_back([&] {
    for (int k = 0; k < 50; ++k) {
      std::unique_lock<TimingLock> exclusive(lock);
      timing = true;
      if (inside != 0) overlap_while_timing = true;
      std::this_thread::sleep_for(100us);
      timing = false;
    }
  });
  for (auto& t : threads) t.join();
  EXPECT_FALSE(overlap_while_timing) << "a benchmark shared the device with untimed work";
  EXPECT_GT(max_inside.load(), 1) << "untimed work of several slots never overlapped";
}

// A waiting benchmark is not starved: once it waits, new untimed work waits behind it.
TEST(TimingLock, AWaitingBenchmarkGoesBeforeLaterSharedHolders) {
  TimingLock lock;
  lock.lock_shared();  // one slot's trials are running
  std::atomic<bool> timed{false}, later_entered{false}, later_entered_before_timing{false};
  std::thread bench([&] {
    std::unique_lock<TimingLock> exclusive(lock);
    timed = true;
  });
  std::this_thread::sleep_for(50ms);  // the benchmark now waits for the trials to end
  std::thread later([&] {
    std::shared_lock<TimingLock> shared(lock);
    later_entered_before_timing = !timed;
    later_entered = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(later_entered) << "new untimed work overtook a waiting benchmark";
  lock.unlock_shared();
  bench.join();
  later.join();
  EXPECT_TRUE(timed);
  EXPECT_FALSE(later_entered_before_timing);
}

}  // namespace
}  // namespace musacoder::eval
