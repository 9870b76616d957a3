#include "verify/output_file.h"

#include <cmath>
#include <cstring>
#include <limits>

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
  // n elements of the storage type `T`, converted to double by `widen`.
  template <typename T, typename Widen>
  bool read_values(std::size_t n, std::vector<double>& out, Widen widen) {
    if (n > (data_.size() - pos_) / sizeof(T)) return false;
    out.resize(n);
    const char* p = data_.data() + pos_;
    for (std::size_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, p + i * sizeof(T), sizeof(T));
      out[i] = widen(v);
    }
    pos_ += n * sizeof(T);
    return true;
  }
  bool at_end() const { return pos_ == data_.size(); }

 private:
  const std::string& data_;
  std::size_t pos_ = 0;
};

double from_bfloat16(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

double from_float16(uint16_t bits) {
  const int sign = (bits >> 15) ? -1 : 1;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);  // zero and subnormals
  if (exponent == 0x1f)
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  return sign * std::ldexp(mantissa + 1024, exponent - 25);
}

// The data of one tensor in the storage type the runner wrote (see tensors.py).
bool read_data(Cursor& c, const std::string& storage, std::size_t n, std::vector<double>& out) {
  auto same = [](auto v) { return static_cast<double>(v); };
  if (storage == "float64") return c.read_values<double>(n, out, same);
  if (storage == "float32") return c.read_values<float>(n, out, same);
  if (storage == "bfloat16") return c.read_values<uint16_t>(n, out, from_bfloat16);
  if (storage == "float16") return c.read_values<uint16_t>(n, out, from_float16);
  if (storage == "int64") return c.read_values<int64_t>(n, out, same);
  if (storage == "int32") return c.read_values<int32_t>(n, out, same);
  if (storage == "int16") return c.read_values<int16_t>(n, out, same);
  if (storage == "int8") return c.read_values<int8_t>(n, out, same);
  if (storage == "uint8" || storage == "bool") return c.read_values<uint8_t>(n, out, same);
  return false;
}

}  // namespace

Result<std::vector<TrialOutputs>> read_output_file(const std::filesystem::path& path) {
  auto data = read_file(path, std::size_t{8} << 30);
  if (!data.ok()) return data.status();
  Cursor c(*data);
  auto bad = [&](const std::string& what) { return invalid_argument(path.string() + ": " + what); };
  std::string magic;
  if (!c.read_bytes(8, magic) || magic != "MCOUT002") return bad("not a MooreEval output file");
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
      std::string storage;
      if (!c.read(len) || len > 16 || !c.read_bytes(len, storage)) return bad("bad storage type");
      if (!read_data(c, storage, numel, td.values))
        return bad("truncated data or unknown storage type '" + storage + "'");
      outs.push_back(std::move(td));
    }
    trials.push_back(std::move(outs));
  }
  if (!c.at_end()) return bad("trailing bytes");
  return trials;
}

}  // namespace musacoder::verify
