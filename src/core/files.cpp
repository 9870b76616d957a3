#include "core/files.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <system_error>
#include <vector>

#include "core/text.h"

namespace musacoder {

namespace fs = std::filesystem;

namespace {

// nftw's callback takes no user pointer; one walk per thread at a time.
thread_local std::string tls_remove_error;

int remove_entry(const char* entry, const struct stat*, int type, struct FTW*) {
  // FTW_DNR: a directory we could not read; its rmdir fails unless it is empty.
  const bool dir = type == FTW_DP || type == FTW_DNR;
  const int rc = dir ? ::rmdir(entry) : ::unlink(entry);
  if (rc != 0 && errno != ENOENT && tls_remove_error.empty())
    tls_remove_error = std::string("cannot remove ") + entry + ": " + std::strerror(errno);
  return 0;  // keep going: remove what can be removed
}

}  // namespace

Status remove_tree(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::ok_status();
    return internal_error("cannot stat " + path.string() + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return internal_error("cannot remove " + path.string() + ": " + std::strerror(errno));
    return Status::ok_status();
  }
  tls_remove_error.clear();
  if (::nftw(path.c_str(), remove_entry, 32, FTW_DEPTH | FTW_PHYS) != 0 && tls_remove_error.empty())
    tls_remove_error = "cannot walk " + path.string() + ": " + std::strerror(errno);
  std::string error = std::move(tls_remove_error);
  tls_remove_error.clear();
  if (!error.empty()) return internal_error(error);
  return Status::ok_status();
}

Result<std::string> hash_tree(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec)) files.push_back(it->path());
  if (ec) return internal_error("cannot list " + dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  std::string all;
  for (const auto& f : files) {
    auto text = read_file(f);
    if (!text.ok()) return text.status();
    all += fs::relative(f, dir).string() + "\n" + sha256_hex(*text) + "\n";
  }
  return sha256_hex(all);
}

Result<std::string> read_file(const fs::path& path, std::size_t max_bytes) {
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return not_found("no such file: " + path.string());
  if (!fs::is_regular_file(st)) return invalid_argument("not a regular file: " + path.string());
  auto size = fs::file_size(path, ec);
  if (ec) return internal_error("cannot stat " + path.string() + ": " + ec.message());
  if (size > max_bytes)
    return invalid_argument(path.string() + " is " + std::to_string(size) + " bytes, over the limit of " +
                            std::to_string(max_bytes));
  std::ifstream in(path, std::ios::binary);
  if (!in) return internal_error("cannot open " + path.string() + ": " + std::strerror(errno));
  // Read to EOF rather than trusting the size: /proc and /sys files report 0 bytes.
  std::string data;
  char buf[1 << 16];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    data.append(buf, static_cast<std::size_t>(in.gcount()));
    if (data.size() > max_bytes)
      return invalid_argument(path.string() + " is over the limit of " + std::to_string(max_bytes) +
                              " bytes");
  }
  return data;
}

Status write_file_atomic(const fs::path& path, std::string_view data) {
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(reinterpret_cast<std::uintptr_t>(&data));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return internal_error("cannot write " + tmp.string() + ": " + std::strerror(errno));
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) return internal_error("write failed: " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return internal_error("cannot rename into " + path.string());
  }
  return {};
}

Result<TempDir> TempDir::create(const std::string& prefix, const fs::path& parent) {
  std::error_code ec;
  fs::path base = parent.empty() ? fs::temp_directory_path(ec) : parent;
  if (ec) return internal_error("no temp directory: " + ec.message());
  fs::create_directories(base, ec);
  std::string templ = (base / (prefix + "XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr)
    return internal_error("mkdtemp in " + base.string() + ": " + std::strerror(errno));
  return TempDir(fs::path(templ));
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)), keep_(other.keep_) {
  other.path_.clear();
}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    this->~TempDir();
    path_ = std::move(other.path_);
    keep_ = other.keep_;
    other.path_.clear();
  }
  return *this;
}

TempDir::~TempDir() {
  if (path_.empty() || keep_) return;
  (void)remove_tree(path_);
}

}  // namespace musacoder
