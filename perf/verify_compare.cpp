// verify_compare_bench [--iters N]
// Seconds of the numeric check (read both outputs files, compare) for a typical KernelBench
// output: 8 trials x 1M elements, float32 and bfloat16, the candidate within tolerance (the
// common case: every element is visited). Side by side: the verify stage (files read into
// memory, compared from their stored type) and a baseline that reads each file into memory and
// widens it into std::vector<double> before comparing (the reader before). Median of N runs, files
// in the page cache, as right after the runner wrote them.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/files.h"
#include "mooreeval/verify/compare.h"
#include "mooreeval/verify/output_file.h"

namespace {

using namespace musacoder;
using Clock = std::chrono::steady_clock;

constexpr int kTrials = 8;
constexpr int64_t kRows = 1024, kCols = 1024;  // 1M elements per trial

template <typename T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// An outputs file (python/mooreeval_runner/tensors.py) of kTrials trials of one (kRows, kCols)
// tensor each; `element(t, i, out)` appends element i of trial t in the storage type.
template <typename Element>
std::string outputs_file(const std::string& dtype, std::size_t element_size, Element element) {
  std::string s = "MCOUT002";
  s.reserve(s.size() + kTrials * (64 + kRows * kCols * element_size));
  put<uint32_t>(s, kTrials);
  for (int t = 0; t < kTrials; ++t) {
    put<uint32_t>(s, 1);
    put<uint32_t>(s, static_cast<uint32_t>(dtype.size()));
    s += dtype;
    put<uint32_t>(s, 2);
    put<int64_t>(s, kRows);
    put<int64_t>(s, kCols);
    put<uint64_t>(s, static_cast<uint64_t>(kRows * kCols));
    put<uint32_t>(s, static_cast<uint32_t>(dtype.size()));
    s += dtype;
    for (int64_t i = 0; i < kRows * kCols; ++i) element(t, i, s);
  }
  return s;
}

uint16_t to_bfloat16(float f) {  // round to nearest even; the inputs are finite
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

// ---- Baseline: whole file into memory, every element widened into std::vector<double>. ----

struct WideTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<double> values;
};
using WideTrials = std::vector<std::vector<WideTensor>>;

double widen_bf16(uint16_t b) {
  const uint32_t wide = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

// Only what this benchmark writes (float32 or bfloat16); exits on anything else.
WideTrials read_wide(const std::filesystem::path& path) {
  auto data = read_file(path, std::size_t{8} << 30);
  if (!data.ok()) {
    std::fprintf(stderr, "baseline: %s\n", data.status().message().c_str());
    std::exit(1);
  }
  const std::string& d = *data;
  std::size_t pos = 8;
  auto get = [&](auto& v) {
    std::memcpy(&v, d.data() + pos, sizeof v);
    pos += sizeof v;
  };
  auto get_str = [&] {
    uint32_t n;
    get(n);
    std::string s = d.substr(pos, n);
    pos += n;
    return s;
  };
  uint32_t n_trials;
  get(n_trials);
  WideTrials trials(n_trials);
  for (auto& trial : trials) {
    uint32_t n_tensors;
    get(n_tensors);
    for (uint32_t k = 0; k < n_tensors; ++k) {
      WideTensor t;
      t.dtype = get_str();
      uint32_t ndim;
      get(ndim);
      t.shape.resize(ndim);
      for (auto& x : t.shape) get(x);
      uint64_t numel;
      get(numel);
      const std::string storage = get_str();
      t.values.resize(numel);
      if (storage == "float32") {
        for (auto& v : t.values) {
          float f;
          get(f);
          v = f;
        }
      } else if (storage == "bfloat16") {
        for (auto& v : t.values) {
          uint16_t b;
          get(b);
          v = widen_bf16(b);
        }
      } else {
        std::fprintf(stderr, "baseline: storage %s not handled\n", storage.c_str());
        std::exit(1);
      }
      trial.push_back(std::move(t));
    }
  }
  return trials;
}

// The same rules as verify::compare_outputs over the widened values (no failure messages).
verify::NumericReport compare_wide(const WideTrials& ref, const WideTrials& cand,
                                   const verify::Tolerance& tol) {
  verify::NumericReport rep;
  rep.trials = static_cast<int>(ref.size());
  for (std::size_t t = 0; t < ref.size(); ++t) {
    bool ok_trial = t < cand.size() && cand[t].size() == ref[t].size();
    for (std::size_t k = 0; ok_trial && k < ref[t].size(); ++k) {
      const auto &r = ref[t][k], &c = cand[t][k];
      if (r.shape != c.shape || r.dtype != c.dtype) {
        ok_trial = false;
        break;
      }
      std::size_t bad = 0;
      for (std::size_t i = 0; i < r.values.size(); ++i) {
        const double rv = r.values[i], cv = c.values[i];
        bool ok;
        if (!std::isfinite(rv) || !std::isfinite(cv)) {
          ok = (std::isnan(rv) && std::isnan(cv)) || rv == cv;
        } else {
          const double abs_err = std::fabs(cv - rv);
          rep.max_abs_error = std::max(rep.max_abs_error, abs_err);
          rep.max_rel_error = std::max(rep.max_rel_error, abs_err / std::max(std::fabs(rv), 1e-12));
          ok = abs_err <= tol.atol + tol.rtol * std::fabs(rv);
        }
        bad += !ok;
      }
      ok_trial = bad == 0;
    }
    rep.passed += ok_trial;
  }
  return rep;
}

template <typename F>
double median_seconds(int iters, F f) {
  std::vector<double> s;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = Clock::now();
    f();
    s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 7;
  for (int i = 1; i + 1 < argc; i += 2)
    if (!std::strcmp(argv[i], "--iters")) iters = std::max(1, std::atoi(argv[i + 1]));
  auto dir = TempDir::create("mc-verify-bench-");
  if (!dir.ok()) {
    std::fprintf(stderr, "verify_compare_bench: %s\n", dir.status().message().c_str());
    return 1;
  }

  // Reference ~ N(0, 1); the candidate differs by a relative 1e-4 (float32) or one bf16 ulp on
  // a quarter of the elements, inside the tolerance.
  const std::size_t n = kTrials * kRows * kCols;
  std::vector<float> ref(n);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (auto& v : ref) v = normal(rng);
  std::vector<float> noise(n);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (auto& v : noise) v = unit(rng);
  auto at = [](int t, int64_t i) { return static_cast<std::size_t>(t) * kRows * kCols + i; };

  struct Case {
    const char* name;
    std::string ref, cand;
    verify::Tolerance tol;
  };
  std::vector<Case> cases;
  cases.push_back(
      {"float32 8x(1024,1024)",
       outputs_file("float32", 4, [&](int t, int64_t i, std::string& s) { put<float>(s, ref[at(t, i)]); }),
       outputs_file("float32", 4,
                    [&](int t, int64_t i, std::string& s) {
                      const std::size_t j = at(t, i);
                      put<float>(s, ref[j] * (1.0f + 1e-4f * noise[j]));
                    }),
       {1e-3, 1e-3}});
  cases.push_back(
      {"bfloat16 8x(1024,1024)",
       outputs_file("bfloat16", 2,
                    [&](int t, int64_t i, std::string& s) { put<uint16_t>(s, to_bfloat16(ref[at(t, i)])); }),
       outputs_file("bfloat16", 2,
                    [&](int t, int64_t i, std::string& s) {
                      const std::size_t j = at(t, i);
                      const uint16_t b = to_bfloat16(ref[j]);
                      put<uint16_t>(s, noise[j] > 0.5f ? static_cast<uint16_t>(b + 1) : b);
                    }),
       {1e-2, 1e-2}});

  std::printf("%-24s %9s %12s %12s %8s  %s\n", "case", "MB/side", "baseline s", "verify s", "ratio",
              "passed, max_abs_error, max_rel_error (both)");
  for (const auto& c : cases) {
    const auto ref_path = dir->path() / "reference.bin", cand_path = dir->path() / "candidate.bin";
    if (!write_file_atomic(ref_path, c.ref).ok() || !write_file_atomic(cand_path, c.cand).ok()) {
      std::fprintf(stderr, "verify_compare_bench: cannot write the files\n");
      return 1;
    }
    verify::NumericReport base_rep, new_rep;
    const double base_s = median_seconds(
        iters, [&] { base_rep = compare_wide(read_wide(ref_path), read_wide(cand_path), c.tol); });
    const double new_s = median_seconds(iters, [&] {
      auto r = verify::read_output_file(ref_path);
      auto k = verify::read_output_file(cand_path);
      if (!r.ok() || !k.ok()) {
        std::fprintf(stderr, "verify_compare_bench: %s\n", (r.ok() ? k : r).status().message().c_str());
        std::exit(1);
      }
      new_rep = verify::compare_outputs(*r, *k, c.tol);
    });
    const bool same = base_rep.passed == new_rep.passed && base_rep.max_abs_error == new_rep.max_abs_error &&
                      base_rep.max_rel_error == new_rep.max_rel_error;
    std::printf("%-24s %9.1f %12.4f %12.4f %7.1fx  %d/%d, %.3g, %.3g%s\n", c.name, c.ref.size() / 1e6, base_s,
                new_s, base_s / new_s, new_rep.passed, new_rep.trials, new_rep.max_abs_error,
                new_rep.max_rel_error, same ? "" : "  MISMATCH with the baseline");
    if (!same) return 1;
  }
  return 0;
}
