// The device's timing lock: with several run slots on one GPU, the trials and checks of
// different evaluations may share the device, but a benchmark must have it to itself — a
// timed kernel that shares the GPU with another candidate's trials measures the neighbour
// too, and the speedup (and so the reward) turns into noise. Evaluations hold the lock
// shared while their runners use the device untimed and exclusively while they time.
//
// Writer-preferring: once an evaluation waits to time, no new shared holder enters, so a
// steady stream of trials cannot starve a benchmark (std::shared_mutex leaves that open).
//
// Thread-safety: all members may be called from any thread.
#pragma once

#include <condition_variable>
#include <mutex>

namespace musacoder::eval {

class TimingLock {
 public:
  void lock_shared() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return !writing_ && waiting_writers_ == 0; });
    ++readers_;
  }
  void unlock_shared() {
    std::lock_guard<std::mutex> l(mu_);
    if (--readers_ == 0) cv_.notify_all();
  }
  void lock() {
    std::unique_lock<std::mutex> l(mu_);
    ++waiting_writers_;
    cv_.wait(l, [&] { return !writing_ && readers_ == 0; });
    --waiting_writers_;
    writing_ = true;
  }
  void unlock() {
    std::lock_guard<std::mutex> l(mu_);
    writing_ = false;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int readers_ = 0, waiting_writers_ = 0;
  bool writing_ = false;
};

}  // namespace musacoder::eval
