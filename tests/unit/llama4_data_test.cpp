// Llama 4's image data path against torchtune's own (tests/vision_references/
// make_llama4_data_references.py runs torchtune's current llama4_transform through
// the_cauldron_dataset): llama4_transform's tiles and global thumbnail in bfloat16, each image's
// tile grid of <|patch|> tokens in the text, labels; the expanded sequence's truncation; the
// tiled-image collate without encoder masks; and `fthost data` on such a sample.
#include <ft/collate.h>
#include <ft/dataset.h>
#include <ft/errors.h>
#include <ft/image_transform.h>
#include <ft/tokenizer.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "build_tree.h"
#include "builtin_plugins.h"
#include "pil_resize.h"
#include "published_tokenizers.h"
#include "safetensors.h"
#include "test_helpers.h"

namespace {

using ft_checkpointers::SafetensorsFile;
using json = nlohmann::json;

std::string data_dir() { return fttest::build_tree("vision_references/llama4_data"); }

std::string tokenizer_toml(std::int64_t max_seq_len) {
  return "[tokenizer]\n_component_ = \"torchtune.models.llama4.llama4_transform\"\npath = \"" +
         fttest::published::file("llama4", "tokenizer.model") + "\"\nmax_seq_len = " + std::to_string(max_seq_len) +
         "\nimage_size = 56\nmax_num_tiles = 16\n\n";
}

std::string dataset_toml() {
  return "[dataset]\n_component_ = \"torchtune.datasets.multimodal.the_cauldron_dataset\"\nsource = \"parquet\"\n"
         "data_files = \"" +
         data_dir() + "/cauldron.parquet\"\n\n";
}

class Llama4Data : public fttest::BuiltinPluginsTest {
 protected:
  Llama4Data() : expected_(data_dir() + "/references.safetensors") {
    meta_ = json::parse(expected_.metadata().at("meta"));
  }
  std::shared_ptr<const ft::Tokenizer> tokenizer(std::int64_t max_seq_len) const {
    return registry().instantiate<ft::Tokenizer>(root(tokenizer_toml(max_seq_len)).table("tokenizer"));
  }
  std::shared_ptr<const ft::Dataset> dataset(const std::shared_ptr<const ft::Tokenizer>& tok) const {
    return registry().instantiate<ft::Dataset>(root(dataset_toml()).table("dataset"), {tok});
  }
  std::int64_t id(const char* name) const { return meta_.at("ids").at(name).get<std::int64_t>(); }

  SafetensorsFile expected_;
  json meta_;
};

std::vector<std::int64_t> ints(const at::Tensor& t) {
  const at::Tensor c = t.contiguous().to(at::kLong);
  return {c.data_ptr<std::int64_t>(), c.data_ptr<std::int64_t>() + c.numel()};
}

// Every sample: tokens (the tile grids in the text), labels, each image's bfloat16 tiles (with the
// thumbnail last when there are several) and canvas, bit for bit; no encoder_mask.
TEST_F(Llama4Data, TheCauldronThroughLlama4TransformIsTorchtunes) {
  const auto tok = tokenizer(meta_.at("max_seq_len").get<std::int64_t>());
  const ft::ImageTransform* images = tok->image_transform();
  ASSERT_NE(images, nullptr);
  EXPECT_FALSE(images->cross_attends());
  EXPECT_EQ(images->image_token_id(), id("image"));
  EXPECT_EQ(images->tokens_per_tile(), meta_.at("patch_tokens_per_tile").get<std::int64_t>());
  const auto ds = dataset(tok);
  ASSERT_EQ(ds->size(), meta_.at("samples").get<std::size_t>());
  int thumbnails = 0;
  for (std::size_t i = 0; i < ds->size(); ++i) {
    const std::string key = "full." + std::to_string(i);
    SCOPED_TRACE(key);
    const ft::Sample s = ds->get(i);
    EXPECT_EQ(s.tokens, ints(expected_.tensor(key + ".tokens")));
    EXPECT_EQ(s.labels, ints(expected_.tensor(key + ".labels")));
    EXPECT_FALSE(s.truncated);
    ASSERT_EQ(s.images.size(), meta_.at("images")[i].get<std::size_t>());
    for (std::size_t j = 0; j < s.images.size(); ++j) {
      const std::string image = key + ".image." + std::to_string(j);
      const at::Tensor want = expected_.tensor(image + ".tiles");
      ASSERT_EQ(s.images[j].tiles.scalar_type(), at::kBFloat16);
      ASSERT_EQ(s.images[j].tiles.sizes(), want.sizes());
      // The canvas's tiles, then the thumbnail, each compared on its own so a failure says which.
      for (std::int64_t t = 0; t < want.size(0); ++t)
        EXPECT_TRUE(s.images[j].tiles[t].equal(want[t])) << image << " tile " << t << " of " << want.size(0);
      const auto ratio = ints(expected_.tensor(image + ".aspect_ratio"));
      EXPECT_EQ(s.images[j].rows, ratio[0]);
      EXPECT_EQ(s.images[j].columns, ratio[1]);
      EXPECT_FALSE(s.images[j].encoder_mask.defined());
      thumbnails += want.size(0) == ratio[0] * ratio[1] + 1 ? 1 : 0;
    }
  }
  EXPECT_EQ(thumbnails, 4);  // every image but the one-tile one
}

// Pillow's bilinear resize (the thumbnail's), bit for bit, in both of Pillow 13's pass orders,
// up and down, and along one axis.
TEST_F(Llama4Data, PilResizeIsPillows) {
  const int count = meta_.at("pil_resizes").get<int>();
  ASSERT_GE(count, 7);
  for (int k = 0; k < count; ++k) {
    const std::string key = "pil_resize." + std::to_string(k);
    const at::Tensor want = expected_.tensor(key + ".output");
    const at::Tensor got = ft_images::pil_resize_bilinear(expected_.tensor(key + ".input"), want.size(0), want.size(1));
    EXPECT_TRUE(got.equal(want)) << key << " (Pillow " << meta_.at("pillow").get<std::string>()
                                 << "): " << (got.to(at::kInt) - want.to(at::kInt)).abs().max().item<int>()
                                 << " levels at most";
  }
}

// The tile grid of a 2 x 3 canvas, as torchtune's Llama4Tokenizer._get_tile_grid_tokens lays it out.
TEST_F(Llama4Data, TheTileGridOfACanvasIsRowsOfPatchRuns) {
  const auto tok = tokenizer(4096);
  const ft::ImageTransform* images = tok->image_transform();
  ASSERT_NE(images, nullptr);
  const std::int64_t n = images->tokens_per_tile();
  ASSERT_EQ(n, 4);  // (56 / 14)^2 patches, a quarter kept by pixel shuffle
  const std::int64_t patch = id("patch"), x = id("tile_x_separator"), y = id("tile_y_separator");
  std::vector<std::int64_t> want{id("image_start")};
  for (int row = 0; row < 2; ++row) {
    for (int column = 0; column < 3; ++column) {
      want.insert(want.end(), n, patch);
      if (column < 2) want.push_back(x);
    }
    want.push_back(y);
  }
  want.push_back(id("image"));
  want.insert(want.end(), n, patch);
  want.push_back(id("image_end"));
  ft::SampleImage image;
  image.rows = 2;
  image.columns = 3;
  EXPECT_EQ(images->image_tokens(image), want);
  image.rows = image.columns = 1;
  std::vector<std::int64_t> single{id("image_start"), id("image")};
  single.insert(single.end(), n, patch);
  single.push_back(id("image_end"));
  EXPECT_EQ(images->image_tokens(image), single);
}

// max_seq_len cutting right after the first image's <|image_end|>: torchtune's truncated tokens
// and labels, and only the first image, whose tokens all stay (the second's are all past the cut).
TEST_F(Llama4Data, ImagesPastTheCutAreDropped) {
  const std::int64_t cut = meta_.at("cut").get<std::int64_t>();
  const auto ds = dataset(tokenizer(cut));
  const ft::Sample s = ds->get(0);
  EXPECT_EQ(s.tokens, ints(expected_.tensor("cut.0.tokens")));
  EXPECT_EQ(s.labels, ints(expected_.tensor("cut.0.labels")));
  EXPECT_EQ(static_cast<std::int64_t>(s.tokens.size()), cut);
  EXPECT_EQ(s.tokens.back(), id("eos"));
  EXPECT_TRUE(s.truncated);
  ASSERT_EQ(s.images.size(), 1u);
  EXPECT_TRUE(s.images[0].tiles.equal(expected_.tensor("full.0.image.0.tiles")));
}

// A cut through an image's tokens is an error naming the sample, the image and max_seq_len (the
// dataset draws sample 0 when it is built).
TEST_F(Llama4Data, ACutThroughAnImageIsAnError) {
  const std::int64_t max_seq_len = meta_.at("cut").get<std::int64_t>() + 10;
  const auto tok = tokenizer(max_seq_len);
  const std::string message = fttest::error_of<ft::Error>([&] { dataset(tok); });
  EXPECT_NE(message.find("sample 0"), std::string::npos) << message;
  EXPECT_NE(message.find("image 1 (record 0: images[1])"), std::string::npos) << message;
  EXPECT_NE(message.find("max_seq_len " + std::to_string(max_seq_len)), std::string::npos) << message;
}

// padded_collate_tiled_images_and_mask on Llama 4 samples: images zero-padded to the batch's most
// tiles and images, each image's tile count, canvases (1 x 1 for padding), no encoder_mask.
TEST_F(Llama4Data, TheCollatePadsImagesWithoutMasks) {
  const auto tok = tokenizer(4096);
  const auto ds = dataset(tok);
  const auto collate = registry().instantiate<ft::Collate>(
      root("[c]\n_component_ = \"torchtune.data.padded_collate_tiled_images_and_mask\"\n").table("c"),
      {tok->pad_id(), -100, 1});
  std::vector<ft::Sample> samples;
  for (std::size_t i = 0; i < ds->size(); ++i) samples.push_back(ds->get(i));
  const ft::Batch batch = collate->collate(samples);
  std::int64_t most_tiles = 0, longest = 0;
  for (const auto& s : samples) {
    longest = std::max<std::int64_t>(longest, static_cast<std::int64_t>(s.tokens.size()));
    for (const auto& image : s.images) most_tiles = std::max(most_tiles, image.tiles.size(0));
  }
  EXPECT_EQ(most_tiles, 16);  // the largest image: 3 x 5 tiles and the thumbnail
  const auto b = static_cast<std::int64_t>(samples.size());
  EXPECT_EQ(batch.tokens.sizes(), (std::vector<std::int64_t>{b, longest}));
  ASSERT_EQ(batch.images.images.sizes(), (std::vector<std::int64_t>{b, 2, most_tiles, 3, 56, 56}));
  EXPECT_EQ(batch.images.images.scalar_type(), at::kBFloat16);
  EXPECT_FALSE(batch.images.encoder_mask.defined());
  ASSERT_EQ(batch.images.tile_count.sizes(), (std::vector<std::int64_t>{b, 2}));
  ASSERT_EQ(batch.images.aspect_ratio.sizes(), (std::vector<std::int64_t>{b, 2, 2}));
  for (std::int64_t i = 0; i < b; ++i) {
    const auto& s = samples[static_cast<std::size_t>(i)];
    for (std::int64_t j = 0; j < 2; ++j) {
      SCOPED_TRACE("sample " + std::to_string(i) + " image " + std::to_string(j));
      const at::Tensor padded = batch.images.images[i][j];
      if (j < static_cast<std::int64_t>(s.images.size())) {
        const ft::SampleImage& image = s.images[static_cast<std::size_t>(j)];
        const std::int64_t tiles = image.tiles.size(0);
        EXPECT_EQ(batch.images.tile_count[i][j].item<std::int64_t>(), tiles);
        EXPECT_TRUE(padded.narrow(0, 0, tiles).equal(image.tiles));
        EXPECT_TRUE(padded.narrow(0, tiles, most_tiles - tiles).eq(0).all().item<bool>());
        EXPECT_EQ(batch.images.aspect_ratio[i][j][0].item<std::int64_t>(), image.rows);
        EXPECT_EQ(batch.images.aspect_ratio[i][j][1].item<std::int64_t>(), image.columns);
      } else {
        EXPECT_EQ(batch.images.tile_count[i][j].item<std::int64_t>(), 0);
        EXPECT_TRUE(padded.eq(0).all().item<bool>());
        EXPECT_EQ(batch.images.aspect_ratio[i][j][0].item<std::int64_t>(), 1);
      }
    }
  }
  // A batch mixing images with and without text-to-image masks is refused.
  std::vector<ft::Sample> mixed{samples[1], samples[2]};
  mixed[1].images[0].encoder_mask =
      at::ones({static_cast<std::int64_t>(mixed[1].tokens.size()), mixed[1].images[0].tiles.size(0)}, at::kBool);
  const std::string message = fttest::error_of<ft::Error>([&] { collate->collate(mixed); });
  EXPECT_NE(message.find("with text-to-image masks, unlike"), std::string::npos) << message;
}

// `fthost data` on the Llama 4 samples: each image's canvas, tiles with the thumbnail, and where
// its tile grid sits in the tokens (text and --json), the grid's <|patch|> runs counted rather
// than spelt out; no encoder_mask to show.
TEST_F(Llama4Data, FthostDataShowsWhereTheImagesTokensAre) {
  const fttest::TempDir dir;
  std::ofstream(dir.file("run.toml")) << "batch_size = 2\ncollate_fn = "
                                         "\"torchtune.data.padded_collate_tiled_images_and_mask\"\n\n"
                                      << tokenizer_toml(4096) << dataset_toml();
  const auto text = fttest::run_fthost("data --config " + dir.file("run.toml") + " --samples 2 2>&1");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  // Sample 0: a one-tile image (no thumbnail) and a 2 x 2 one (4 tiles and the thumbnail).
  const ft::Sample s = dataset(tokenizer(4096))->get(0);
  const auto grid = [&](std::size_t begin, std::size_t size) {
    return std::to_string(begin) + "-" + std::to_string(begin + size - 1);
  };
  const auto tok = tokenizer(4096);
  const std::size_t first = std::find(s.tokens.begin(), s.tokens.end(), id("image_start")) - s.tokens.begin();
  const std::size_t first_size = tok->image_transform()->image_tokens(s.images[0]).size();
  const std::size_t second_size = tok->image_transform()->image_tokens(s.images[1]).size();
  EXPECT_NE(text.output.find("image 0: 1x1 canvas, 1 tile(s) of 56x56 px; its tile grid is tokens " +
                             grid(first, first_size) + ", whose 4 patch tokens"),
            std::string::npos)
      << text.output;
  EXPECT_NE(text.output.find("image 1: 2x2 canvas, 5 tile(s) of 56x56 px (the last a global thumbnail); its tile "
                             "grid is tokens " +
                             grid(first + first_size, second_size) + ", whose 20 patch tokens"),
            std::string::npos)
      << text.output;

  // The tile grids shown compactly: each run of <|patch|> once, with its count.
  EXPECT_NE(text.output.find("<|image_start|><|image|><|patch|>\u00d74<|image_end|><|image_start|><|patch|>\u00d74"
                             "<|tile_x_separator|><|patch|>\u00d74<|tile_y_separator|>"),
            std::string::npos)
      << text.output;

  const auto js = fttest::run_fthost("data --json --config " + dir.file("run.toml") + " --samples 1 2>/dev/null");
  ASSERT_EQ(js.exit_code, 0) << js.output;
  bool seen = false;
  std::istringstream lines(js.output);
  for (std::string line; std::getline(lines, line);) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("images")) continue;
    seen = true;
    ASSERT_EQ(j.at("images").size(), 2u);
    EXPECT_EQ(j.at("images")[1].at("tiles").get<int>(), 5);
    EXPECT_TRUE(j.at("images")[1].at("thumbnail").get<bool>());
    EXPECT_FALSE(j.at("images")[0].at("thumbnail").get<bool>());
    EXPECT_EQ(j.at("images")[0].at("tokens"), json({first, first + first_size}));
    EXPECT_EQ(j.at("images")[1].at("tokens"), json({first + first_size, first + first_size + second_size}));
    EXPECT_TRUE(j.at("images")[1].at("seen_by").empty());
  }
  EXPECT_TRUE(seen) << js.output;
}

}  // namespace
