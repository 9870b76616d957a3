// The mapped size of a built extension (legality.h): a 16 GiB static array compiles in a
// fraction of a second and costs nothing on disk (.bss), but the loader maps all of it.
#include <cstring>
#include <fstream>

#include "mooreeval/legality/legality.h"

namespace musacoder::legality {

namespace {

template <typename T>
T read_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // x86-64 / aarch64 hosts are little-endian, as are their ELF files
  return v;
}

}  // namespace

Result<std::uint64_t> mapped_library_bytes(const std::filesystem::path& library) {
  std::ifstream in(library, std::ios::binary);
  if (!in) return not_found("cannot open " + library.string());
  char ehdr[64];
  if (!in.read(ehdr, sizeof ehdr)) return invalid_argument(library.string() + ": shorter than an ELF header");
  if (std::memcmp(ehdr,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      ehdr[4] != 2 || ehdr[5] != 1)
    return invalid_argument(library.string() + ": not a 64-bit little-endian ELF file");
  const auto phoff = read_le<std::uint64_t>(ehdr + 0x20);
  const auto phentsize = read_le<std::uint16_t>(ehdr + 0x36);
  const auto phnum = read_le<std::uint16_t>(ehdr + 0x38);
  if (phentsize < 56) return invalid_argument(library.string() + ": bad program header size");
  std::uint64_t total = 0;
  std::vector<char> ph(phentsize);
  for (std::uint16_t i = 0; i < phnum; ++i) {
    in.seekg(static_cast<std::streamoff>(phoff + std::uint64_t{i} * phentsize));
    if (!in.read(ph.data(), phentsize))
      return invalid_argument(library.string() + ": truncated program headers");
    if (read_le<std::uint32_t>(ph.data()) != 1) continue;  // PT_LOAD
    total += read_le<std::uint64_t>(ph.data() + 0x28);     // p_memsz
  }
  return total;
}

std::vector<Finding> check_library_size(const std::filesystem::path& library,
                                        const LegalityOptions& options) {
  auto bytes = mapped_library_bytes(library);
  if (!bytes.ok()) return {{"library_unreadable", bytes.status().message(), 0}};
  if (*bytes <= options.max_library_bytes) return {};
  return {{"static_data_too_large",
           library.filename().string() + " maps " + std::to_string(*bytes >> 20) + " MiB (limit " +
               std::to_string(options.max_library_bytes >> 20) + " MiB): a huge static array exhausts memory",
           0}};
}

}  // namespace musacoder::legality
