// The warm runner: one long-lived Python process (python/mooreeval_runner/zygote.py) that
// has imported torch and forks a fresh process per runner job, so a job starts in ~10 ms
// instead of ~5 s. Jobs stay separate processes: a crash, an illegal CUDA address or a
// timeout ends that job only (the zygote never touches CUDA, each job initialises its own
// context), and a deadline still kills the job's whole process group.
//
// A job is started as `mooreeval_warm_client SOCKET <runner argv>` (warm_client_main.cpp): a
// short-lived native process that hands its pipes to the zygote and then mirrors the job's
// exit, so to Subprocess and RunnerSession it is the job.
//
// The listening socket and the zygote's log file are created here, in a private directory,
// and handed to the zygote as open descriptors: a sandboxed zygote (WarmRunnerSpec::sandbox)
// never sees their paths, so no job can unlink or replace the socket.
//
// Thread-safety: socket_path() and healthy() may be called from any thread.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "core/files.h"
#include "core/status.h"
#include "process/subprocess.h"

namespace musacoder::run {

struct RunnerOptions;

struct WarmRunnerSpec {
  std::filesystem::path parent_dir;                    // its private dir goes here (default: system temp)
  std::chrono::milliseconds startup_deadline{120000};  // until torch is imported and it serves
  // Exclusive mode, for untrusted jobs: `sandbox` puts the zygote into a sandbox of its own
  // (its own pid namespace: the zygote refuses otherwise), it serves one job at a time, and
  // after each job it kills every process the job left and empties /tmp, /dev/shm and SysV
  // IPC (see zygote.py). Empty: a trusted zygote on the host, serving jobs concurrently.
  ProcessWrapper sandbox;
  // Resident mode, for trusted reference jobs (python/mooreeval_runner/resident.py): not a
  // zygote but a server that sets up this device ("cpu", "cuda:N") once and runs reference
  // jobs in its own process, one at a time. Empty: a zygote. Excludes `sandbox`.
  std::string resident_device;
};

class WarmRunner {
 public:
  // Starts the zygote (or the resident server) with the runner's interpreter and environment and waits until
  // it answers a ping (it does once torch is imported), or the startup deadline passes. Fails with the
  // zygote's own words when it refuses (e.g. importing torch poisons forked CUDA jobs) or exits.
  static Result<std::unique_ptr<WarmRunner>> start(const RunnerOptions& options, const WarmRunnerSpec& spec);
  ~WarmRunner();  // kills the zygote (and with it any job still running)

  const std::filesystem::path& socket_path() const { return socket_; }
  // The client program that starts a job here (locate_warm_client()).
  const std::filesystem::path& client_path() const { return client_; }
  // Whether the zygote answers a ping within `timeout` (it may have died). In exclusive mode
  // a "yes" also means the clean-up after the previous job is finished.
  bool healthy(std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) const;
  // The last bytes the zygote printed (why it refused or died).
  std::string log_tail() const;

 private:
  WarmRunner(TempDir dir, std::unique_ptr<Subprocess> zygote, std::filesystem::path client);
  TempDir dir_;
  std::filesystem::path socket_, client_;
  std::unique_ptr<Subprocess> zygote_;
};

// The warm-job client program: $MOOREEVAL_WARM_CLIENT if set, else the one this build made
// (mooreeval_warm_client). Fails, naming the path, when it is not an executable file; a warm
// runner does not start without it.
Result<std::filesystem::path> locate_warm_client();

}  // namespace musacoder::run
