// torchtune.data.padded_collate_tiled_images_and_mask as a collate component: text padded as
// padded_collate_sft pads it, images and tiles padded with zeros, the text-to-image masks laid
// out as the model reads them (tiled_images_collate.h); images without masks (Llama 4's, taken in
// place of their <|patch|> tokens) leave encoder_mask undefined.
#include "dataset_components.h"

#include <ft/collate.h>
#include <ft/errors.h>

#include <ATen/ATen.h>

#include <utility>

#include "tiled_images_collate.h"

namespace ft_ds {

namespace {

class PaddedCollateTiledImages final : public ft::Collate {
 public:
  explicit PaddedCollateTiledImages(const ft_images::TiledImagesCollateSettings& settings) : settings_(settings) {}

  ft::Batch collate(const std::vector<ft::Sample>& samples) const override {
    std::vector<ft_images::TiledImagesSample> tiled;
    tiled.reserve(samples.size());
    std::int64_t most_images = 0;
    for (const auto& s : samples) {
      ft_images::TiledImagesSample t{s.tokens, s.labels, {}, {}, {}};
      for (const auto& image : s.images) {
        t.images.push_back(image.tiles);
        t.aspect_ratios.push_back({image.rows, image.columns});
        if (image.encoder_mask.defined()) t.masks.push_back(image.encoder_mask);  // none: Llama 4
      }
      most_images = std::max<std::int64_t>(most_images, static_cast<std::int64_t>(s.images.size()));
      tiled.push_back(std::move(t));
    }
    ft_images::TiledImagesBatch collated = ft_images::collate_tiled_images_and_mask(tiled, settings_);
    ft::Batch batch;
    batch.tokens = std::move(collated.tokens);
    batch.labels = std::move(collated.labels);
    batch.images.images = std::move(collated.images);
    batch.images.aspect_ratio = std::move(collated.aspect_ratio);
    batch.images.encoder_mask = std::move(collated.encoder_mask);
    // Each image's real tiles (0 for the padding images), for the encoder's tile mask.
    const std::int64_t width = batch.images.images.size(1);
    batch.images.tile_count = at::zeros({static_cast<std::int64_t>(samples.size()), width}, at::kLong);
    auto counts = batch.images.tile_count.accessor<std::int64_t, 2>();
    for (std::size_t i = 0; i < samples.size(); ++i)
      for (std::size_t j = 0; j < samples[i].images.size(); ++j)
        counts[static_cast<std::int64_t>(i)][static_cast<std::int64_t>(j)] = samples[i].images[j].tiles.size(0);
    return batch;
  }

 private:
  ft_images::TiledImagesCollateSettings settings_;
};

}  // namespace

void register_padded_collate_tiled_images(ft::Registry& reg) {
  ft::Schema s;
  s.optional("pad_direction", ft::ValueType::String, "\"right\"",
             "right (training: tokens and labels) or left (generation: tokens only)")
      .optional("pad_max_tiles", ft::ValueType::Int, "",
                "pad every image to this many tiles (default: the batch's most)")
      .optional("pad_max_images", ft::ValueType::Int, "",
                "pad every sample to this many images (default: the batch's most)");
  reg.add<ft::Collate>(
      "torchtune.data.padded_collate_tiled_images_and_mask", std::move(s),
      "multimodal batches: text padded, images padded to the most tiles and images, text-to-image masks",
      [](const ft::ConfigNode& cfg, ft::Collate::Args args) {
        ft_images::TiledImagesCollateSettings settings;
        settings.padding_idx = args.pad_id;
        settings.ignore_idx = args.ignore_index;
        settings.pad_to_multiple_of = args.pad_to_multiple_of;
        const std::string direction = cfg.get<std::string>("pad_direction", "right");
        if (direction != "right" && direction != "left")
          cfg.fail("pad_direction", "expected \"right\" or \"left\", got \"" + direction + "\"");
        settings.pad_direction = direction == "right" ? ft_images::PadDirection::right : ft_images::PadDirection::left;
        if (direction == "left" && args.pad_to_multiple_of > 1)
          cfg.fail("pad_direction",
                   "\"left\" (generation) pads to no multiple, and training pads sequences to a multiple of " +
                       std::to_string(args.pad_to_multiple_of) + " (the tensor-parallel degree); pad right");
        for (const char* key : {"pad_max_tiles", "pad_max_images"})
          if (auto n = cfg.get_optional<std::int64_t>(key); n && *n <= 0)
            cfg.fail(key, "must be positive, got " + std::to_string(*n));
        settings.pad_max_tiles = cfg.get_optional<std::int64_t>("pad_max_tiles");
        settings.pad_max_images = cfg.get_optional<std::int64_t>("pad_max_images");
        return std::make_unique<PaddedCollateTiledImages>(settings);
      });
}

}  // namespace ft_ds
