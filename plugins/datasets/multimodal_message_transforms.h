// torchtune's message transforms of its multimodal datasets: one record -> a conversation whose
// messages mark where images sit (ft::Message::image_offsets), and the images themselves, by path
// or as bytes stored in the record.
#pragma once

#include <ft/tokenizer.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "image_decoding.h"

namespace ft_ds {

// One image of a record: a file, or the encoded bytes a Parquet / Arrow record holds
// (Hugging Face's Image feature: {"bytes": ..., "path": ...}).
struct ImageSource {
  std::string path;                 // empty when the bytes are given
  std::vector<std::uint8_t> bytes;  // the encoded file
  std::string name;                 // for errors: the path, or the record's name for the image
  // An image in the Image feature's layout ({"bytes", "path"}) is one `datasets` decodes, applying
  // its EXIF orientation; a path given as text is one torchtune opens with load_image, which
  // does not.
  ft_images::ExifOrientation orientation = ft_images::ExifOrientation::ignore;
};

struct MultimodalRecord {
  std::vector<ft::Message> messages;
  std::vector<ImageSource> images;  // in the order of the messages' image offsets
};

class MultimodalMessageTransform {
 public:
  virtual ~MultimodalMessageTransform() = default;
  virtual MultimodalRecord operator()(const nlohmann::json& record, std::size_t index) const = 0;
};

// Where image paths are found: relative to `image_dir`, and never outside it; without an
// image_dir, as given (torchtune's vqa_dataset).
struct ImageLocation {
  std::optional<std::string> image_dir;
};

// ShareGPT conversations with the record's one image in the first user message, at each `tag`
// or, without one, before its text (multimodal_chat_dataset, llava_instruct_dataset).
std::unique_ptr<MultimodalMessageTransform> sharegpt_with_image(std::string conversations_column,
                                                                std::string image_column,
                                                                std::optional<std::string> image_tag,
                                                                ImageLocation images,
                                                                std::optional<std::string> new_system_prompt);
// The Cauldron: every image before the first user turn's text; "texts" holds {user, assistant}
// turns (the_cauldron_dataset).
std::unique_ptr<MultimodalMessageTransform> the_cauldron(std::string texts_column, std::string images_column,
                                                         std::optional<std::string> new_system_prompt);
// A question (`input`) about an image, answered by `output` (vqa_dataset).
std::unique_ptr<MultimodalMessageTransform> input_output_with_image(std::string input_column, std::string output_column,
                                                                    std::string image_column, ImageLocation images,
                                                                    std::optional<std::string> new_system_prompt);

// `image_dir` / `relative`, refused when `relative` is absolute or leads outside `image_dir`.
std::string image_path_inside(const std::string& image_dir, const std::string& relative, std::size_t record);

}  // namespace ft_ds
