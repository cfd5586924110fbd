// Image files to pixels, as torchtune's data path sees them: PIL's Image.open(...).convert("RGB").
// JPEG through libjpeg-turbo, PNG through libpng, WebP through libwebp (Pillow's own decoders are
// those libraries), the format told by the file's first bytes, never by its name.
//
// What PIL's convert("RGB") does, done here the same way: palette and grayscale images are
// expanded, an alpha channel is dropped (not composited onto a background), 16-bit RGB keeps each
// sample's high byte, and no gamma or colour profile is applied. What would not give PIL's pixels
// is refused, naming the file: CMYK and YCCK JPEGs (PIL converts them with its own formula) and
// 16-bit grayscale PNGs (PIL clips them to 8 bits instead of scaling).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace ft_images {

enum class ImageFormat { jpeg, png, webp };

// The format the bytes begin with; throws ft::Error naming `source` when they are none of the three.
ImageFormat sniff_image_format(std::string_view bytes, const std::string& source);

// The decoded image: uint8 [height, width, 3], RGB, contiguous. `source` names the image in errors
// (a file path, or "dataset row 12, column images[0]"); an unreadable, truncated or unsupported
// image throws ft::Error naming it and what was wrong.
at::Tensor decode_image(std::string_view bytes, const std::string& source);

// The file at `path`, read and decoded.
at::Tensor read_image_file(const std::string& path);

}  // namespace ft_images
