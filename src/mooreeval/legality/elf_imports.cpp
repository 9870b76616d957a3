// ELF64 reader for undefined dynamic symbols and DT_NEEDED (elf_imports.h). Only the section
// headers, .dynsym/.dynamic and their string tables are read; every offset is bounds-checked
// against the file size, so a truncated or hostile file is an error, never a crash.
#include "mooreeval/legality/elf_imports.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>

namespace musacoder::legality {

namespace {

constexpr std::uint32_t kShtDynsym = 11, kShtDynamic = 6;
constexpr std::uint64_t kDtNeeded = 1;

template <typename T>
T read_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // x86-64 / aarch64 hosts and their ELF files are little-endian
  return v;
}

struct Section {
  std::uint32_t type = 0, link = 0;
  std::uint64_t offset = 0, size = 0, entsize = 0;
};

class ElfFile {
 public:
  static Result<ElfFile> open(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return not_found("cannot open " + path.string());
    ElfFile f;
    f.name_ = path.filename().string();
    f.bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (f.bytes_.size() < 64 || std::memcmp(f.bytes_.data(), "\x7f" "ELF", 4) != 0 || f.bytes_[4] != 2 ||
        f.bytes_[5] != 1)
      return invalid_argument(f.name_ + ": not a 64-bit little-endian ELF file");
    return f;
  }

  Result<std::vector<Section>> sections() const {
    const char* h = bytes_.data();
    const auto shoff = read_le<std::uint64_t>(h + 0x28);
    const auto shentsize = read_le<std::uint16_t>(h + 0x3A);
    const auto shnum = read_le<std::uint16_t>(h + 0x3C);
    if (shnum == 0) return invalid_argument(name_ + ": no section headers");
    if (shentsize < 64 || !in_file(shoff, std::uint64_t{shnum} * shentsize))
      return invalid_argument(name_ + ": section headers outside the file");
    std::vector<Section> out(shnum);
    for (std::uint16_t i = 0; i < shnum; ++i) {
      const char* s = h + shoff + std::uint64_t{i} * shentsize;
      out[i] = {read_le<std::uint32_t>(s + 4), read_le<std::uint32_t>(s + 0x28), read_le<std::uint64_t>(s + 0x18),
                read_le<std::uint64_t>(s + 0x20), read_le<std::uint64_t>(s + 0x38)};
      if (out[i].type != 8 /*NOBITS*/ && !in_file(out[i].offset, out[i].size))
        return invalid_argument(name_ + ": section " + std::to_string(i) + " outside the file");
    }
    return out;
  }

  // The NUL-terminated string at `index` of string table `table`, or an error.
  Result<std::string> string_at(const Section& table, std::uint64_t index) const {
    if (index >= table.size) return invalid_argument(name_ + ": string index outside its table");
    const char* begin = bytes_.data() + table.offset + index;
    const void* end = std::memchr(begin, '\0', table.size - index);
    if (end == nullptr) return invalid_argument(name_ + ": unterminated string");
    return std::string(begin, static_cast<const char*>(end));
  }

  const char* at(std::uint64_t offset) const { return bytes_.data() + offset; }
  const std::string& name() const { return name_; }

 private:
  bool in_file(std::uint64_t offset, std::uint64_t size) const {
    return offset <= bytes_.size() && size <= bytes_.size() - offset;
  }
  std::string name_;
  std::vector<char> bytes_;
};

Status read_dynsym(const ElfFile& f, const std::vector<Section>& secs, const Section& dynsym, ElfImports& out) {
  if (dynsym.link >= secs.size() || dynsym.entsize < 24)
    return invalid_argument(f.name() + ": malformed .dynsym");
  std::set<std::string> seen;
  for (std::uint64_t i = 1; i < dynsym.size / dynsym.entsize; ++i) {  // entry 0 is the null symbol
    const char* sym = f.at(dynsym.offset + i * dynsym.entsize);
    if (read_le<std::uint16_t>(sym + 6) != 0) continue;  // defined here (st_shndx != SHN_UNDEF)
    auto name = f.string_at(secs[dynsym.link], read_le<std::uint32_t>(sym));
    if (!name.ok()) return name.status();
    if (!name->empty() && seen.insert(*name).second) out.undefined_symbols.push_back(*name);
  }
  return {};
}

Status read_needed(const ElfFile& f, const std::vector<Section>& secs, const Section& dynamic, ElfImports& out) {
  if (dynamic.link >= secs.size()) return invalid_argument(f.name() + ": malformed .dynamic");
  for (std::uint64_t off = 0; off + 16 <= dynamic.size; off += 16) {
    const auto tag = read_le<std::uint64_t>(f.at(dynamic.offset + off));
    if (tag == 0) break;  // DT_NULL
    if (tag != kDtNeeded) continue;
    auto soname = f.string_at(secs[dynamic.link], read_le<std::uint64_t>(f.at(dynamic.offset + off + 8)));
    if (!soname.ok()) return soname.status();
    out.needed_libraries.push_back(*soname);
  }
  return {};
}

}  // namespace

Result<ElfImports> read_elf_imports(const std::filesystem::path& library) {
  auto file = ElfFile::open(library);
  if (!file.ok()) return file.status();
  auto secs = file->sections();
  if (!secs.ok()) return secs.status();
  ElfImports out;
  for (const Section& s : *secs) {
    Status st;
    if (s.type == kShtDynsym) st = read_dynsym(*file, *secs, s, out);
    if (s.type == kShtDynamic) st = read_needed(*file, *secs, s, out);
    if (!st.ok()) return st;
  }
  return out;
}

std::string demangle(const std::string& symbol) {
  if (symbol.rfind("_Z", 0) != 0) return symbol;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status),
                                                   &std::free);
  return status == 0 && text ? std::string(text.get()) : symbol;
}

}  // namespace musacoder::legality
