// Image files to pixels, as torchtune's data path sees them: PIL's Image.open(...).convert("RGB").
// JPEG through libjpeg-turbo, PNG through libpng, WebP through libwebp (Pillow's own decoders are
// those libraries), the format told by the file's first bytes, never by its name.
//
// What PIL's convert("RGB") does, done here the same way: palette and grayscale images are
// expanded, an alpha channel is dropped (not composited onto a background), 16-bit RGB keeps each
// sample's high byte, and no gamma or colour profile is applied. What would not give PIL's pixels
// is refused, naming the file: CMYK and YCCK JPEGs (PIL converts them with its own formula) and
// 16-bit grayscale PNGs (PIL clips them to 8 bits instead of scaling).
//
// The EXIF orientation is the caller's choice, because torchtune's data path makes both: an image
// stored in a dataset record (Parquet / Arrow, Hugging Face's Image feature) is decoded by
// `datasets`, which transposes it by its orientation (PIL.ImageOps.exif_transpose), while an image
// file named by a path is opened by torchtune's load_image (PIL.Image.open), which does not.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace ft_images {

enum class ImageFormat { jpeg, png, webp };

// Whether the image's EXIF orientation transposes its pixels.
enum class ExifOrientation {
  // As `datasets`' Image feature decodes a record's image: the orientation Pillow reads (JPEG's
  // APP1 EXIF or XMP, PNG's eXIf or text chunks, WebP's EXIF or XMP chunk) applied as
  // exif_transpose applies it. EXIF data Pillow cannot read makes datasets raise; so does this.
  apply,
  // As torchtune's load_image opens a file: the pixels as stored, whatever the metadata says.
  ignore,
};

// The format the bytes begin with; throws ft::Error naming `source` when they are none of the three.
ImageFormat sniff_image_format(std::string_view bytes, const std::string& source);

// The decoded image: uint8 [height, width, 3], RGB, contiguous; with ExifOrientation::apply, in
// the orientation its metadata gives (height and width swapped for 5 to 8). `source` names the
// image in errors (a file path, or "dataset row 12, column images[0]"); an unreadable, truncated
// or unsupported image throws ft::Error naming it and what was wrong.
at::Tensor decode_image(std::string_view bytes, const std::string& source, ExifOrientation orientation);

// The file at `path`, read and decoded.
at::Tensor read_image_file(const std::string& path, ExifOrientation orientation);

// The orientation ExifOrientation::apply applies, without decoding the pixels: EXIF's numbering, 1
// (as stored) to 8. Throws ft::Error naming `source` where datasets would raise reading it.
int exif_orientation(std::string_view bytes, const std::string& source);

}  // namespace ft_images
