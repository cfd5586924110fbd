#include "config/omegaconf_scalars.h"

#include <ft/errors.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <regex>

namespace fthost {

namespace {

// PyYAML's SafeLoader patterns (YAML 1.1), in the order it tries them, then the float pattern
// OmegaConf adds.
const std::regex& null_pattern() {
  static const std::regex re("^(~|null|Null|NULL|)$");
  return re;
}
const std::regex& bool_pattern() {
  static const std::regex re("^(yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$");
  return re;
}
const std::regex& yaml11_float_pattern() {
  static const std::regex re(
      "^([-+]?[0-9][0-9_]*\\.[0-9_]*([eE][-+][0-9]+)?"
      "|\\.[0-9][0-9_]*([eE][-+][0-9]+)?"
      "|[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\\.[0-9_]*"
      "|[-+]?\\.(inf|Inf|INF)"
      "|\\.(nan|NaN|NAN))$");
  return re;
}
const std::regex& int_pattern() {
  static const std::regex re(
      "^([-+]?0b[01_]+|[-+]?0[0-7_]+|[-+]?(0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(:[0-5]?[0-9])+)$");
  return re;
}
const std::regex& omegaconf_float_pattern() {
  static const std::regex re(
      "^([-+]?[0-9][0-9_]*\\.[0-9_]*([eE][-+]?[0-9]+)?"
      "|[-+]?[0-9][0-9_]*([eE][-+]?[0-9]+)"
      "|\\.[0-9_]+([eE][-+][0-9]+)?"
      "|[-+]?\\.(inf|Inf|INF)"
      "|\\.(nan|NaN|NAN))$");
  return re;
}

std::string without_underscores(const std::string& text) {
  std::string out;
  for (char c : text)
    if (c != '_') out += c;
  return out;
}

// PyYAML's int constructor: sign, then `0b`, `0x`, a leading `0` (octal) or decimal digits.
std::int64_t to_integer(const std::string& text) {
  std::string digits = without_underscores(text);
  bool negative = false;
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
    negative = digits[0] == '-';
    digits.erase(0, 1);
  }
  if (digits.find(':') != std::string::npos) {  // YAML 1.1 base 60: 1:30 is 90
    std::int64_t value = 0;
    std::size_t start = 0;
    while (true) {
      const auto colon = digits.find(':', start);
      const std::string part = digits.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (value > (std::numeric_limits<std::int64_t>::max() - 59) / 60 || part.size() > 18)
        throw ft::ConfigError("integer " + text + " does not fit in 64 bits");
      value = value * 60 + std::stoll(part);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
    return negative ? -value : value;
  }
  int base = 10;
  if (digits.rfind("0b", 0) == 0) {
    base = 2;
    digits.erase(0, 2);
  } else if (digits.rfind("0x", 0) == 0) {
    base = 16;
    digits.erase(0, 2);
  } else if (digits.size() > 1 && digits[0] == '0') {
    base = 8;
    digits.erase(0, 1);
  }
  if (digits.empty()) return 0;
  errno = 0;
  char* end = nullptr;
  const unsigned long long magnitude = std::strtoull(digits.c_str(), &end, base);
  const auto limit = static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max());
  if (errno == ERANGE || magnitude > limit + (negative ? 1 : 0))
    throw ft::ConfigError("integer " + text + " does not fit in 64 bits");
  if (negative)
    return magnitude == limit + 1 ? std::numeric_limits<std::int64_t>::min() : -static_cast<std::int64_t>(magnitude);
  return static_cast<std::int64_t>(magnitude);
}

bool to_float(const std::string& text, double& out) {
  const std::string digits = without_underscores(text);
  const std::string lower = [&] {
    std::string s;
    for (char c : digits) s += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return s;
  }();
  if (lower == ".inf" || lower == "+.inf") return out = HUGE_VAL, true;
  if (lower == "-.inf") return out = -HUGE_VAL, true;
  if (lower == ".nan") return out = std::numeric_limits<double>::quiet_NaN(), true;
  if (const auto colon = digits.rfind(':'); colon != std::string::npos) {  // base 60: 1:30.5 is 90.5
    const bool negative = digits[0] == '-';
    double value = 0;
    std::size_t start = digits[0] == '-' || digits[0] == '+' ? 1 : 0;
    // strtod, not stod: a part too large for a double is infinity, as PyYAML's float() makes it,
    // where stod would throw out_of_range past the config loader's error handling.
    const auto part_value = [&](std::size_t from, std::size_t count) {
      return std::strtod(digits.substr(from, count).c_str(), nullptr);
    };
    for (auto next = digits.find(':', start); next != std::string::npos; next = digits.find(':', start)) {
      value = value * 60 + part_value(start, next - start);
      start = next + 1;
    }
    value = value * 60 + part_value(start, std::string::npos);
    out = negative ? -value : value;
    return true;
  }
  char* end = nullptr;
  out = std::strtod(digits.c_str(), &end);
  return !digits.empty() && end == digits.c_str() + digits.size();
}

}  // namespace

PlainScalar resolve_plain_scalar(const std::string& text) {
  PlainScalar s;
  s.text = text;
  if (std::regex_match(text, bool_pattern())) {
    s.type = PlainScalar::Type::Bool;
    const char c = text[0];
    s.boolean = c == 'y' || c == 'Y' || c == 't' || c == 'T' || text == "on" || text == "On" || text == "ON";
    return s;
  }
  if (std::regex_match(text, yaml11_float_pattern()) && to_float(text, s.number)) {
    s.type = PlainScalar::Type::Float;
    return s;
  }
  if (std::regex_match(text, int_pattern())) {
    s.type = PlainScalar::Type::Int;
    s.integer = to_integer(text);
    return s;
  }
  if (std::regex_match(text, omegaconf_float_pattern()) && to_float(text, s.number)) {
    s.type = PlainScalar::Type::Float;
    return s;
  }
  if (std::regex_match(text, null_pattern())) s.type = PlainScalar::Type::Null;
  return s;
}

}  // namespace fthost
