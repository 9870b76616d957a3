#include "mooreeval/verify/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include "core/check.h"

namespace musacoder::verify {
namespace {

constexpr std::size_t kMaxFileBytes = std::size_t{8} << 30;

// A whole file's bytes, read into memory it owns. Not a mapping: the candidate's runner is
// still alive when its outputs are compared and could truncate the file, and reading a mapped
// page past a file's new end raises SIGBUS in the evaluator. Reading costs ~4 ms per 32 MB.
// Not core's read_file either: its std::string is zero-filled or grown in 64 KiB pieces, and
// read+compare of two 33.6 MB files took 0.055-0.06 s that way against 0.038 s here
// (perf/verify_compare.cpp), in the run slot of every evaluation.
class FileBytes {
 public:
  static Result<std::shared_ptr<const FileBytes>> read(const std::filesystem::path& path) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer (it fails the regular-file check).
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      if (errno == ENOENT) return not_found("no such file: " + path.string());
      return internal_error("cannot open " + path.string() + ": " + std::strerror(errno));
    }
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0)
      return internal_error("cannot stat " + path.string() + ": " + std::strerror(errno));
    const auto size = static_cast<uint64_t>(st.st_size);
    if (!S_ISREG(st.st_mode)) return invalid_argument("not a regular file: " + path.string());
    if (size == 0) return invalid_argument(path.string() + ": not a MooreEval output file (empty)");
    if (size > kMaxFileBytes)
      return invalid_argument(path.string() + " is " + std::to_string(size) + " bytes, over the limit of " +
                              std::to_string(kMaxFileBytes));
    std::unique_ptr<std::byte[]> data(new std::byte[size]);
    std::size_t got = 0;
    while (got < size) {  // a file cut short meanwhile is read as far as it goes; parsing rejects it
      const ssize_t n = ::read(fd, data.get() + got, size - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return internal_error("cannot read " + path.string() + ": " + std::strerror(errno));
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    return std::shared_ptr<const FileBytes>(new FileBytes(std::move(data), got));
  }

  const std::byte* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  FileBytes(std::unique_ptr<std::byte[]> data, std::size_t size) : data_(std::move(data)), size_(size) {}
  std::unique_ptr<std::byte[]> data_;
  std::size_t size_;
};

class Cursor {
 public:
  Cursor(const std::byte* data, std::size_t size) : data_(data), size_(size) {}
  template <typename T>
  bool read(T& out) {
    if (size_ - pos_ < sizeof(T)) return false;
    std::memcpy(&out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool read_bytes(std::size_t n, std::string& out) {
    if (size_ - pos_ < n) return false;
    out.assign(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return true;
  }
  // Skips n elements of `element_size` bytes; returns where they start, or nullptr if the
  // data ends before them.
  const std::byte* skip_elements(uint64_t n, std::size_t element_size) {
    if (n > (size_ - pos_) / element_size) return nullptr;
    const std::byte* start = data_ + pos_;
    pos_ += static_cast<std::size_t>(n) * element_size;
    return start;
  }
  bool at_end() const { return pos_ == size_; }

 private:
  const std::byte* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

std::size_t element_size(StorageType s) {
  return visit_storage(s, [](auto v) { return sizeof v; });
}

}  // namespace

std::optional<StorageType> storage_type_from_name(std::string_view name) {
  for (auto s : {StorageType::kFloat64, StorageType::kFloat32, StorageType::kFloat16, StorageType::kBFloat16,
                 StorageType::kInt64, StorageType::kInt32, StorageType::kInt16, StorageType::kInt8,
                 StorageType::kUInt8, StorageType::kBool})
    if (name == storage_type_name(s)) return s;
  return std::nullopt;
}

const char* storage_type_name(StorageType s) {
  switch (s) {
    case StorageType::kFloat64:
      return "float64";
    case StorageType::kFloat32:
      return "float32";
    case StorageType::kFloat16:
      return "float16";
    case StorageType::kBFloat16:
      return "bfloat16";
    case StorageType::kInt64:
      return "int64";
    case StorageType::kInt32:
      return "int32";
    case StorageType::kInt16:
      return "int16";
    case StorageType::kInt8:
      return "int8";
    case StorageType::kUInt8:
      return "uint8";
    case StorageType::kBool:
      return "bool";
  }
  return "?";
}

TensorData TensorData::from_values(std::string dtype, std::vector<int64_t> shape,
                                   std::vector<double> values) {
  uint64_t expect = 1;
  for (int64_t d : shape) expect *= static_cast<uint64_t>(d);
  MC_CHECK(expect == values.size());
  auto owned = std::make_shared<const std::vector<double>>(std::move(values));
  const auto* data = reinterpret_cast<const std::byte*>(owned->data());
  const std::size_t n = owned->size();
  return TensorData(std::move(dtype), std::move(shape), StorageType::kFloat64, data, n, std::move(owned));
}

double TensorData::value(std::size_t i) const {
  MC_CHECK(i < numel_);
  return visit_storage(storage_, [&](auto v) { return widen(load<decltype(v)>(data_, i)); });
}

namespace {

// One trial (u32:n_tensors tensor*) at the cursor; its views keep `bytes` alive.
Result<TrialOutputs> parse_trial(Cursor& c, const std::shared_ptr<const FileBytes>& bytes,
                                 const std::function<Status(const std::string&)>& bad) {
  uint32_t n_tensors = 0;
  if (!c.read(n_tensors) || n_tensors > 4096) return bad("bad tensor count");
  TrialOutputs outs;
  outs.reserve(n_tensors);
  for (uint32_t k = 0; k < n_tensors; ++k) {
    std::string dtype;
    uint32_t len = 0, ndim = 0;
    if (!c.read(len) || len > 64 || !c.read_bytes(len, dtype)) return bad("bad dtype");
    if (!c.read(ndim) || ndim > 64) return bad("bad rank");
    std::vector<int64_t> shape(ndim);
    uint64_t expect = 1;
    for (auto& d : shape) {
      if (!c.read(d) || d < 0) return bad("bad shape");
      expect *= static_cast<uint64_t>(d);
    }
    uint64_t numel = 0;
    if (!c.read(numel) || numel != expect) return bad("element count does not match the shape");
    std::string storage_name;
    if (!c.read(len) || len > 16 || !c.read_bytes(len, storage_name)) return bad("bad storage type");
    const auto storage = storage_type_from_name(storage_name);
    const std::byte* data = storage ? c.skip_elements(numel, element_size(*storage)) : nullptr;
    if (!data) return bad("truncated data or unknown storage type '" + storage_name + "'");
    outs.emplace_back(std::move(dtype), std::move(shape), *storage, data, static_cast<std::size_t>(numel), bytes);
  }
  return outs;
}

// MCOUT003: each trial in a file of its own, <path>.<trial>, so that no file is larger than one
// call's outputs (the sandbox's RLIMIT_FSIZE is per file; 8 trials of a 268 MB output are not).
Result<std::vector<TrialOutputs>> read_trial_files(const std::filesystem::path& path, uint32_t n_trials) {
  std::vector<TrialOutputs> trials;
  for (uint32_t t = 0; t < n_trials; ++t) {
    const std::filesystem::path part = path.string() + "." + std::to_string(t);
    auto file = FileBytes::read(part);
    if (!file.ok()) return file.status();
    Cursor c((*file)->data(), (*file)->size());
    auto bad = [&](const std::string& what) { return invalid_argument(part.string() + ": " + what); };
    auto trial = parse_trial(c, *file, bad);
    if (!trial.ok()) return trial.status();
    if (!c.at_end()) return bad("trailing bytes");
    trials.push_back(std::move(*trial));
  }
  return trials;
}

}  // namespace

Result<std::vector<TrialOutputs>> read_output_file(const std::filesystem::path& path) {
  auto file = FileBytes::read(path);
  if (!file.ok()) return file.status();
  const std::shared_ptr<const FileBytes>& bytes = *file;
  Cursor c(bytes->data(), bytes->size());
  auto bad = [&](const std::string& what) { return invalid_argument(path.string() + ": " + what); };
  std::string magic;
  if (!c.read_bytes(8, magic) || (magic != "MCOUT002" && magic != "MCOUT003"))
    return bad("not a MooreEval output file");
  uint32_t n_trials = 0;
  if (!c.read(n_trials) || n_trials > 4096) return bad("truncated header or bad trial count");
  if (magic == "MCOUT003") {
    if (!c.at_end()) return bad("trailing bytes");
    return read_trial_files(path, n_trials);
  }
  std::vector<TrialOutputs> trials;
  for (uint32_t t = 0; t < n_trials; ++t) {
    auto trial = parse_trial(c, bytes, bad);
    if (!trial.ok()) return trial.status();
    trials.push_back(std::move(*trial));
  }
  if (!c.at_end()) return bad("trailing bytes");
  return trials;
}

}  // namespace musacoder::verify
