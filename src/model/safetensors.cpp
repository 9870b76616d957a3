#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/files.h"

namespace musacoder::model {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // the format's own limit

struct DtypeInfo {
  const char* name;
  at::ScalarType type;
  std::size_t bytes;
};

constexpr DtypeInfo kDtypes[] = {
    {"BF16", at::kBFloat16, 2}, {"F16", at::kHalf, 2},  {"F32", at::kFloat, 4}, {"F64", at::kDouble, 8},
    {"I64", at::kLong, 8},      {"I32", at::kInt, 4},   {"I16", at::kShort, 2}, {"I8", at::kChar, 1},
    {"U8", at::kByte, 1},       {"BOOL", at::kBool, 1},
};

const DtypeInfo* find_dtype(const std::string& name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

Status header_error(const std::filesystem::path& p, const std::string& what) {
  return invalid_argument(p.string() + ": invalid safetensors header: " + what);
}

}  // namespace

Result<std::string> safetensors_dtype(at::ScalarType t) {
  for (const auto& d : kDtypes) {
    if (d.type == t) return std::string(d.name);
  }
  return invalid_argument(std::string("safetensors: unsupported dtype ") + c10::toString(t));
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr && map_ != MAP_FAILED) munmap(map_, map_bytes_);
}

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return not_found(path.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument(path.string() + ": not a regular file");
  }
  auto file = std::shared_ptr<SafetensorsFile>(new SafetensorsFile());
  file->path_ = path;
  file->map_bytes_ = static_cast<std::size_t>(st.st_size);
  if (file->map_bytes_ < 8) {
    ::close(fd);
    return header_error(path, "file shorter than 8 bytes");
  }
  // MAP_PRIVATE + PROT_WRITE: copy-on-write, so in-place ops on a returned tensor never reach the file.
  file->map_ = mmap(nullptr, file->map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (file->map_ == MAP_FAILED)
    return internal_error(path.string() + ": mmap failed: " + std::strerror(errno));

  const auto* bytes = static_cast<const unsigned char*>(file->map_);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  if (n > kMaxHeaderBytes || n > file->map_bytes_ - 8)
    return header_error(path, "header length out of range");
  file->data_offset_ = 8 + static_cast<std::size_t>(n);
  const uint64_t data_bytes = file->map_bytes_ - file->data_offset_;

  json h = json::parse(reinterpret_cast<const char*>(bytes + 8), reinterpret_cast<const char*>(bytes + 8 + n),
                       nullptr, /*allow_exceptions=*/false);
  if (h.is_discarded() || !h.is_object()) return header_error(path, "not a JSON object");
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) return header_error(path, "__metadata__ must be an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) return header_error(path, "__metadata__ values must be strings");
        file->metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const json& e = *it;
    if (!e.is_object() || !e.contains("dtype") || !e["dtype"].is_string() || !e.contains("shape") ||
        !e["shape"].is_array() || !e.contains("data_offsets") || !e["data_offsets"].is_array() ||
        e["data_offsets"].size() != 2) {
      return header_error(path, "entry '" + it.key() + "' needs dtype, shape and data_offsets");
    }
    TensorEntry t;
    t.dtype = e["dtype"].get<std::string>();
    const DtypeInfo* d = find_dtype(t.dtype);
    if (d == nullptr) return header_error(path, "entry '" + it.key() + "' has unsupported dtype " + t.dtype);
    uint64_t numel = 1;
    for (const auto& s : e["shape"]) {
      if (!s.is_number_unsigned()) return header_error(path, "entry '" + it.key() + "' has a bad shape");
      uint64_t v = s.get<uint64_t>();
      if (v != 0 && numel > (uint64_t{1} << 62) / v)
        return header_error(path, "entry '" + it.key() + "' too big");
      numel *= v;
      t.shape.push_back(static_cast<int64_t>(v));
    }
    if (!e["data_offsets"][0].is_number_unsigned() || !e["data_offsets"][1].is_number_unsigned()) {
      return header_error(path, "entry '" + it.key() + "' has bad data_offsets");
    }
    t.begin = e["data_offsets"][0].get<uint64_t>();
    t.end = e["data_offsets"][1].get<uint64_t>();
    if (t.begin > t.end || t.end > data_bytes) {
      return header_error(path, "entry '" + it.key() + "' lies outside the file (truncated?)");
    }
    if (t.end - t.begin != numel * d->bytes) {
      return header_error(path, "entry '" + it.key() + "' byte size does not match dtype and shape");
    }
    file->entries_[it.key()] = std::move(t);
  }
  return file;
}

Result<at::Tensor> SafetensorsFile::tensor(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) return not_found(path_.string() + ": no tensor '" + name + "'");
  const TensorEntry& e = it->second;
  const DtypeInfo* d = find_dtype(e.dtype);
  MC_CHECK(d != nullptr);
  auto* ptr = static_cast<unsigned char*>(map_) + data_offset_ + e.begin;
  auto opts = at::TensorOptions().dtype(d->type).device(at::kCPU);
  if (reinterpret_cast<uintptr_t>(ptr) % d->bytes != 0) {
    at::Tensor t = at::empty(e.shape, opts);
    std::memcpy(t.data_ptr(), ptr, e.end - e.begin);
    return t;
  }
  std::shared_ptr<const SafetensorsFile> keep = shared_from_this();
  return at::from_blob(
      ptr, e.shape, [keep](void*) mutable { keep.reset(); }, opts);
}

Result<SafetensorsCheckpoint> SafetensorsCheckpoint::open(const std::filesystem::path& path) {
  SafetensorsCheckpoint ck;
  std::vector<std::filesystem::path> shards;
  if (std::filesystem::is_directory(path)) {
    auto index = path / "model.safetensors.index.json";
    if (std::filesystem::exists(index)) {
      auto text = read_file(index);
      if (!text.ok()) return text.status();
      json j = json::parse(*text, nullptr, false);
      if (j.is_discarded() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
        return invalid_argument(index.string() + ": not a safetensors index (no weight_map object)");
      }
      std::map<std::string, std::size_t> shard_ids;
      std::map<std::string, std::string> wanted;
      for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
        if (!it->is_string())
          return invalid_argument(index.string() + ": weight_map values must be file names");
        std::string f = it->get<std::string>();
        if (f.find('/') != std::string::npos || f == "..") {
          return invalid_argument(index.string() + ": shard name '" + f + "' must be a plain file name");
        }
        if (!shard_ids.count(f)) {
          auto file = SafetensorsFile::open(path / f);
          if (!file.ok()) return file.status();
          shard_ids[f] = ck.files_.size();
          ck.files_.push_back(*file);
        }
        wanted[it.key()] = f;
      }
      for (const auto& [name, f] : wanted) {
        std::size_t id = shard_ids[f];
        if (!ck.files_[id]->entries().count(name)) {
          return invalid_argument(index.string() + ": tensor '" + name + "' is not in shard " + f);
        }
        ck.where_[name] = id;
      }
      return ck;
    }
    shards.push_back(path / "model.safetensors");
  } else {
    shards.push_back(path);
  }
  for (const auto& s : shards) {
    if (!std::filesystem::exists(s)) {
      return not_found(path.string() + ": no model.safetensors or model.safetensors.index.json");
    }
    auto file = SafetensorsFile::open(s);
    if (!file.ok()) return file.status();
    for (const auto& [name, _] : (*file)->entries()) ck.where_[name] = ck.files_.size();
    ck.files_.push_back(*file);
  }
  return ck;
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : where_) out.push_back(name);
  return out;
}

Result<TensorEntry> SafetensorsCheckpoint::entry(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) return not_found("checkpoint has no tensor '" + name + "'");
  return files_[it->second]->entries().at(name);
}

Result<at::Tensor> SafetensorsCheckpoint::tensor(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) return not_found("checkpoint has no tensor '" + name + "'");
  return files_[it->second]->tensor(name);
}

Status write_safetensors(const std::filesystem::path& path,
                         const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  json h = json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  std::vector<at::Tensor> cpu;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name.empty() || name == "__metadata__")
      return invalid_argument("safetensors: bad tensor name '" + name + "'");
    if (h.contains(name)) return invalid_argument("safetensors: duplicate tensor name '" + name + "'");
    auto dtype = safetensors_dtype(t.scalar_type());
    if (!dtype.ok())
      return Status(dtype.status().code(), dtype.status().message() + " (tensor '" + name + "')");
    at::Tensor c = t.detach().to(at::kCPU).contiguous();
    uint64_t bytes = static_cast<uint64_t>(c.numel()) * c.element_size();
    h[name] = {{"dtype", *dtype}, {"shape", c.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    cpu.push_back(std::move(c));
  }
  std::string header = h.dump();
  header.append((8 - header.size() % 8) % 8, ' ');  // keeps the data section 8-byte aligned
  std::string out;
  out.reserve(8 + header.size() + offset);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += header;
  for (const auto& c : cpu) {
    out.append(static_cast<const char*>(c.data_ptr()),
               static_cast<std::size_t>(c.numel()) * c.element_size());
  }
  return write_file_atomic(path, out);
}

Status write_safetensors_dir(const std::filesystem::path& dir,
                             const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                             uint64_t max_shard_bytes) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return internal_error(dir.string() + ": cannot create directory: " + ec.message());
  std::vector<std::vector<std::pair<std::string, at::Tensor>>> shards(1);
  uint64_t total = 0, current = 0;
  for (const auto& nt : tensors) {
    uint64_t bytes = static_cast<uint64_t>(nt.second.numel()) * nt.second.element_size();
    if (current > 0 && current + bytes > max_shard_bytes) {
      shards.emplace_back();
      current = 0;
    }
    shards.back().push_back(nt);
    current += bytes;
    total += bytes;
  }
  // A fresh save must not leave a stale layout that a loader would prefer.
  std::filesystem::remove(dir / "model.safetensors.index.json", ec);
  if (shards.size() == 1) return write_safetensors(dir / "model.safetensors", tensors);
  std::filesystem::remove(dir / "model.safetensors", ec);
  json weight_map = json::object();
  char name[64];
  for (std::size_t i = 0; i < shards.size(); ++i) {
    std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    MC_RETURN_IF_ERROR(write_safetensors(dir / name, shards[i]));
    for (const auto& nt : shards[i]) weight_map[nt.first] = name;
  }
  json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  return write_file_atomic(dir / "model.safetensors.index.json", index.dump(2));
}

}  // namespace musacoder::model
