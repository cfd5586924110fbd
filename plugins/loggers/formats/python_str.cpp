#include "python_str.h"

#include <fmt/format.h>

#include <cmath>

namespace ft_loggers {

std::string python_float_str(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // fmt's shortest round-trip form switches to an exponent where repr() does (below 1e-4, from
  // 1e16) and spells it the same way; it leaves integral values without a fraction.
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".en") == std::string::npos) text += ".0";
  return text;
}

std::string python_string_repr(const std::string& text) {
  const char quote = text.find('\'') != std::string::npos && text.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, quote);
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;  // UTF-8 continues as it is: repr() shows printable non-ASCII characters
    }
  }
  out += quote;
  return out;
}

std::string python_list_repr(const std::vector<std::string>& item_reprs) {
  return "[" + fmt::format("{}", fmt::join(item_reprs, ", ")) + "]";
}

}  // namespace ft_loggers
