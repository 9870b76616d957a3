#include "verify/output_file.h"

#include <cstring>

#include "core/files.h"

namespace musacoder::verify {
namespace {

class Cursor {
 public:
  explicit Cursor(const std::string& data) : data_(data) {}
  template <typename T>
  bool read(T& out) {
    if (data_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(&out, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool read_bytes(std::size_t n, std::string& out) {
    if (data_.size() - pos_ < n) return false;
    out.assign(data_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool read_doubles(std::size_t n, std::vector<double>& out) {
    if (n > (data_.size() - pos_) / sizeof(double)) return false;
    out.resize(n);
    std::memcpy(out.data(), data_.data() + pos_, n * sizeof(double));
    pos_ += n * sizeof(double);
    return true;
  }
  bool at_end() const { return pos_ == data_.size(); }

 private:
  const std::string& data_;
  std::size_t pos_ = 0;
};

}  // namespace

Result<std::vector<TrialOutputs>> read_output_file(const std::filesystem::path& path) {
  auto data = read_file(path, std::size_t{8} << 30);
  if (!data.ok()) return data.status();
  Cursor c(*data);
  auto bad = [&](const std::string& what) { return invalid_argument(path.string() + ": " + what); };
  std::string magic;
  if (!c.read_bytes(8, magic) || magic != "MCOUT001") return bad("not a MooreEval output file");
  uint32_t n_trials = 0;
  if (!c.read(n_trials)) return bad("truncated header");
  std::vector<TrialOutputs> trials;
  for (uint32_t t = 0; t < n_trials; ++t) {
    uint32_t n_tensors = 0;
    if (!c.read(n_tensors) || n_tensors > 4096) return bad("bad tensor count");
    TrialOutputs outs;
    for (uint32_t k = 0; k < n_tensors; ++k) {
      TensorData td;
      uint32_t len = 0, ndim = 0;
      if (!c.read(len) || len > 64 || !c.read_bytes(len, td.dtype)) return bad("bad dtype");
      if (!c.read(ndim) || ndim > 64) return bad("bad rank");
      td.shape.resize(ndim);
      uint64_t expect = 1;
      for (auto& d : td.shape) {
        if (!c.read(d) || d < 0) return bad("bad shape");
        expect *= static_cast<uint64_t>(d);
      }
      uint64_t numel = 0;
      if (!c.read(numel) || numel != expect) return bad("element count does not match the shape");
      if (!c.read_doubles(numel, td.values)) return bad("truncated data");
      outs.push_back(std::move(td));
    }
    trials.push_back(std::move(outs));
  }
  if (!c.at_end()) return bad("trailing bytes");
  return trials;
}

}  // namespace musacoder::verify
