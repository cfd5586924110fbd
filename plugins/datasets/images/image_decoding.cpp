#include "image_decoding.h"

#include <ft/errors.h>
#include <ft/text.h>

#include <ATen/ops/empty.h>

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <utility>
#include <vector>

// jpeglib.h needs FILE and size_t declared first.
#include <jerror.h>
#include <jpeglib.h>
#include <png.h>
#include <webp/decode.h>

#include "exif_orientation.h"

namespace ft_images {
namespace {

[[noreturn]] void refuse(const std::string& source, const std::string& what) { throw ft::Error(source + ": " + what); }

// PIL refuses (DecompressionBombError) an image of more than twice Image.MAX_IMAGE_PIXELS
// (89,478,485) pixels: a small file that would decode to gigabytes. So does this, before
// allocating; and an image of no pixels.
constexpr std::int64_t max_image_pixels = 2 * 89478485LL;

at::Tensor empty_rgb(std::int64_t height, std::int64_t width, const std::string& source) {
  if (height < 1 || width < 1)
    refuse(source, "an image of " + std::to_string(width) + " x " + std::to_string(height) + " pixels");
  if (height * width > max_image_pixels)
    refuse(source, std::to_string(width) + " x " + std::to_string(height) + " pixels, more than " +
                       std::to_string(max_image_pixels) + " (PIL's limit against decompression bombs)");
  return at::empty({height, width, 3}, at::TensorOptions().dtype(at::kByte));
}

// libjpeg and libpng report errors by longjmp. The functions that call setjmp below hold only
// plain C state, so the jump skips no destructor; the tensors live in their callers.

struct JpegErrorManager {
  jpeg_error_mgr manager;  // first: libjpeg's pointer to it is a pointer to this
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool truncated;
};

void jpeg_error_exit(j_common_ptr info) {
  auto* error = reinterpret_cast<JpegErrorManager*>(info->err);
  (*info->err->format_message)(info, error->message);
  std::longjmp(error->jump, 1);
}

// libjpeg decodes a truncated file to the end, filling in grey, with only a warning; PIL refuses
// it ("image file is truncated"), and so does this. Other warnings (extraneous bytes before a
// marker) PIL accepts, and so does this.
void jpeg_emit_message(j_common_ptr info, int level) {
  auto* error = reinterpret_cast<JpegErrorManager*>(info->err);
  if (level < 0 && info->err->msg_code == JWRN_JPEG_EOF) error->truncated = true;
}

struct JpegReader {
  jpeg_decompress_struct info;
  JpegErrorManager error;
  bool created;
};

bool jpeg_read_header_guarded(JpegReader* reader, const unsigned char* data, unsigned long size,
                              bool keep_app_segments) {
  if (setjmp(reader->error.jump)) return false;
  jpeg_create_decompress(&reader->info);
  reader->created = true;
  jpeg_mem_src(&reader->info, data, size);
  if (keep_app_segments) {
    // For the EXIF orientation: JFIF's density (APP0), EXIF and XMP (APP1), whole (at most 65533
    // bytes each); libjpeg keeps those it reads before the first scan in reader->info.marker_list.
    jpeg_save_markers(&reader->info, JPEG_APP0, 0xffff);
    jpeg_save_markers(&reader->info, JPEG_APP0 + 1, 0xffff);
  }
  jpeg_read_header(&reader->info, TRUE);
  return true;
}

bool jpeg_decode_guarded(JpegReader* reader, unsigned char* pixels, std::size_t row_bytes) {
  if (setjmp(reader->error.jump)) return false;
  // PIL's decoder settings: RGB out, libjpeg's defaults for the rest (the accurate integer
  // inverse DCT, fancy upsampling).
  reader->info.out_color_space = JCS_RGB;
  jpeg_start_decompress(&reader->info);
  while (reader->info.output_scanline < reader->info.output_height) {
    JSAMPROW row = pixels + static_cast<std::size_t>(reader->info.output_scanline) * row_bytes;
    jpeg_read_scanlines(&reader->info, &row, 1);
  }
  jpeg_finish_decompress(&reader->info);
  return true;
}

[[noreturn]] void refuse_orientation(const std::string& source, const std::string& why) {
  refuse(source, "EXIF orientation unreadable: " + why +
                     "; datasets raises decoding such an image (Pillow reads its orientation), so torchtune could "
                     "not load it either: strip or repair the image's metadata");
}

int orientation_or_refuse(const exif::Metadata& metadata, const std::string& source) {
  const exif::Reading reading = exif::orientation_of(metadata);
  if (!reading.error.empty()) refuse_orientation(source, reading.error);
  return reading.orientation;
}

// The JPEG's orientation from the APP0 / APP1 segments libjpeg kept while reading its header.
int jpeg_orientation(const jpeg_decompress_struct& info, const std::string& source) {
  std::vector<std::pair<int, std::string_view>> segments;
  for (jpeg_saved_marker_ptr m = info.marker_list; m != nullptr; m = m->next)
    segments.emplace_back(m->marker, std::string_view(reinterpret_cast<const char*>(m->data), m->data_length));
  return orientation_or_refuse(exif::jpeg_metadata(segments), source);
}

struct JpegDecoder {
  JpegReader reader{};
  JpegDecoder() {
    reader.info.err = jpeg_std_error(&reader.error.manager);
    reader.error.manager.error_exit = jpeg_error_exit;
    reader.error.manager.emit_message = jpeg_emit_message;
  }
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;
  ~JpegDecoder() {
    if (reader.created) jpeg_destroy_decompress(&reader.info);
  }
  [[noreturn]] void unreadable(const std::string& source) const {
    refuse(source, std::string("unreadable JPEG (") + reader.error.message + ")");
  }
  void read_header(std::string_view bytes, const std::string& source, bool keep_app_segments) {
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
    if (!jpeg_read_header_guarded(&reader, data, bytes.size(), keep_app_segments)) unreadable(source);
    if (reader.error.truncated) refuse(source, "truncated JPEG (the file ends before the image does)");
  }
};

at::Tensor decode_jpeg(std::string_view bytes, const std::string& source, ExifOrientation orientation) {
  JpegDecoder decoder;
  JpegReader& reader = decoder.reader;
  const bool apply = orientation == ExifOrientation::apply;
  decoder.read_header(bytes, source, apply);
  const int transpose = apply ? jpeg_orientation(reader.info, source) : 1;
  const J_COLOR_SPACE colors = reader.info.jpeg_color_space;
  if (colors == JCS_CMYK || colors == JCS_YCCK)
    refuse(source,
           "a CMYK JPEG; fthost reads RGB and grayscale JPEGs only (PIL converts CMYK with its own "
           "formula, which fthost does not reproduce): convert it to RGB");
  const auto height = static_cast<std::int64_t>(reader.info.image_height);
  const auto width = static_cast<std::int64_t>(reader.info.image_width);
  at::Tensor image = empty_rgb(height, width, source);
  if (!jpeg_decode_guarded(&reader, image.data_ptr<std::uint8_t>(), static_cast<std::size_t>(width) * 3))
    decoder.unreadable(source);
  if (reader.error.truncated) refuse(source, "truncated JPEG (the file ends before the image does)");
  return exif::transposed(image, transpose);
}

struct PngInput {
  const unsigned char* data;
  std::size_t size;
  std::size_t offset;
};

void png_read_from_memory(png_structp png, png_bytep out, png_size_t length) {
  auto* input = static_cast<PngInput*>(png_get_io_ptr(png));
  if (input->size - input->offset < length) png_error(png, "truncated PNG (the file ends before the image does)");
  std::memcpy(out, input->data + input->offset, length);
  input->offset += length;
}

struct PngMessage {
  char text[256];
};

void png_error_to_message(png_structp png, png_const_charp message) {
  auto* out = static_cast<PngMessage*>(png_get_error_ptr(png));
  std::snprintf(out->text, sizeof out->text, "%s", message);
  png_longjmp(png, 1);
}

void png_ignore_warning(png_structp, png_const_charp) {}

struct PngHeader {
  png_uint_32 width;
  png_uint_32 height;
  int bit_depth;
  int color_type;
};

bool png_read_header_guarded(png_structp png, png_infop info, PngHeader* header) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  int interlace = 0;
  png_get_IHDR(png, info, &header->width, &header->height, &header->bit_depth, &header->color_type, &interlace, nullptr,
               nullptr);
  return true;
}

bool png_set_rgb_guarded(png_structp png, png_infop info) {
  if (setjmp(png_jmpbuf(png))) return false;
  // PIL's convert("RGB"): palettes and low-bit grayscale expanded to 8 bits (1-bit to 0 / 255,
  // 2-bit x 85, 4-bit x 17), 16-bit samples' high byte, grey replicated, alpha (and tRNS) dropped.
  png_set_expand(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  return true;
}

bool png_read_rows_guarded(png_structp png, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  return true;
}

at::Tensor decode_png(std::string_view bytes, const std::string& source) {
  PngMessage message{};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &message, png_error_to_message, png_ignore_warning);
  if (!png) refuse(source, "libpng could not start");
  png_infop info = png_create_info_struct(png);
  struct Destroy {
    png_structp& png;
    png_infop& info;
    ~Destroy() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
  } destroy{png, info};
  if (!info) refuse(source, "libpng could not start");
  PngInput input{reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), 0};
  png_set_read_fn(png, &input, png_read_from_memory);
  // Pillow reads pictures of any size its memory allows; libpng's default cap is 1,000,000 px a side.
  png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
  const auto unreadable = [&] { refuse(source, std::string("unreadable PNG (") + message.text + ")"); };
  PngHeader header{};
  if (!png_read_header_guarded(png, info, &header)) unreadable();
  if (header.bit_depth == 16 && header.color_type == PNG_COLOR_TYPE_GRAY)
    refuse(source,
           "a 16-bit grayscale PNG; PIL reads it as 32-bit integers and clips them to 8 bits, which "
           "fthost does not reproduce: convert it to 8 bits");
  if (!png_set_rgb_guarded(png, info)) unreadable();
  const auto height = static_cast<std::int64_t>(header.height);
  const auto width = static_cast<std::int64_t>(header.width);
  if (png_get_rowbytes(png, info) != static_cast<std::size_t>(width) * 3)
    refuse(source, "unsupported PNG layout (color type " + std::to_string(header.color_type) + ", bit depth " +
                       std::to_string(header.bit_depth) + ")");
  at::Tensor image = empty_rgb(height, width, source);
  std::vector<png_bytep> rows(static_cast<std::size_t>(height));
  auto* pixels = image.data_ptr<std::uint8_t>();
  for (std::int64_t y = 0; y < height; ++y) rows[static_cast<std::size_t>(y)] = pixels + y * width * 3;
  if (!png_read_rows_guarded(png, rows.data())) unreadable();
  return image;
}

const char* webp_status_text(VP8StatusCode status) {
  switch (status) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "corrupt data";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "a feature libwebp does not support";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "truncated: the file ends before the image does";
    default: return "unknown status";
  }
}

at::Tensor decode_webp(std::string_view bytes, const std::string& source) {
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  WebPBitstreamFeatures features{};
  const VP8StatusCode status = WebPGetFeatures(data, bytes.size(), &features);
  if (status != VP8_STATUS_OK) refuse(source, std::string("unreadable WebP (") + webp_status_text(status) + ")");
  if (features.has_animation)
    refuse(source, "an animated WebP; fthost reads still images (save the frame the sample means as its own file)");
  at::Tensor image = empty_rgb(features.height, features.width, source);
  const auto stride = features.width * 3;
  const auto size = static_cast<std::size_t>(stride) * static_cast<std::size_t>(features.height);
  // The colour conversion of a lossy image's YUV is libwebp's (PIL's decoder is libwebp too); an
  // alpha channel is dropped, its pixels' RGB kept as decoded.
  if (!WebPDecodeRGBInto(data, bytes.size(), image.data_ptr<std::uint8_t>(), size, stride)) {
    // The features parsed, so the bitstream itself is broken or cut short.
    refuse(source, "unreadable WebP (corrupt or truncated image data)");
  }
  return image;
}

}  // namespace

ImageFormat sniff_image_format(std::string_view bytes, const std::string& source) {
  static constexpr unsigned char png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() >= 3 && static_cast<unsigned char>(bytes[0]) == 0xff &&
      static_cast<unsigned char>(bytes[1]) == 0xd8 && static_cast<unsigned char>(bytes[2]) == 0xff)
    return ImageFormat::jpeg;
  if (bytes.size() >= sizeof png_signature && std::memcmp(bytes.data(), png_signature, sizeof png_signature) == 0)
    return ImageFormat::png;
  if (bytes.size() >= 12 && bytes.substr(0, 4) == "RIFF" && bytes.substr(8, 4) == "WEBP") return ImageFormat::webp;
  if (bytes.empty()) refuse(source, "an empty file, not an image");
  refuse(source, "not a JPEG, PNG or WebP image (fthost reads those three; the first bytes are none of them)");
}

at::Tensor decode_image(std::string_view bytes, const std::string& source, ExifOrientation orientation) {
  const bool apply = orientation == ExifOrientation::apply;
  switch (sniff_image_format(bytes, source)) {
    case ImageFormat::jpeg: return decode_jpeg(bytes, source, orientation);
    case ImageFormat::png: {
      at::Tensor image = decode_png(bytes, source);
      return apply ? exif::transposed(image, orientation_or_refuse(exif::png_metadata(bytes), source)) : image;
    }
    case ImageFormat::webp: {
      at::Tensor image = decode_webp(bytes, source);
      return apply ? exif::transposed(image, orientation_or_refuse(exif::webp_metadata(bytes), source)) : image;
    }
  }
  refuse(source, "unknown image format");
}

int exif_orientation(std::string_view bytes, const std::string& source) {
  switch (sniff_image_format(bytes, source)) {
    case ImageFormat::jpeg: {
      JpegDecoder decoder;
      decoder.read_header(bytes, source, true);
      return jpeg_orientation(decoder.reader.info, source);
    }
    case ImageFormat::png: return orientation_or_refuse(exif::png_metadata(bytes), source);
    case ImageFormat::webp: return orientation_or_refuse(exif::webp_metadata(bytes), source);
  }
  refuse(source, "unknown image format");
}

at::Tensor read_image_file(const std::string& path, ExifOrientation orientation) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;  // before the message allocates
    refuse(path, "cannot open the image: " + ft::errno_text(err));
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    const int err = errno;
    refuse(path, "cannot read the image: " + ft::errno_text(err));
  }
  return decode_image(bytes, path, orientation);
}

}  // namespace ft_images
