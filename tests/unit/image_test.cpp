// Images as torchtune's data path sees them, against Pillow and torchtune themselves
// (tests/image_references/make_image_references.py, the ctest fixture image_references): every
// pixel PIL's convert("RGB") gives, the canvases torchtune lists, and CLIPImageTransform's tiles
// bit for bit; refusals that name the file.
#include <ft/errors.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "build_tree.h"
#include "image_decoding.h"
#include "safetensors.h"
#include "test_helpers.h"
#include "tile_canvas.h"
#include "tiled_image_transform.h"
#include "tiled_images_collate.h"
#include "vision_cross_attention_mask.h"

namespace {

using fttest::error_of;

// The fixture image_references (tests/CMakeLists.txt).
std::string reference_dir() { return fttest::build_tree("image_references"); }
std::string image_path(const std::string& name) { return reference_dir() + "/images/" + name; }

const ft_checkpointers::SafetensorsFile& references() {
  static const ft_checkpointers::SafetensorsFile file(reference_dir() + "/references.safetensors");
  return file;
}

TEST(ImageDecoding, EveryPixelAsPillowConvertsItToRgb) {
  int images = 0;
  for (const auto& record : references().records()) {
    const std::string prefix = "decoded.";
    if (record.name.rfind(prefix, 0) != 0) continue;
    const std::string name = record.name.substr(prefix.size());
    SCOPED_TRACE(name);
    const at::Tensor expected = references().tensor(record);
    const at::Tensor decoded = ft_images::read_image_file(image_path(name), ft_images::ExifOrientation::ignore);
    ASSERT_EQ(decoded.sizes(), expected.sizes());
    const at::Tensor differs = decoded.ne(expected);
    EXPECT_EQ(differs.sum().item<std::int64_t>(), 0)
        << "largest difference " << (decoded.to(at::kInt) - expected.to(at::kInt)).abs().max().item<int>();
    ++images;
  }
  EXPECT_EQ(images, 12);
}

TEST(ImageDecoding, TheFormatIsToldByTheBytesNotTheName) {
  const std::string png = fttest::read_file(image_path("rgb_300x200.png"));
  EXPECT_TRUE(ft_images::decode_image(png, "named.jpg", ft_images::ExifOrientation::ignore)
                  .equal(references().tensor("decoded.rgb_300x200.png")));
  EXPECT_EQ(ft_images::sniff_image_format(fttest::read_file(image_path("gray_97x61.jpg")), "x"),
            ft_images::ImageFormat::jpeg);
  EXPECT_EQ(ft_images::sniff_image_format(fttest::read_file(image_path("rgb_300x200_lossy.webp")), "x"),
            ft_images::ImageFormat::webp);
}

TEST(ImageDecoding, BadImagesAreRefusedNamingTheSourceAndTheProblem) {
  const auto refusal = [](const std::string& bytes, const std::string& source) {
    return error_of<ft::Error>([&] { ft_images::decode_image(bytes, source, ft_images::ExifOrientation::ignore); });
  };
  for (const std::string name : {"rgb_300x200.jpg", "rgb_300x200_progressive.jpg", "rgb_300x200.png",
                                 "rgb_300x200_lossy.webp", "rgb_300x200_lossless.webp"}) {
    SCOPED_TRACE(name);
    const std::string bytes = fttest::read_file(image_path(name));
    ASSERT_GT(bytes.size(), 100u) << image_path(name);
    const std::string message = refusal(bytes.substr(0, bytes.size() / 2), "sample 7 (" + name + ")");
    EXPECT_NE(message.find("sample 7 (" + name + "): "), std::string::npos) << message;
    EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  }
  EXPECT_NE(refusal("", "empty.png").find("empty.png: an empty file"), std::string::npos);
  const std::string text = refusal("{\"not\": \"an image\"}", "notes.jpg");
  EXPECT_NE(text.find("notes.jpg: not a JPEG, PNG or WebP image"), std::string::npos) << text;
  std::string corrupt = fttest::read_file(image_path("rgb_300x200.png"));
  ASSERT_GT(corrupt.size(), 100u) << image_path("rgb_300x200.png");
  corrupt[60] = static_cast<char>(corrupt[60] ^ 0x55);  // inside IDAT: its CRC no longer matches
  EXPECT_NE(refusal(corrupt, "crc.png").find("crc.png: unreadable PNG"), std::string::npos);

  const std::string cmyk = error_of<ft::Error>(
      [] { ft_images::read_image_file(image_path("cmyk.jpg"), ft_images::ExifOrientation::ignore); });
  EXPECT_NE(cmyk.find("cmyk.jpg: a CMYK JPEG"), std::string::npos) << cmyk;
  const std::string gray16 = error_of<ft::Error>(
      [] { ft_images::read_image_file(image_path("gray16.png"), ft_images::ExifOrientation::ignore); });
  EXPECT_NE(gray16.find("gray16.png: a 16-bit grayscale PNG"), std::string::npos) << gray16;
  const std::string animated = error_of<ft::Error>(
      [] { ft_images::read_image_file(image_path("animated.webp"), ft_images::ExifOrientation::ignore); });
  EXPECT_NE(animated.find("animated.webp: an animated WebP"), std::string::npos) << animated;
  const std::string bomb = error_of<ft::Error>(
      [] { ft_images::read_image_file(image_path("bomb.png"), ft_images::ExifOrientation::ignore); });
  EXPECT_NE(bomb.find("bomb.png: 20000 x 20000 pixels, more than 178956970"), std::string::npos) << bomb;
  const std::string missing = error_of<ft::Error>(
      [] { ft_images::read_image_file(image_path("missing.png"), ft_images::ExifOrientation::ignore); });
  EXPECT_NE(missing.find("missing.png: cannot open the image"), std::string::npos) << missing;
}

TEST(TileCanvas, TheCanvasesTorchtuneListsInItsOrder) {
  for (const auto& [max_tiles, tile] : std::vector<std::pair<int, int>>{{4, 224}, {8, 560}, {6, 32}, {1, 16}}) {
    SCOPED_TRACE(std::to_string(max_tiles) + " tiles of " + std::to_string(tile));
    const at::Tensor expected =
        references().tensor("canvases." + std::to_string(max_tiles) + "." + std::to_string(tile));
    const auto canvases = ft_images::supported_canvases(max_tiles, tile);
    ASSERT_EQ(static_cast<std::int64_t>(canvases.size()), expected.size(0));
    for (std::size_t i = 0; i < canvases.size(); ++i) {
      EXPECT_EQ(canvases[i].height, expected[static_cast<std::int64_t>(i)][0].item<std::int64_t>()) << i;
      EXPECT_EQ(canvases[i].width, expected[static_cast<std::int64_t>(i)][1].item<std::int64_t>()) << i;
    }
  }
}

TEST(TileCanvas, TheDocumentedFitsAndSizes) {
  // torchtune's docstrings: get_canvas_best_fit's example and _get_max_res_without_distortion's.
  const std::vector<ft_images::PixelSize> canvases{{224, 896}, {448, 448}, {224, 224}, {896, 224},
                                                   {224, 672}, {672, 224}, {224, 448}, {448, 224}};
  EXPECT_TRUE((ft_images::best_fit_canvas({200, 300}, canvases, false) == ft_images::PixelSize{224, 448}));
  EXPECT_TRUE((ft_images::size_without_distortion({200, 300}, {450, 200}) == ft_images::PixelSize{133, 200}));
  EXPECT_TRUE((ft_images::size_without_distortion({800, 600}, {450, 1300}) == ft_images::PixelSize{450, 337}));
  // resize_with_pad's examples: with max_size 600 a 300 x 800 image is not upscaled onto 448 x 1344,
  // and 500 x 1000 goes down onto 448 x 488 as (244, 488), which torchtune's function returns (its
  // docstring says (224, 448), the size on 448 x 448).
  EXPECT_TRUE((ft_images::resized_size_on_canvas({300, 800}, {448, 1344}, 600) == ft_images::PixelSize{300, 800}));
  EXPECT_TRUE((ft_images::resized_size_on_canvas({500, 1000}, {448, 488}, 600) == ft_images::PixelSize{244, 488}));
  EXPECT_TRUE((ft_images::resized_size_on_canvas({500, 1000}, {448, 448}, 600) == ft_images::PixelSize{224, 448}));
  EXPECT_TRUE((ft_images::resized_size_on_canvas({300, 800}, {448, 1344}, 0) == ft_images::PixelSize{448, 1194}));
}

TEST(TiledImageTransform, TilesBitForBitAsTorchtunesClipImageTransform) {
  const nlohmann::json cases = nlohmann::json::parse(fttest::read_file(reference_dir() + "/cases.json"));
  ASSERT_EQ(cases.size(), 7u);
  for (const auto& [name, c] : cases.items()) {
    SCOPED_TRACE(name);
    ft_images::TiledImageSettings settings;
    settings.tile_size = c.at("tile_size").get<std::int64_t>();
    settings.max_num_tiles = c.at("max_num_tiles").get<std::int64_t>();
    settings.resize_to_max_canvas = c.at("resize_to_max_canvas").get<bool>();
    settings.mean = c.at("mean").get<std::vector<double>>();
    settings.std = c.at("std").get<std::vector<double>>();
    settings.dtype = c.at("dtype").get<std::string>() == "bfloat16" ? at::kBFloat16 : at::kFloat;
    const ft_images::TiledImageTransform transform(settings);
    const auto image =
        ft_images::read_image_file(image_path(c.at("image").get<std::string>()), ft_images::ExifOrientation::ignore);
    const ft_images::TiledImage tiled = transform(image);
    const at::Tensor expected = references().tensor("tiles." + name);
    ASSERT_EQ(tiled.tiles.sizes(), expected.sizes());
    ASSERT_EQ(tiled.tiles.scalar_type(), expected.scalar_type());
    const at::Tensor differs = tiled.tiles.ne(expected);
    EXPECT_EQ(differs.sum().item<std::int64_t>(), 0)
        << "largest difference " << (tiled.tiles.to(at::kDouble) - expected.to(at::kDouble)).abs().max().item<double>();
    const at::Tensor aspect = references().tensor("aspect_ratio." + name);
    EXPECT_EQ(tiled.aspect_ratio.height, aspect[0].item<std::int64_t>());
    EXPECT_EQ(tiled.aspect_ratio.width, aspect[1].item<std::int64_t>());
  }
}

TEST(TiledImageTransform, BadSettingsAreRefused) {
  ft_images::TiledImageSettings settings;
  settings.mean = {0.5, 0.5, 0.5};
  EXPECT_NE(error_of<ft::Error>([&] { ft_images::TiledImageTransform{settings}; }).find("image_mean and image_std"),
            std::string::npos);
  settings.std = {0.5, 0.0, 0.5};
  EXPECT_NE(error_of<ft::Error>([&] { ft_images::TiledImageTransform{settings}; }).find("divide by zero"),
            std::string::npos);
  ft_images::TiledImageSettings tiles;
  tiles.max_num_tiles = 0;
  EXPECT_NE(error_of<ft::Error>([&] { ft_images::TiledImageTransform{tiles}; }).find("max_num_tiles >= 1"),
            std::string::npos);
  ft_images::TiledImageSettings canvas;
  canvas.possible_canvases = {{224, 300}};
  EXPECT_NE(error_of<ft::Error>([&] { ft_images::TiledImageTransform{canvas}; }).find("not a whole number"),
            std::string::npos);
}

std::vector<std::int64_t> as_ids(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  return {c.data_ptr<std::int64_t>(), c.data_ptr<std::int64_t>() + c.numel()};
}

TEST(VisionCrossAttentionMask, IntervalsAsTorchtunesDocumentedExample) {
  const auto intervals =
      ft_images::image_attention_intervals({1, 1, 9673, 527, 1403, 12875, 13, 1, 1115, 374, 264, 8415}, 1);
  const at::Tensor expected = references().tensor("intervals.docstring");
  ASSERT_EQ(static_cast<std::int64_t>(intervals.size()), expected.size(0));
  for (std::size_t i = 0; i < intervals.size(); ++i) {
    EXPECT_EQ(intervals[i].begin, expected[static_cast<std::int64_t>(i)][0].item<std::int64_t>());
    EXPECT_EQ(intervals[i].end, expected[static_cast<std::int64_t>(i)][1].item<std::int64_t>());
  }
  const std::string refused = error_of<ft::Error>([] {
    ft_images::vision_cross_attention_masks({1, 5, 1}, 1, {2}, 4, "row 3");
  });
  EXPECT_NE(refused.find("row 3: 2 image token(s) (id 1) in the text but 1 image(s)"), std::string::npos) << refused;
}

// torchtune's masks and collated batch for the same samples; the encoder mask in the model's
// layout, which torchtune's differs from when a sample has several images (docs/parity.md).
TEST(TiledImagesCollate, BatchesAsTorchtuneWithTheModelsMaskLayout) {
  const nlohmann::json described = nlohmann::json::parse(fttest::read_file(reference_dir() + "/collate_cases.json"));
  const auto image_token = described.at("image_token").get<std::int64_t>();
  const auto patches_per_tile = described.at("patches_per_tile").get<std::int64_t>();
  ASSERT_EQ(described.at("cases").size(), 3u);
  for (const auto& [name, c] : described.at("cases").items()) {
    SCOPED_TRACE(name);
    const std::string prefix = "collate." + name;
    const bool right = c.at("pad_direction") == "right";
    std::vector<ft_images::TiledImagesSample> samples;
    const auto tiles = c.at("tiles_per_image").get<std::vector<std::vector<std::int64_t>>>();
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      const std::string sample_prefix = prefix + ".sample" + std::to_string(i);
      ft_images::TiledImagesSample sample;
      sample.tokens = as_ids(references().tensor(sample_prefix + ".tokens"));
      sample.labels = as_ids(references().tensor(sample_prefix + ".labels"));
      sample.masks = ft_images::vision_cross_attention_masks(sample.tokens, image_token, tiles[i], patches_per_tile,
                                                             sample_prefix);
      for (std::size_t k = 0; k < tiles[i].size(); ++k) {
        const std::string image = sample_prefix + ".image" + std::to_string(k);
        sample.images.push_back(references().tensor(image));
        const auto aspect = as_ids(references().tensor(sample_prefix + ".aspect" + std::to_string(k)));
        sample.aspect_ratios.push_back({aspect[0], aspect[1]});
        EXPECT_TRUE(sample.masks[k].equal(references().tensor(sample_prefix + ".mask" + std::to_string(k)))) << image;
      }
      samples.push_back(std::move(sample));
    }
    ft_images::TiledImagesCollateSettings settings;
    settings.pad_direction = right ? ft_images::PadDirection::right : ft_images::PadDirection::left;
    if (!c.at("pad_max_tiles").is_null()) settings.pad_max_tiles = c.at("pad_max_tiles").get<std::int64_t>();
    if (!c.at("pad_max_images").is_null()) settings.pad_max_images = c.at("pad_max_images").get<std::int64_t>();
    const ft_images::TiledImagesBatch batch = ft_images::collate_tiled_images_and_mask(samples, settings);
    EXPECT_TRUE(batch.tokens.equal(references().tensor(prefix + ".tokens")));
    EXPECT_EQ(batch.labels.defined(), right);
    if (right) {
      EXPECT_TRUE(batch.labels.equal(references().tensor(prefix + ".labels")));
    }
    EXPECT_TRUE(batch.images.equal(references().tensor(prefix + ".images")));
    EXPECT_TRUE(batch.aspect_ratio.equal(references().tensor(prefix + ".aspect_ratio")));
    EXPECT_TRUE(batch.encoder_mask.equal(references().tensor(prefix + ".model_encoder_mask")));
    // torchtune's mask is this layout's [batch, images, text, tiles x tokens] memory viewed as
    // [batch, text, images x tiles x tokens].
    if (c.at("pad_max_images").is_null()) {
      const auto b = batch.encoder_mask.size(0);
      const auto s = batch.encoder_mask.size(1);
      const auto n = batch.images.size(1);
      const at::Tensor as_torchtune =
          batch.encoder_mask.view({b, s, n, -1}).permute({0, 2, 1, 3}).contiguous().view({b, s, -1});
      EXPECT_TRUE(as_torchtune.equal(references().tensor(prefix + ".torchtune_encoder_mask")));
    }
    if (!right) {
      settings.pad_to_multiple_of = 2;
      EXPECT_NE(error_of<ft::Error>([&] {
                  ft_images::collate_tiled_images_and_mask(samples, settings);
                }).find("padding left (generation) pads to no multiple"),
                std::string::npos);
      continue;
    }
    // Under tensor parallelism (torchtune's pad_to_multiple_of): the same batch, its text padded
    // on to a multiple with the pad id and the ignore index, the extra rows seeing no image.
    const std::int64_t length = batch.tokens.size(1);
    settings.pad_to_multiple_of = 8;
    const ft_images::TiledImagesBatch padded = ft_images::collate_tiled_images_and_mask(samples, settings);
    const std::int64_t padded_length = (length + 7) / 8 * 8;
    ASSERT_EQ(padded.tokens.size(1), padded_length);
    ASSERT_GT(padded_length, length) << "the case's length is already a multiple of 8: pick another multiple";
    EXPECT_TRUE(padded.tokens.narrow(1, 0, length).equal(batch.tokens));
    EXPECT_TRUE(padded.tokens.narrow(1, length, padded_length - length).eq(settings.padding_idx).all().item<bool>());
    EXPECT_TRUE(padded.labels.narrow(1, 0, length).equal(batch.labels));
    EXPECT_TRUE(padded.labels.narrow(1, length, padded_length - length).eq(settings.ignore_idx).all().item<bool>());
    EXPECT_TRUE(padded.images.equal(batch.images));
    EXPECT_TRUE(padded.encoder_mask.narrow(1, 0, length).equal(batch.encoder_mask));
    EXPECT_FALSE(padded.encoder_mask.narrow(1, length, padded_length - length).any().item<bool>());
  }
}

TEST(TiledImagesCollate, RefusesWhatItCannotPad) {
  ft_images::TiledImagesSample sample;
  sample.tokens = {99, 5};
  sample.labels = {99, 5};
  sample.images = {at::zeros({3, 3, 4, 4})};
  sample.aspect_ratios = {{1, 3}};
  sample.masks = ft_images::vision_cross_attention_masks(sample.tokens, 99, {3}, 4, "sample");
  ft_images::TiledImagesCollateSettings settings;
  settings.pad_max_tiles = 2;
  EXPECT_NE(error_of<ft::Error>([&] {
              ft_images::collate_tiled_images_and_mask({sample}, settings);
            }).find("an image has 3 tiles, more than pad_max_tiles (2)"),
            std::string::npos);
  ft_images::TiledImagesSample text_only;
  text_only.tokens = text_only.labels = {5, 6};
  EXPECT_NE(error_of<ft::Error>([&] { ft_images::collate_tiled_images_and_mask({text_only}, {}); }).find("no sample"),
            std::string::npos);
  // A text-only sample beside one with an image gets padding only (torchtune's collate stops).
  const auto mixed = ft_images::collate_tiled_images_and_mask({sample, text_only}, {});
  EXPECT_EQ(mixed.images.sizes(), (std::vector<std::int64_t>{2, 1, 3, 3, 4, 4}));
  EXPECT_FALSE(mixed.encoder_mask[1].any().item<bool>());
  EXPECT_EQ(mixed.aspect_ratio[1][0][0].item<std::int64_t>(), 1);
}

}  // namespace
