// An image's EXIF orientation as Hugging Face datasets' Image feature finds and applies it: Pillow
// 13's Image.getexif() (the containers it reads per format, and its tolerance of malformed data,
// reproduced step by step), then PIL.ImageOps.exif_transpose's table. Hand-written and
// bounds-checked: every offset is checked against the bytes before it is read.
//
// Where Pillow looks, per format (Pillow 13.0):
// - JPEG: the APP1 segments that start "Exif\0\0" (the first whole, each later one appended
//   without its 6-byte prefix, as Pillow concatenates them), and the last APP1 XMP packet
//   ("http://ns.adobe.com/xap/1.0/\0"). Pillow reads the EXIF while it opens a JPEG whose JFIF
//   header gives no density unit (to find a DPI), swallowing any error it raises; so an unreadable
//   EXIF block is ignored there (XMP then too), and raises otherwise.
// - PNG: the eXIf chunk, else a "Raw profile type exif" text chunk (ImageMagick's hex dump; tEXt,
//   zTXt or iTXt), else XMP in text chunks ("XML:com.adobe.xmp"); before and after the image data
//   (datasets loads the image first), the last of each kind winning.
// - WebP: the first EXIF chunk and the first "XMP " chunk of an extended (VP8X) file whose
//   header flags them (libwebp's demuxer keeps no other).
// In the EXIF block, IFD0's tag 0x0112 in either byte order, with any numeric TIFF type (Python
// compares 6.0 and 12/2 equal to 6); a value other than 2 to 8 transposes nothing. Without the
// tag, XMP's first `tiff:Orientation="d"` or `tiff:Orientation>d` (one digit).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ft_images::exif {

// What Pillow's Exif.load(block).get(0x0112) finds in one EXIF block (TIFF data after at most two
// "Exif\0\0" prefixes).
struct TagReading {
  bool present = false;  // IFD0 holds the tag (then XMP is not consulted), whatever its value
  int transpose = 1;     // the value, when it equals one of 2..8 as Python compares; else 1
  std::string error;     // non-empty: Pillow raises reading the block (why)
};
TagReading read_orientation_tag(std::string_view block);

// The digit of XMP's first `tiff:Orientation="d"` or `tiff:Orientation>d`, as Pillow's regular
// expression finds it; nullopt when there is none.
std::optional<int> xmp_orientation(std::string_view xmp);

// What an opened image's `info` holds for Image.getexif(), per container.
struct Metadata {
  std::optional<std::string> exif;         // info["exif"]: bytes
  bool exif_is_text = false;               // info["exif"] is text (a PNG zTXt / iTXt "exif"): Pillow raises
  std::optional<std::string> raw_profile;  // info["Raw profile type exif"] (PNG text)
  std::optional<std::string> xmp_text;     // info["XML:com.adobe.xmp"] (PNG text)
  std::optional<std::string> xmp;          // info["xmp"]
  bool errors_swallowed = false;           // a JPEG without a JFIF density: EXIF read while opening
  std::string error;                       // non-empty: Pillow raises reading the container (why)
};

// JPEG: the APP0 and APP1 segments before the first scan, in file order (marker, payload).
Metadata jpeg_metadata(const std::vector<std::pair<int, std::string_view>>& app_segments);
// PNG and WebP: the whole file.
Metadata png_metadata(std::string_view file);
Metadata webp_metadata(std::string_view file);

// Image.getexif() then exif_transpose's table: the orientation to apply, 1 (nothing) to 8, or
// why Pillow raises instead.
struct Reading {
  int orientation = 1;
  std::string error;  // non-empty: datasets' decode raises; no orientation
};
Reading orientation_of(const Metadata& metadata);

// The uint8 [height, width, 3] image transposed as PIL's Image.transpose does for orientation
// 2..8 (FLIP_LEFT_RIGHT, ROTATE_180, FLIP_TOP_BOTTOM, TRANSPOSE, ROTATE_270, TRANSVERSE,
// ROTATE_90); contiguous. Orientation 1 returns the image itself.
at::Tensor transposed(const at::Tensor& rgb, int orientation);

}  // namespace ft_images::exif
