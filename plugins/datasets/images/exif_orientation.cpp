#include "exif_orientation.h"

#include <ATen/ops/flip.h>

#include <zlib.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace ft_images::exif {
namespace {

using namespace std::string_view_literals;

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::uint8_t byte_at(std::string_view data, std::uint64_t pos) { return static_cast<std::uint8_t>(data[pos]); }

// `width` bytes at `pos` as an unsigned integer; the caller has checked pos + width <= size.
std::uint64_t read_uint(std::string_view data, std::uint64_t pos, std::uint64_t width, bool big_endian) {
  std::uint64_t value = 0;
  for (std::uint64_t i = 0; i < width; ++i)
    value = (value << 8) | byte_at(data, pos + (big_endian ? i : width - 1 - i));
  return value;
}

// ---------------------------------------------------------------------------------------------
// EXIF (TIFF) blocks: Pillow's Exif.load and ImageFileDirectory_v2.load, for tag 0x0112 of IFD0
// ---------------------------------------------------------------------------------------------

constexpr std::uint64_t orientation_tag = 0x0112;

// The TIFF types Pillow decodes and their sizes in bytes; 0 for the types it skips.
std::uint64_t unit_size(std::uint64_t type) {
  switch (type) {
    case 1:  // BYTE
    case 2:  // ASCII
    case 6:  // SBYTE
    case 7:  // UNDEFINED
      return 1;
    case 3:  // SHORT
    case 8:  // SSHORT
      return 2;
    case 4:   // LONG
    case 9:   // SLONG
    case 11:  // FLOAT
    case 13:  // IFD
      return 4;
    case 5:   // RATIONAL
    case 10:  // SRATIONAL
    case 12:  // DOUBLE
    case 16:  // LONG8
      return 8;
    default: return 0;
  }
}

int transpose_of_integer(std::int64_t value) { return value >= 2 && value <= 8 ? static_cast<int>(value) : 1; }

int transpose_of_float(double value) {
  // Python: {2: ..., 8: ...}.get(6.0) finds 6 (equal hashes, equal values); NaN finds nothing.
  return value >= 2 && value <= 8 && std::floor(value) == value ? static_cast<int>(value) : 1;
}

int transpose_of_fraction(std::int64_t numerator, std::int64_t denominator) {
  // Pillow's IFDRational: a zero denominator is NaN; otherwise a Fraction, equal to an integer
  // only when it divides.
  if (denominator == 0 || numerator % denominator != 0) return 1;
  return transpose_of_integer(numerator / denominator);
}

// The first value of the tag's data (Pillow keeps the first of several for a one-value tag) as
// exif_transpose's dictionary lookup sees it. BYTE and UNDEFINED data are bytes and ASCII is text
// to Pillow: present, equal to no number.
int transpose_of(std::uint64_t type, std::string_view value, bool big) {
  switch (type) {
    case 3: return transpose_of_integer(static_cast<std::int64_t>(read_uint(value, 0, 2, big)));
    case 4:
    case 13: return transpose_of_integer(static_cast<std::int64_t>(read_uint(value, 0, 4, big)));
    case 16: {
      const std::uint64_t v = read_uint(value, 0, 8, big);
      return v <= 8 ? transpose_of_integer(static_cast<std::int64_t>(v)) : 1;
    }
    case 6: return transpose_of_integer(static_cast<std::int8_t>(read_uint(value, 0, 1, big)));
    case 8: return transpose_of_integer(static_cast<std::int16_t>(read_uint(value, 0, 2, big)));
    case 9: return transpose_of_integer(static_cast<std::int32_t>(read_uint(value, 0, 4, big)));
    case 11: {
      const auto bits = static_cast<std::uint32_t>(read_uint(value, 0, 4, big));
      float f = 0;
      std::memcpy(&f, &bits, sizeof f);
      return transpose_of_float(f);
    }
    case 12: {
      const std::uint64_t bits = read_uint(value, 0, 8, big);
      double d = 0;
      std::memcpy(&d, &bits, sizeof d);
      return transpose_of_float(d);
    }
    case 5:
      return transpose_of_fraction(static_cast<std::int64_t>(read_uint(value, 0, 4, big)),
                                   static_cast<std::int64_t>(read_uint(value, 4, 4, big)));
    case 10:
      return transpose_of_fraction(static_cast<std::int32_t>(read_uint(value, 0, 4, big)),
                                   static_cast<std::int32_t>(read_uint(value, 4, 4, big)));
    default: return 1;
  }
}

// ---------------------------------------------------------------------------------------------
// PNG text chunks: PngImagePlugin's chunk_tEXt, chunk_zTXt, chunk_iTXt and chunk_eXIf
// ---------------------------------------------------------------------------------------------

constexpr std::size_t max_text_chunk = 1024 * 1024;                // PngImagePlugin.MAX_TEXT_CHUNK
constexpr std::uint64_t max_text_memory = 64ULL * max_text_chunk;  // PngImagePlugin.MAX_TEXT_MEMORY

enum class Inflated { ok, corrupt, too_large };

// _safe_zlib_decompress: zlib.decompressobj().decompress(data, MAX_TEXT_CHUNK), which raises
// ValueError (too_large) when input is left over at the limit. A truncated stream gives what it
// holds; a corrupt one is zlib.error (corrupt).
Inflated inflate_text(std::string_view in, std::string* out) {
  out->assign(max_text_chunk, '\0');
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return Inflated::corrupt;
  std::size_t fed = 0;
  const auto feed = [&] {
    const std::size_t piece = std::min<std::size_t>(in.size() - fed, UINT_MAX);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + fed));
    z.avail_in = static_cast<uInt>(piece);
    fed += piece;
  };
  feed();
  z.next_out = reinterpret_cast<Bytef*>(out->data());
  z.avail_out = static_cast<uInt>(max_text_chunk);
  int status = Z_OK;
  for (;;) {
    status = inflate(&z, Z_SYNC_FLUSH);
    if (status == Z_STREAM_END) break;
    if (status != Z_OK && status != Z_BUF_ERROR) {
      inflateEnd(&z);
      return Inflated::corrupt;
    }
    if (z.avail_out == 0) break;
    if (z.avail_in == 0) {
      if (fed == in.size()) break;
      feed();
      continue;
    }
    if (status == Z_BUF_ERROR) break;
  }
  const bool input_left = z.avail_in > 0 || fed < in.size();
  out->resize(max_text_chunk - z.avail_out);
  inflateEnd(&z);
  return status != Z_STREAM_END && z.avail_out == 0 && input_left ? Inflated::too_large : Inflated::ok;
}

// Python's strict UTF-8 decoding: whether `s` decodes, and into how many code points.
bool utf8_code_points(std::string_view s, std::uint64_t* count) {
  *count = 0;
  for (std::size_t i = 0; i < s.size(); ++(*count)) {
    const std::uint8_t c = byte_at(s, i);
    std::size_t length = 0;
    std::uint32_t lowest = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0xc2 && c <= 0xdf) {
      length = 2, lowest = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
      length = 3, lowest = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
      length = 4, lowest = 0x10000;
    } else {
      return false;
    }
    if (s.size() - i < length) return false;
    std::uint32_t point = c & (0xff >> (length + 1));
    for (std::size_t k = 1; k < length; ++k) {
      const std::uint8_t next = byte_at(s, i + k);
      if ((next & 0xc0) != 0x80) return false;
      point = (point << 6) | (next & 0x3f);
    }
    if (point < lowest || point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff)) return false;
    i += length;
  }
  return true;
}

// bytes.fromhex("".join(text.split("\n")[3:])): Pillow's reading of ImageMagick's
// "Raw profile type exif" (a header of three lines, then the bytes in hex).
bool raw_profile_bytes(std::string_view text, std::string* out) {
  for (int line = 0; line < 3; ++line) {
    const std::size_t newline = text.find('\n');
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
  }
  std::string hex;
  for (const char c : text)
    if (c != '\n') hex.push_back(c);
  // fromhex: ASCII white space between byte pairs is skipped; anything else must be two hex digits.
  const auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  const auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  out->clear();
  for (std::size_t i = 0; i < hex.size();) {
    if (space(hex[i])) {
      ++i;
      continue;
    }
    if (i + 1 >= hex.size() || digit(hex[i]) < 0 || digit(hex[i + 1]) < 0) return false;
    out->push_back(static_cast<char>(digit(hex[i]) * 16 + digit(hex[i + 1])));
    i += 2;
  }
  return true;
}

enum class TextKind { tEXt, zTXt, iTXt };

// info[key] = value, for the keys getexif reads.
void store_text(Metadata* m, std::string_view key, std::string value, TextKind kind) {
  if (key == "exif") {
    // chunk_tEXt keeps an "exif" text's bytes; the others store text, which Exif.load refuses.
    m->exif_is_text = kind != TextKind::tEXt;
    if (m->exif_is_text)
      m->exif.reset();
    else
      m->exif = std::move(value);
  } else if (key == "Raw profile type exif") {
    m->raw_profile = std::move(value);
  } else if (key == "XML:com.adobe.xmp") {
    m->xmp_text = std::move(value);
  }
}

// One tEXt, zTXt or iTXt chunk's data; false with m->error set where Pillow raises.
bool read_text_chunk(Metadata* m, TextKind kind, std::string_view s, std::uint64_t* text_memory) {
  const auto split = [](std::string_view whole, std::string_view* head, std::string_view* rest) {
    const std::size_t nul = whole.find('\0');
    if (nul == std::string_view::npos) return false;
    *head = whole.substr(0, nul);
    *rest = whole.substr(nul + 1);
    return true;
  };
  std::string_view key, rest;
  std::string value;
  std::uint64_t length = 0;
  if (kind == TextKind::tEXt || kind == TextKind::zTXt) {
    if (!split(s, &key, &rest)) key = s, rest = {};
    if (kind == TextKind::tEXt) {
      value.assign(rest);
    } else {
      const std::uint8_t method = rest.empty() ? 0 : byte_at(rest, 0);
      if (method != 0) {
        m->error = "a PNG zTXt chunk with compression method " + std::to_string(method) + " (Pillow refuses the file)";
        return false;
      }
      switch (inflate_text(rest.empty() ? rest : rest.substr(1), &value)) {
        case Inflated::ok: break;
        case Inflated::corrupt: value.clear(); break;
        case Inflated::too_large:
          m->error = "a PNG zTXt chunk of more than 1 MiB of text (Pillow refuses it)";
          return false;
      }
    }
    if (key.empty()) return true;
    length = value.size();  // latin-1: a character per byte
  } else {
    std::string_view flags_and_rest, language, translated, text;
    if (!split(s, &key, &flags_and_rest) || flags_and_rest.size() < 2) return true;
    const std::uint8_t compressed = byte_at(flags_and_rest, 0), method = byte_at(flags_and_rest, 1);
    std::string_view after_language;
    if (!split(flags_and_rest.substr(2), &language, &after_language) || !split(after_language, &translated, &text))
      return true;
    value.assign(text);
    if (compressed != 0) {
      if (method != 0) return true;
      switch (inflate_text(text, &value)) {
        case Inflated::ok: break;
        case Inflated::corrupt: return true;
        case Inflated::too_large:
          m->error = "a PNG iTXt chunk of more than 1 MiB of text (Pillow refuses it)";
          return false;
      }
    }
    if (key == "XML:com.adobe.xmp") m->xmp = value;
    std::uint64_t ignored = 0;
    if (!utf8_code_points(language, &ignored) || !utf8_code_points(translated, &ignored) ||
        !utf8_code_points(value, &length))
      return true;
  }
  store_text(m, key, std::move(value), kind);
  *text_memory += length;
  if (*text_memory > max_text_memory) {
    m->error = "more than 64 MiB of PNG text chunks (Pillow refuses the file)";
    return false;
  }
  return true;
}

bool is_chunk_name(std::string_view type) {
  return std::all_of(type.begin(), type.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

TagReading read_orientation_tag(std::string_view block) {
  static constexpr std::string_view exif_prefix = "Exif\0\0"sv;
  for (int i = 0; i < 2 && starts_with(block, exif_prefix); ++i) block.remove_prefix(exif_prefix.size());
  TagReading out;
  if (block.empty()) return out;
  // TiffImagePlugin.PREFIXES: the two byte orders, their swapped versions, BigTIFF.
  static constexpr std::array<std::string_view, 6> headers = {"MM\0\x2a"sv, "II\x2a\0"sv, "MM\x2a\0"sv,
                                                              "II\0\x2a"sv, "MM\0\x2b"sv, "II\x2b\0"sv};
  if (std::none_of(headers.begin(), headers.end(), [&](std::string_view h) { return starts_with(block, h); })) {
    out.error = "its EXIF data is not TIFF data (no byte-order header)";
    return out;
  }
  const bool big = block[0] == 'M';
  if (byte_at(block, 2) == 0x2b) {
    out.error = "its EXIF data has a BigTIFF header, which Pillow cannot read there";
    return out;
  }
  if (block.size() < 8) {
    out.error = "its EXIF data ends inside the TIFF header";
    return out;
  }
  const std::uint64_t limit = block.size();
  std::uint64_t pos = read_uint(block, 4, 4, big);
  // From here Pillow only warns: an IFD cut short keeps the tags read before the cut.
  if (pos > limit || limit - pos < 2) return out;
  const std::uint64_t entries = read_uint(block, pos, 2, big);
  pos += 2;
  std::vector<bool> stored(65536, false);
  std::uint64_t out_of_line = 0;  // all out-of-line data so far, against the block's size
  for (std::uint64_t i = 0; i < entries; ++i, pos += 12) {
    if (limit - pos < 12) return out;
    const std::uint64_t tag = read_uint(block, pos, 2, big);
    const std::uint64_t type = read_uint(block, pos + 2, 2, big);
    const std::uint64_t count = read_uint(block, pos + 4, 4, big);
    if (stored[tag]) continue;  // the first entry of a tag wins
    const std::uint64_t unit = unit_size(type);
    if (unit == 0) continue;
    const std::uint64_t size = count * unit;  // at most (2^32 - 1) * 8
    std::string_view value;
    if (size > 4) {
      const std::uint64_t offset = read_uint(block, pos + 8, 4, big);
      out_of_line += size;
      if (out_of_line > limit) continue;                        // "Tag data larger than file": skipped
      if (offset > limit || limit - offset < size) return out;  // a short read ends the IFD
      value = block.substr(offset, size);
    } else {
      value = block.substr(pos + 8, size);
    }
    if (size == 0) continue;
    stored[tag] = true;
    if (tag == orientation_tag) {
      out.present = true;
      out.transpose = transpose_of(type, value, big);
      return out;
    }
  }
  return out;
}

std::optional<int> xmp_orientation(std::string_view xmp) {
  static constexpr std::string_view key = "tiff:Orientation";
  for (std::size_t at = xmp.find(key); at != std::string_view::npos; at = xmp.find(key, at + 1)) {
    std::size_t digit = at + key.size();
    if (digit < xmp.size() && xmp[digit] == '>') {
      digit += 1;
    } else if (xmp.size() - digit >= 2 && xmp[digit] == '=' && xmp[digit + 1] == '"') {
      digit += 2;
    } else {
      continue;
    }
    if (digit < xmp.size() && xmp[digit] >= '0' && xmp[digit] <= '9') return xmp[digit] - '0';
  }
  return std::nullopt;
}

Metadata jpeg_metadata(const std::vector<std::pair<int, std::string_view>>& app_segments) {
  static constexpr std::string_view exif_prefix = "Exif\0\0"sv;
  static constexpr std::string_view xmp_prefix = "http://ns.adobe.com/xap/1.0/\0"sv;
  Metadata m;
  bool density = false;
  for (const auto& [marker, data] : app_segments) {
    if (marker == 0xe0 && starts_with(data, "JFIF")) {
      if (data.size() < 7) {
        m.error = "a JFIF segment too short for its version (Pillow cannot open the file)";
        return m;
      }
      // JpegImagePlugin sets info["dpi"] from a density unit of 1 (inch) or 2 (cm).
      if (data.size() >= 12 && (data[7] == 1 || data[7] == 2)) density = true;
    } else if (marker == 0xe1 && starts_with(data, exif_prefix)) {
      if (m.exif)
        m.exif->append(data.substr(exif_prefix.size()));
      else
        m.exif = std::string(data);
    } else if (marker == 0xe1 && starts_with(data, xmp_prefix)) {
      m.xmp = std::string(data.substr(xmp_prefix.size()));
    }
  }
  // Without a DPI from JFIF, JpegImageFile._open reads the EXIF for one, catching what it raises.
  m.errors_swallowed = m.exif.has_value() && !density;
  return m;
}

Metadata png_metadata(std::string_view file) {
  Metadata m;
  std::uint64_t text_memory = 0;
  bool image_data = false, animated = false, frame_before_image = false;
  std::uint64_t animation_frames = 0;  // acTL's when valid (1 or more), else 0
  std::uint64_t pos = 8;
  while (pos <= file.size() && file.size() - pos >= 8) {
    const std::uint64_t length = read_uint(file, pos, 4, true);
    const std::string_view type = file.substr(pos + 4, 4);
    if (!is_chunk_name(type)) break;
    const std::uint64_t data_at = pos + 8;
    const bool has_data = file.size() - data_at >= length;
    const bool has_crc = has_data && file.size() - data_at - length >= 4;
    if (!image_data) {
      if (type == "IDAT") {
        image_data = true;
        // Pillow's APNG: a default image (no fcTL before IDAT) is a frame of its own; an animation
        // stops the reading of chunks after the image data at the next frame.
        const std::uint64_t frames =
            std::max<std::uint64_t>(animation_frames, 1) + (animation_frames > 0 && !frame_before_image ? 1 : 0);
        animated = frames > 1;
      } else if (type == "IEND") {
        break;
      } else if (type == "acTL" && has_data && length >= 8) {
        if (animation_frames > 0) {
          animation_frames = 0;  // a second acTL: "Invalid APNG"
        } else {
          const std::uint64_t frames = read_uint(file, data_at, 4, true);
          if (frames != 0 && frames <= 0x80000000ULL) animation_frames = frames;
        }
      } else if (type == "fcTL" && length >= 26) {
        frame_before_image = true;
      }
    } else if (type == "IEND" || (animated && type == "fcTL")) {
      break;
    }
    const bool text = type == "tEXt" || type == "zTXt" || type == "iTXt";
    if (text || type == "eXIf") {
      // Before the image data Pillow checks each chunk's CRC; after it, it reads the data only.
      if (!(image_data ? has_data : has_crc)) {
        m.error = "a PNG " + std::string(type) + " chunk runs past the end of the file (Pillow refuses it)";
        return m;
      }
      const std::string_view data = file.substr(data_at, length);
      if (!image_data) {
        uLong crc = crc32(0L, Z_NULL, 0);
        crc = crc32(crc, reinterpret_cast<const Bytef*>(type.data()), 4);
        for (std::uint64_t done = 0; done < length;) {
          const auto piece = static_cast<uInt>(std::min<std::uint64_t>(length - done, UINT_MAX));
          crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data() + done), piece);
          done += piece;
        }
        if (crc != read_uint(file, data_at + length, 4, true)) {
          m.error = "a PNG " + std::string(type) + " chunk whose CRC does not match (Pillow refuses the file)";
          return m;
        }
      }
      if (type == "eXIf") {
        m.exif = std::string("Exif\0\0", 6) + std::string(data);
        m.exif_is_text = false;
      } else if (!read_text_chunk(&m,
                                  type == "tEXt"   ? TextKind::tEXt
                                  : type == "zTXt" ? TextKind::zTXt
                                                   : TextKind::iTXt,
                                  data, &text_memory)) {
        return m;
      }
    }
    if (!has_crc) break;
    pos = data_at + length + 4;
  }
  return m;
}

Metadata webp_metadata(std::string_view file) {
  // libwebp's WebPDemux, which Pillow's WebPAnimDecoder reads chunks through: only an extended
  // file (VP8X first) has metadata chunks, kept when VP8X's flags announce them; Pillow asks for
  // the first of each and drops an empty one.
  constexpr std::uint64_t max_chunk_payload = 0xffffffffULL - 8 - 1;
  constexpr unsigned xmp_flag = 0x04, exif_flag = 0x08;
  Metadata m;
  if (file.size() < 20 || file.substr(0, 4) != "RIFF" || file.substr(8, 4) != "WEBP" || file.substr(12, 4) != "VP8X")
    return m;
  const std::uint64_t riff_size = read_uint(file, 4, 4, false);
  if (riff_size < 8 || riff_size > max_chunk_payload) return m;
  const std::uint64_t end = std::min<std::uint64_t>(file.size(), riff_size + 8);
  const std::uint64_t vp8x_size = read_uint(file, 16, 4, false);
  if (vp8x_size < 10 || vp8x_size > max_chunk_payload) return m;
  const std::uint64_t vp8x_padded = vp8x_size + (vp8x_size & 1);
  if (end < 20 || end - 20 < vp8x_padded) return m;
  const unsigned flags = byte_at(file, 20);
  bool exif_seen = false, xmp_seen = false;
  for (std::uint64_t pos = 20 + vp8x_padded; pos <= end && end - pos >= 8;) {
    const std::string_view fourcc = file.substr(pos, 4);
    const std::uint64_t size = read_uint(file, pos + 4, 4, false);
    const std::uint64_t padded = size + (size & 1);
    if (size > max_chunk_payload || end - pos - 8 < padded) break;
    const std::string_view payload = file.substr(pos + 8, size);
    if (fourcc == "EXIF" && (flags & exif_flag) && !exif_seen) {
      exif_seen = true;
      if (!payload.empty()) m.exif = std::string(payload);
    } else if (fourcc == "XMP " && (flags & xmp_flag) && !xmp_seen) {
      xmp_seen = true;
      if (!payload.empty()) m.xmp = std::string(payload);
    }
    pos += 8 + padded;
  }
  return m;
}

Reading orientation_of(const Metadata& m) {
  Reading r;
  if (!m.error.empty()) {
    r.error = m.error;
    return r;
  }
  if (m.exif_is_text) {
    r.error = "a PNG text chunk named \"exif\" holds text, which Pillow refuses as EXIF data";
    return r;
  }
  // Image.getexif(): info["exif"], else the "Raw profile type exif" text.
  std::optional<std::string> block = m.exif;
  if (!block && m.raw_profile) {
    std::string bytes;
    if (!raw_profile_bytes(*m.raw_profile, &bytes)) {
      r.error = "its PNG \"Raw profile type exif\" text is not hexadecimal";
      return r;
    }
    block = std::move(bytes);
  }
  TagReading tag;
  if (block) tag = read_orientation_tag(*block);
  if (!tag.error.empty()) {
    if (m.errors_swallowed) return r;  // read once while opening, its error caught; XMP unread
    r.error = tag.error;
    return r;
  }
  if (tag.present) {
    r.orientation = tag.transpose;
    return r;
  }
  // XMP, when the EXIF has no orientation: the PNG text if not empty, else info["xmp"].
  std::optional<int> digit;
  if (m.xmp_text && !m.xmp_text->empty())
    digit = xmp_orientation(*m.xmp_text);
  else if (m.xmp && !m.xmp->empty())
    digit = xmp_orientation(*m.xmp);
  if (digit && *digit >= 2 && *digit <= 8) r.orientation = *digit;
  return r;
}

at::Tensor transposed(const at::Tensor& rgb, int orientation) {
  // rgb[y][x]; PIL's transpositions with the image's rows as dimension 0.
  switch (orientation) {
    case 2: return at::flip(rgb, {1}).contiguous();                     // FLIP_LEFT_RIGHT
    case 3: return at::flip(rgb, {0, 1}).contiguous();                  // ROTATE_180
    case 4: return at::flip(rgb, {0}).contiguous();                     // FLIP_TOP_BOTTOM
    case 5: return rgb.transpose(0, 1).contiguous();                    // TRANSPOSE
    case 6: return at::flip(rgb.transpose(0, 1), {1}).contiguous();     // ROTATE_270 (clockwise)
    case 7: return at::flip(rgb.transpose(0, 1), {0, 1}).contiguous();  // TRANSVERSE
    case 8: return at::flip(rgb.transpose(0, 1), {0}).contiguous();     // ROTATE_90 (counter-clockwise)
    default: return rgb;
  }
}

}  // namespace ft_images::exif
