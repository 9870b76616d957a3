// What a built extension library needs from the process it is loaded into: its undefined dynamic
// symbols (.dynsym entries with no section) and its DT_NEEDED libraries, read from the ELF file
// without loading it. Internal to src/mooreeval/legality (library_imports.cpp judges them).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"

namespace musacoder::legality {

struct ElfImports {
  std::vector<std::string> undefined_symbols;  // raw (mangled) names, in .dynsym order, no duplicates
  std::vector<std::string> needed_libraries;   // DT_NEEDED sonames
};

// Fails (kInvalidArgument) on a file that is not a 64-bit little-endian ELF shared object or whose
// section or symbol tables point outside the file; kNotFound when it cannot be opened.
Result<ElfImports> read_elf_imports(const std::filesystem::path& library);

// The C++ demangling of `symbol` (the symbol itself when it is not a mangled C++ name).
std::string demangle(const std::string& symbol);

}  // namespace musacoder::legality
