// Small text pieces that error messages and file handling across the host and plugins share.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ft {

// "[2, 3]": how messages print a tensor shape (tensor.sizes(), or any sequence of integers).
// A template, so this header needs no LibTorch header.
template <class Shape>
std::string shape_text(const Shape& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

inline bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The message of an errno value. Callers copy errno right after the failing call: building a
// message allocates, and allocation may change errno.
inline std::string errno_text(int err) {
  char buffer[256];
  // GNU strerror_r returns the message, which may or may not be `buffer`; unlike strerror it is
  // safe while other threads (the async checkpoint writer) report errors too.
  return ::strerror_r(err, buffer, sizeof buffer);
}

}  // namespace ft
