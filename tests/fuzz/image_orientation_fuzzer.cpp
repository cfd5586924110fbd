// Fuzz target: the EXIF orientation reader of the image library (plugins/datasets/images/
// exif_orientation.cpp), which reads metadata as Pillow does, from untrusted files. Each input is
// read four ways: as an image file (the format from its first bytes; a JPEG's APP segments through
// libjpeg's header reader), through the PNG and WebP chunk walks directly (no signature needed),
// as JPEG APP segments (records of a marker byte, a 16-bit length and the payload), and as one
// EXIF (TIFF) block and one XMP packet; the orientation found then transposes a small image.
//
// An unreadable input must be refused with ft::Error; any other exception, an orientation outside
// 1..8, a crash or a sanitizer report is a bug.
#include <ft/errors.h>

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <utility>
#include <vector>

#include "exif_orientation.h"
#include "image_decoding.h"

namespace {

namespace exif = ft_images::exif;

void check(bool ok) {
  if (!ok) std::abort();
}

// Records of [marker & 1 ? APP1 : APP0][length: 2 bytes, big-endian][payload], until the bytes end.
std::vector<std::pair<int, std::string_view>> app_segments(std::string_view bytes) {
  std::vector<std::pair<int, std::string_view>> out;
  while (bytes.size() >= 3) {
    const int marker = (static_cast<unsigned char>(bytes[0]) & 1) ? 0xe1 : 0xe0;
    const std::size_t length =
        static_cast<std::size_t>(static_cast<unsigned char>(bytes[1])) << 8 | static_cast<unsigned char>(bytes[2]);
    bytes.remove_prefix(3);
    const std::string_view payload = bytes.substr(0, length);
    out.emplace_back(marker, payload);
    bytes.remove_prefix(payload.size());
  }
  return out;
}

void check_reading(const exif::Reading& reading) {
  check(reading.orientation >= 1 && reading.orientation <= 8);
  check(reading.error.empty() || reading.orientation == 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const int orientation = ft_images::exif_orientation(bytes, "fuzz input");
    check(orientation >= 1 && orientation <= 8);
  } catch (const ft::Error&) {
  }
  check_reading(exif::orientation_of(exif::png_metadata(bytes)));
  check_reading(exif::orientation_of(exif::webp_metadata(bytes)));
  check_reading(exif::orientation_of(exif::jpeg_metadata(app_segments(bytes))));

  const exif::TagReading tag = exif::read_orientation_tag(bytes);
  check(tag.transpose >= 1 && tag.transpose <= 8 && (tag.error.empty() || !tag.present));
  const auto xmp = exif::xmp_orientation(bytes);
  check(!xmp || (*xmp >= 0 && *xmp <= 9));

  // The transposition: a 2 x 3 image becomes 3 x 2 for orientations 5 to 8, every pixel kept.
  const at::Tensor image = at::arange(18, at::kByte).view({2, 3, 3});
  const at::Tensor turned = exif::transposed(image, tag.transpose);
  check(turned.is_contiguous() && turned.size(0) == (tag.transpose >= 5 ? 3 : 2) &&
        turned.sum().item<std::int64_t>() == image.sum().item<std::int64_t>());
  return 0;
}
