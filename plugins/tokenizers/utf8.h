// UTF-8 helpers and GPT-2's byte <-> printable-character table used by byte-level BPE.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace ft_tok {

// Bytes in the sequence that starts with lead byte `c` (1 for a stray continuation byte).
inline std::size_t utf8_length(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xE) return 3;
  if ((c >> 3) == 0x1E) return 4;
  return 1;
}

inline void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The code point starting at text[i]; advances i. Invalid bytes decode as themselves.
inline char32_t next_code_point(std::string_view text, std::size_t& i) {
  const auto c = static_cast<unsigned char>(text[i]);
  std::size_t n = utf8_length(c);
  if (i + n > text.size()) n = 1;
  char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
  for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
  i += n;
  return cp;
}

inline bool is_ascii(std::string_view text) {
  for (char c : text)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to U+0100 upwards, so
// every byte string has a printable spelling. Byte-level vocabularies are written in it.
class ByteLevelAlphabet {
 public:
  ByteLevelAlphabet() {
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t cp = printable ? static_cast<char32_t>(b) : next++;
      byte_to_cp_[b] = cp;
      if (cp < cp_to_byte_.size()) cp_to_byte_[cp] = static_cast<std::int16_t>(b);
    }
  }
  // The printable spelling of raw bytes.
  std::string encode(std::string_view bytes) const {
    std::string out;
    for (unsigned char b : bytes) append_utf8(out, byte_to_cp_[b]);
    return out;
  }
  // Raw bytes of a printable spelling; false when a character is outside the alphabet.
  bool decode(std::string_view spelled, std::string& out) const {
    for (std::size_t i = 0; i < spelled.size();) {
      const char32_t cp = next_code_point(spelled, i);
      if (cp >= cp_to_byte_.size() || cp_to_byte_[cp] < 0) return false;
      out += static_cast<char>(cp_to_byte_[cp]);
    }
    return true;
  }

 private:
  std::array<char32_t, 256> byte_to_cp_{};
  std::array<std::int16_t, 324> cp_to_byte_ = make_unset();
  static std::array<std::int16_t, 324> make_unset() {
    std::array<std::int16_t, 324> a{};
    a.fill(-1);
    return a;
  }
};

}  // namespace ft_tok
