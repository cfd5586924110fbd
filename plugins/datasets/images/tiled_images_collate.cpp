#include "tiled_images_collate.h"

#include <ft/errors.h>

#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <string>

namespace ft_images {
namespace {

std::string sample_name(std::size_t i) { return "tiled-image collate: sample " + std::to_string(i); }

}  // namespace

TiledImagesBatch collate_tiled_images_and_mask(const std::vector<TiledImagesSample>& samples,
                                               const TiledImagesCollateSettings& settings) {
  if (samples.empty()) throw ft::Error("tiled-image collate: an empty micro-batch");
  const auto batch = static_cast<std::int64_t>(samples.size());
  const bool right = settings.pad_direction == PadDirection::right;
  if (settings.pad_to_multiple_of < 1)
    throw ft::Error("tiled-image collate: pad_to_multiple_of must be positive, got " +
                    std::to_string(settings.pad_to_multiple_of));
  if (!right && settings.pad_to_multiple_of > 1)
    throw ft::Error("tiled-image collate: padding left (generation) pads to no multiple, and pad_to_multiple_of is " +
                    std::to_string(settings.pad_to_multiple_of));

  // padded_collate_sft: tokens and labels to the longest of either; padded left, tokens only.
  std::int64_t length = 0;
  for (const auto& sample : samples) {
    length = std::max(length, static_cast<std::int64_t>(sample.tokens.size()));
    if (right) length = std::max(length, static_cast<std::int64_t>(sample.labels.size()));
  }
  length = (length + settings.pad_to_multiple_of - 1) / settings.pad_to_multiple_of * settings.pad_to_multiple_of;
  const auto int64 = at::TensorOptions().dtype(at::kLong);
  TiledImagesBatch out;
  out.tokens = at::full({batch, length}, settings.padding_idx, int64);
  if (right) out.labels = at::full({batch, length}, settings.ignore_idx, int64);
  auto* tokens = out.tokens.data_ptr<std::int64_t>();
  auto* labels = right ? out.labels.data_ptr<std::int64_t>() : nullptr;
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto& sample = samples[static_cast<std::size_t>(b)];
    const auto size = static_cast<std::int64_t>(sample.tokens.size());
    const std::int64_t offset = right ? 0 : length - size;
    std::copy(sample.tokens.begin(), sample.tokens.end(), tokens + b * length + offset);
    if (right) std::copy(sample.labels.begin(), sample.labels.end(), labels + b * length);
  }

  std::int64_t max_tiles = 0;
  std::int64_t max_images = 0;
  std::int64_t tokens_per_tile = 0;
  const at::Tensor* first_image = nullptr;
  // Whether the batch's images come with masks (cross-attention), from its first sample with an
  // image; std::nullopt until then.
  std::optional<bool> with_masks;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& sample = samples[i];
    const bool masked = !sample.masks.empty();
    if ((masked && sample.masks.size() != sample.images.size()) || sample.aspect_ratios.size() != sample.images.size())
      throw ft::Error(sample_name(i) + ": " + std::to_string(sample.images.size()) + " images, " +
                      std::to_string(sample.aspect_ratios.size()) + " aspect ratios and " +
                      std::to_string(sample.masks.size()) +
                      " masks; each image needs an aspect ratio, and a mask unless none has one");
    if (!sample.images.empty()) {
      if (with_masks && *with_masks != masked)
        throw ft::Error(sample_name(i) + ": its images come " + (masked ? "with" : "without") +
                        " text-to-image masks, unlike the batch's first images: one model transform makes a batch");
      with_masks = masked;
    }
    max_images = std::max(max_images, static_cast<std::int64_t>(sample.images.size()));
    for (std::size_t k = 0; k < sample.images.size(); ++k) {
      const at::Tensor& image = sample.images[k];
      const std::int64_t tiles = image.size(0);
      max_tiles = std::max(max_tiles, tiles);
      if (!first_image) first_image = &image;
      if (!image.sizes().slice(1).equals(first_image->sizes().slice(1)) ||
          image.scalar_type() != first_image->scalar_type())
        throw ft::Error(sample_name(i) + ", image " + std::to_string(k) +
                        ": its tiles differ in shape or dtype from the batch's first image's");
      if (!masked) continue;
      const at::Tensor& mask = sample.masks[k];
      if (mask.dim() != 2 || mask.size(0) != static_cast<std::int64_t>(sample.tokens.size()) ||
          mask.size(1) % tiles != 0)
        throw ft::Error(sample_name(i) + ", image " + std::to_string(k) +
                        ": its mask does not cover the text and a whole number of tokens per tile");
      const std::int64_t per_tile = mask.size(1) / tiles;
      if (tokens_per_tile != 0 && per_tile != tokens_per_tile)
        throw ft::Error(sample_name(i) + ", image " + std::to_string(k) + ": " + std::to_string(per_tile) +
                        " tokens per tile where the batch's first image has " + std::to_string(tokens_per_tile));
      tokens_per_tile = per_tile;
    }
  }
  if (!first_image)
    throw ft::Error("tiled-image collate: no sample in the micro-batch has an image; the vision encoder needs one");
  if (settings.pad_max_tiles) {
    if (*settings.pad_max_tiles < max_tiles)
      throw ft::Error("tiled-image collate: an image has " + std::to_string(max_tiles) +
                      " tiles, more than pad_max_tiles (" + std::to_string(*settings.pad_max_tiles) + ")");
    max_tiles = *settings.pad_max_tiles;
  }
  std::int64_t mask_images = max_images;
  if (settings.pad_max_images) {
    if (*settings.pad_max_images < max_images)
      throw ft::Error("tiled-image collate: a sample has " + std::to_string(max_images) +
                      " images, more than pad_max_images (" + std::to_string(*settings.pad_max_images) + ")");
    mask_images = *settings.pad_max_images;
  }

  std::vector<std::int64_t> image_shape{batch, max_images, max_tiles};
  for (const std::int64_t d : first_image->sizes().slice(1)) image_shape.push_back(d);
  out.images = at::zeros(image_shape, first_image->options());
  out.aspect_ratio = at::full({batch, max_images, 2}, 1, int64);
  // The model's layout (Hugging Face's Mllama: [batch, text, images, tiles x tokens] flattened):
  // text token t sees image i's tile tokens at columns i x max_tiles x tokens_per_tile onwards.
  const std::int64_t image_width = max_tiles * tokens_per_tile;
  if (*with_masks)
    out.encoder_mask = at::zeros({batch, length, mask_images * image_width}, at::TensorOptions().dtype(at::kBool));
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto& sample = samples[static_cast<std::size_t>(b)];
    const auto size = static_cast<std::int64_t>(sample.tokens.size());
    const std::int64_t row = right ? 0 : length - size;
    for (std::size_t k = 0; k < sample.images.size(); ++k) {
      const auto i = static_cast<std::int64_t>(k);
      const at::Tensor& image = sample.images[k];
      out.images[b][i].slice(0, 0, image.size(0)).copy_(image);
      out.aspect_ratio[b][i][0].fill_(sample.aspect_ratios[k].height);
      out.aspect_ratio[b][i][1].fill_(sample.aspect_ratios[k].width);
      if (!*with_masks) continue;
      const at::Tensor& mask = sample.masks[k];
      out.encoder_mask[b]
          .slice(0, row, row + size)
          .slice(1, i * image_width, i * image_width + mask.size(1))
          .copy_(mask);
    }
  }
  return out;
}

}  // namespace ft_images
