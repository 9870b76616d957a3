#include "train/common/tensorboard.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace musacoder::train {
namespace {

std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;  // reversed Castagnoli polynomial
    t[i] = c;
  }
  return t;
}

uint32_t masked_crc(std::string_view data) {
  const uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

// Protobuf wire format pieces.
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

template <typename T>
void put_fixed(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
  out.append(b, sizeof(T));
}

void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_varint(out, (field << 3) | 2);
  put_varint(out, bytes.size());
  out.append(bytes);
}

std::string event_header(int64_t step) {
  std::string e;
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  put_varint(e, (1 << 3) | 1);  // wall_time: double
  put_fixed(e, now);
  put_varint(e, (2 << 3) | 0);  // step: int64
  put_varint(e, static_cast<uint64_t>(step));
  return e;
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  static const std::array<uint32_t, 256> table = make_crc_table();
  uint32_t c = 0xffffffffu;
  for (unsigned char ch : data) c = table[(c ^ ch) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

Result<TensorBoardWriter> TensorBoardWriter::open(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return internal_error(dir.string() + ": cannot create directory: " + ec.message());
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch()).count();
  auto path = dir / ("events.out.tfevents." + std::to_string(secs) + "." + host);
  std::FILE* f = std::fopen(path.c_str(), "ab");
  if (f == nullptr) return internal_error(path.string() + ": cannot open: " + std::strerror(errno));
  TensorBoardWriter w(f, path);
  std::string first = event_header(0);
  put_bytes(first, 3, "brain.Event:2");
  MC_RETURN_IF_ERROR(w.write_record(first));
  return w;
}

TensorBoardWriter::TensorBoardWriter(TensorBoardWriter&& other) noexcept
    : file_(std::exchange(other.file_, nullptr)), path_(std::move(other.path_)) {}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

Status TensorBoardWriter::write_record(const std::string& data) {
  std::string rec;
  const uint64_t len = data.size();
  put_fixed(rec, len);
  put_fixed(rec, masked_crc(std::string_view(rec.data(), 8)));
  rec += data;
  put_fixed(rec, masked_crc(data));
  if (std::fwrite(rec.data(), 1, rec.size(), file_) != rec.size() || std::fflush(file_) != 0) {
    return internal_error(path_.string() + ": write failed: " + std::strerror(errno));
  }
  return {};
}

Status TensorBoardWriter::add_scalars(int64_t step, const std::vector<std::pair<std::string, double>>& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    put_bytes(v, 1, tag);
    put_varint(v, (2 << 3) | 5);  // simple_value: float
    put_fixed(v, static_cast<float>(value));
    put_bytes(summary, 1, v);
  }
  std::string e = event_header(step);
  put_bytes(e, 5, summary);
  return write_record(e);
}

}  // namespace musacoder::train
