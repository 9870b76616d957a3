// Text helpers: UTF-8 validation, hashing, truncation for logs.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace musacoder {

// True when `s` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view s);

// Lower-case hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

// Keeps the head and tail of a long log, with a marker in between, so that both the
// first error and the final summary survive.
std::string truncate_middle(std::string_view s, std::size_t max_bytes);

// Replaces invalid UTF-8 bytes with '?', so logs can be put into JSON.
std::string sanitize_utf8(std::string_view s);

}  // namespace musacoder
