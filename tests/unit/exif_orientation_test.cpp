// EXIF orientation as torchtune's data path applies it, against Pillow, datasets and torchtune
// themselves (tests/vision_references/make_exif_references.py, the ctest fixture
// exif_references): an image stored in a record is decoded as datasets' Image feature decodes it
// (exif_transpose), bit for bit, each orientation in JPEG, PNG and WebP and in each place Pillow
// reads one from; malformed EXIF as Pillow tolerates or refuses it; a file read by path as
// torchtune's load_image opens it (not transposed); and torchtune's the_cauldron_dataset and
// vqa_dataset on a rotated image, stored in the record and by path.
#include <ft/dataset.h>
#include <ft/errors.h>
#include <ft/tokenizer.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "build_tree.h"
#include "builtin_plugins.h"
#include "image_decoding.h"
#include "safetensors.h"
#include "test_helpers.h"

namespace {

using ft_checkpointers::SafetensorsFile;
using ft_images::ExifOrientation;
using fttest::error_of;
using json = nlohmann::json;

// The fixture exif_references (tests/CMakeLists.txt).
std::string exif_dir() { return fttest::build_tree("vision_references/exif"); }

const SafetensorsFile& references() {
  static const SafetensorsFile file(exif_dir() + "/references.safetensors");
  return file;
}

const json& meta() {
  static const json m = json::parse(references().metadata().at("meta"));
  return m;
}

std::string bytes_of(const json& c) { return fttest::read_file(exif_dir() + "/" + c.at("file").get<std::string>()); }

std::int64_t differing(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() ? a.ne(b).sum().item<std::int64_t>() : a.numel();
}

// Every image as datasets decodes it from a record's bytes: transposed by the orientation Pillow
// reads, every pixel equal; where datasets raises (EXIF data Pillow cannot read), refused naming
// the image.
TEST(ImageExifOrientation, AStoredImageDecodesAsDatasetsDecodesIt) {
  int decoded = 0, refused = 0;
  std::map<std::string, std::set<int>> orientations;  // format -> orientations seen
  for (const auto& [name, c] : meta().at("cases").items()) {
    SCOPED_TRACE(name);
    const std::string bytes = bytes_of(c);
    if (!c.at("raises").is_null()) {
      const std::string message =
          error_of<ft::Error>([&] { ft_images::decode_image(bytes, "record 4: images[0]", ExifOrientation::apply); });
      EXPECT_EQ(message.rfind("record 4: images[0]: EXIF orientation unreadable: ", 0), 0U) << message;
      ++refused;
      continue;
    }
    const at::Tensor expected = references().tensor("decoded." + name);
    const at::Tensor image = ft_images::decode_image(bytes, name, ExifOrientation::apply);
    ASSERT_EQ(image.sizes(), expected.sizes());
    EXPECT_EQ(differing(image, expected), 0);
    EXPECT_TRUE(image.is_contiguous());
    orientations[c.at("format").get<std::string>()].insert(c.at("orientation").get<int>());
    ++decoded;
  }
  EXPECT_EQ(decoded, 52);
  EXPECT_EQ(refused, 6);
  const std::set<int> all{1, 2, 3, 4, 5, 6, 7, 8};
  for (const char* format : {"JPEG", "PNG", "WEBP"}) EXPECT_EQ(orientations[format], all) << format;
}

// The orientation alone, without the pixels: the one Pillow's getexif() gives and exif_transpose
// applies.
TEST(ImageExifOrientation, TheOrientationIsTheOnePillowReads) {
  for (const auto& [name, c] : meta().at("cases").items()) {
    SCOPED_TRACE(name);
    const std::string bytes = bytes_of(c);
    if (c.at("raises").is_null()) {
      EXPECT_EQ(ft_images::exif_orientation(bytes, name), c.at("orientation").get<int>());
    } else {
      const std::string message = error_of<ft::Error>([&] { ft_images::exif_orientation(bytes, name); });
      EXPECT_NE(message.find("EXIF orientation unreadable"), std::string::npos) << message;
    }
  }
}

// Malformed EXIF data: what Pillow tolerates gives its orientation (or none); what it refuses is
// refused with the reason.
TEST(ImageExifOrientation, MalformedExifIsReadAsPillowReadsIt) {
  const auto orientation = [](const std::string& name) {
    return ft_images::exif_orientation(bytes_of(meta().at("cases").at(name)), name);
  };
  const auto refusal = [](const std::string& name) {
    return error_of<ft::Error>([&] { ft_images::exif_orientation(bytes_of(meta().at("cases").at(name)), name); });
  };
  EXPECT_EQ(orientation("jpg_malformed_ifd_outside_data.jpg"), 1);
  EXPECT_EQ(orientation("jpg_malformed_ifd_cut_short_6.jpg"), 6);
  EXPECT_EQ(orientation("jpg_malformed_offset_outside_before_tag.jpg"), 1);
  EXPECT_EQ(orientation("jpg_malformed_oversized_before_tag_6.jpg"), 6);
  // The same block that is not TIFF data: ignored by a JPEG whose JFIF header has no density
  // (Pillow reads the EXIF while opening it and catches the error; its XMP, orientation 6, is then
  // never read), refused by one that has.
  EXPECT_EQ(orientation("jpg_malformed_not_tiff_no_dpi.jpg"), 1);
  EXPECT_NE(refusal("jpg_malformed_not_tiff_dpi.jpg").find("not TIFF data"), std::string::npos);
  EXPECT_NE(refusal("jpg_malformed_short_header_dpi.jpg").find("ends inside the TIFF header"), std::string::npos);
  EXPECT_NE(refusal("jpg_malformed_bigtiff_dpi.jpg").find("BigTIFF"), std::string::npos);
  EXPECT_NE(refusal("png_malformed_not_tiff.png").find("not TIFF data"), std::string::npos);
  EXPECT_NE(refusal("webp_malformed_not_tiff.webp").find("not TIFF data"), std::string::npos);
  EXPECT_NE(refusal("png_malformed_raw_profile_not_hex.png").find("not hexadecimal"), std::string::npos);
  // Out of range: the tag is there, so Pillow transposes nothing (and reads no XMP).
  EXPECT_EQ(orientation("jpg_orientation_0.jpg"), 1);
  EXPECT_EQ(orientation("jpg_orientation_9.jpg"), 1);
}

// A file read by path, as torchtune's load_image opens it: the stored pixels, whatever its EXIF
// says, malformed EXIF included.
TEST(ImageExifOrientation, AFileReadByPathKeepsItsStoredPixels) {
  int transposed_when_stored = 0;
  for (const auto& [name, c] : meta().at("cases").items()) {
    SCOPED_TRACE(name);
    const at::Tensor expected = references().tensor("opened." + name);
    const at::Tensor image =
        ft_images::read_image_file(exif_dir() + "/" + c.at("file").get<std::string>(), ExifOrientation::ignore);
    ASSERT_EQ(image.sizes(), expected.sizes());
    EXPECT_EQ(differing(image, expected), 0);
    if (c.at("raises").is_null() && c.at("orientation").get<int>() != 1) {
      // The same bytes stored in a record come out transposed.
      EXPECT_GT(differing(image, references().tensor("decoded." + name)), 0);
      ++transposed_when_stored;
    }
  }
  EXPECT_EQ(transposed_when_stored, 40);
}

class ImageExifOrientationData : public fttest::BuiltinPluginsTest {};

// torchtune's datasets on a JPEG of orientation 6 (100 x 25 pixels stored, 25 x 100 upright):
// stored in a record (The Cauldron's images beside a PNG of orientation 3; vqa_dataset's image as
// bytes or as the Image feature's path) datasets transposes it, a 4 x 1 tile grid; by path under
// image_dir (vqa_dataset over JSON) load_image does not, 1 x 4. Each sample's tokens, labels,
// tiles, grids and masks as torchtune's.
TEST_F(ImageExifOrientationData, StoredImagesAreTransposedAndImagesByPathAreNot) {
  const std::string dir = exif_dir();
  const std::string tokenizer =
      "[tokenizer]\n_component_ = \"torchtune.models.llama3_2_vision.llama3_2_vision_transform\"\npath = \"" +
      fttest::fixtures_dir() + "/torchtune_assets/tiktoken_small.model\"\nmax_seq_len = 256\nimage_size = 28\n\n";
  const std::vector<std::pair<std::string, std::string>> datasets{
      {"cauldron",
       "_component_ = \"torchtune.datasets.multimodal.the_cauldron_dataset\"\nsource = \"parquet\"\n"
       "data_files = \"" +
           dir + "/cauldron.parquet\"\n"},
      {"vqa_parquet",
       "_component_ = \"torchtune.datasets.multimodal.vqa_dataset\"\nsource = \"parquet\"\n"
       "data_files = \"" +
           dir + "/vqa.parquet\"\n"},
      {"vqa_parquet_path",
       "_component_ = \"torchtune.datasets.multimodal.vqa_dataset\"\nsource = \"parquet\"\n"
       "data_files = \"" +
           dir + "/vqa_path.parquet\"\n"},
      {"vqa_json",
       "_component_ = \"torchtune.datasets.multimodal.vqa_dataset\"\nsource = \"json\"\n"
       "data_files = \"" +
           dir + "/vqa.json\"\nimage_dir = \"" + dir + "/images\"\n"}};
  const std::map<std::string, std::vector<std::pair<std::int64_t, std::int64_t>>> grids{{"cauldron", {{4, 1}, {1, 2}}},
                                                                                        {"vqa_parquet", {{4, 1}}},
                                                                                        {"vqa_parquet_path", {{4, 1}}},
                                                                                        {"vqa_json", {{1, 4}}}};
  for (const auto& [name, table] : datasets) {
    SCOPED_TRACE(name);
    const ft::ConfigNode config = root(tokenizer + "[dataset]\n" + table);
    const std::shared_ptr<const ft::Tokenizer> tok = registry().instantiate<ft::Tokenizer>(config.table("tokenizer"));
    const auto dataset = registry().instantiate<ft::Dataset>(config.table("dataset"), {tok});
    ASSERT_EQ(dataset->size(), 1U);
    const ft::Sample sample = dataset->get(0);
    const std::string key = name + ".0";
    EXPECT_TRUE(at::tensor(sample.tokens).equal(references().tensor(key + ".tokens")));
    EXPECT_TRUE(at::tensor(sample.labels).equal(references().tensor(key + ".labels")));
    ASSERT_EQ(sample.images.size(), grids.at(name).size());
    for (std::size_t j = 0; j < sample.images.size(); ++j) {
      const std::string image = key + ".image." + std::to_string(j);
      EXPECT_EQ(std::make_pair(sample.images[j].rows, sample.images[j].columns), grids.at(name)[j]);
      const at::Tensor ratio = references().tensor(image + ".aspect_ratio");
      EXPECT_EQ(sample.images[j].rows, ratio[0].item<std::int64_t>());
      EXPECT_EQ(sample.images[j].columns, ratio[1].item<std::int64_t>());
      EXPECT_TRUE(sample.images[j].tiles.equal(references().tensor(image + ".tiles")));
      EXPECT_TRUE(sample.images[j].encoder_mask.equal(references().tensor(image + ".encoder_mask")));
    }
  }
}

}  // namespace
