#include "multimodal_message_transforms.h"

#include "message_transforms.h"

#include <ft/errors.h>

#include <boost/filesystem/path.hpp>

#include <utility>

namespace ft_ds {

namespace {

using nlohmann::json;

std::string text_of(const json& value, const std::string& where) {
  if (!value.is_string()) throw ft::Error(where + " must be text, got " + value.dump().substr(0, 80));
  return value.get<std::string>();
}

// An image as a record holds it: a path (string), or Hugging Face's Image feature {"bytes":
// ..., "path": ...} whose bytes, when present, are the file itself. torchtune's data path
// transposes the feature's images by their EXIF orientation (`datasets` decodes them:
// Image.decode_example calls exif_transpose, from the bytes or the path) and not a path given as
// text (its load_image is PIL.Image.open).
ImageSource image_of(const json& value, const ImageLocation& location, std::size_t index, const std::string& where) {
  ImageSource image;
  if (value.is_object()) image.orientation = ft_images::ExifOrientation::apply;
  if (value.is_object() && value.contains("bytes") && value["bytes"].is_binary()) {
    const auto& bytes = value["bytes"].get_binary();
    image.bytes.assign(bytes.begin(), bytes.end());
    image.name = where;
    return image;
  }
  const json& path = value.is_object() && value.contains("path") ? value["path"] : value;
  if (!path.is_string())
    throw ft::Error(where + " must be an image path or an image's bytes, got " + value.dump().substr(0, 80));
  const std::string relative = path.get<std::string>();
  image.path = location.image_dir ? image_path_inside(*location.image_dir, relative, index) : relative;
  image.name = image.path;
  return image;
}

// What torchtune's format_content_with_images makes of a text with image tags: the tags
// removed, an image offset where each stood.
ft::Message with_images_at_tags(std::string role, const std::string& text, const std::string& tag, std::size_t images,
                                std::size_t record) {
  ft::Message m{std::move(role), {}};
  std::size_t start = 0, found = 0;
  while ((found = text.find(tag, start)) != std::string::npos) {
    m.content += text.substr(start, found - start);
    m.image_offsets.push_back(m.content.size());
    start = found + tag.size();
  }
  m.content += text.substr(start);
  if (m.image_offsets.size() != images)
    throw ft::Error(record_name(record) + ": the first user message has " + std::to_string(m.image_offsets.size()) +
                    " image tag(s) \"" + tag + "\" for " + std::to_string(images) + " image(s)");
  return m;
}

class ShareGptWithImage final : public MultimodalMessageTransform {
 public:
  ShareGptWithImage(std::string conversations, std::string image, std::optional<std::string> tag,
                    ImageLocation location, std::optional<std::string> system)
      : conversations_(std::move(conversations)),
        image_(std::move(image)),
        tag_(std::move(tag)),
        location_(std::move(location)),
        system_(std::move(system)) {}

  MultimodalRecord operator()(const json& record, std::size_t index) const override {
    const json& turns = record_column(record, conversations_, index);
    if (!turns.is_array())
      throw ft::Error(record_name(index) + ": column \"" + conversations_ + "\" is not a list of turns");
    MultimodalRecord out;
    if (record.contains(image_) && !record[image_].is_null())
      out.images.push_back(
          image_of(record[image_], location_, index, record_name(index) + ": column \"" + image_ + "\""));
    if (system_) out.messages.emplace_back("system", *system_, true);
    bool placed = out.images.empty();
    for (std::size_t i = 0; i < turns.size(); ++i) {
      const auto where = record_name(index) + ": " + conversations_ + "[" + std::to_string(i) + "]";
      const json& turn = turns[i];
      if (!turn.is_object() || !turn.contains("from") || !turn.contains("value") || !turn["from"].is_string() ||
          !turn["value"].is_string())
        throw ft::Error(where + ": expected {\"from\": ..., \"value\": ...} (ShareGPT style)");
      const std::string from = turn["from"].get<std::string>();
      const std::string role = from == "system"  ? "system"
                               : from == "human" ? "user"
                               : from == "gpt"   ? "assistant"
                                                 : "";
      if (role.empty()) throw ft::Error(where + ": unknown \"from\": \"" + from + "\" (expected system, human or gpt)");
      if (role == "system" && system_) continue;
      ft::Message m{role, turn["value"].get<std::string>()};
      if (role == "user" && !placed) {
        if (tag_)
          m = with_images_at_tags(role, m.content, *tag_, out.images.size(), index);
        else
          m.image_offsets = {0};
        placed = true;
      }
      // torchtune masks every non-assistant message of these datasets (train_on_input is false).
      m.masked = role != "assistant";
      out.messages.push_back(std::move(m));
    }
    if (!placed) throw ft::Error(record_name(index) + " has an image and no user message to put it in");
    return out;
  }

 private:
  std::string conversations_, image_;
  std::optional<std::string> tag_;
  ImageLocation location_;
  std::optional<std::string> system_;
};

class TheCauldron final : public MultimodalMessageTransform {
 public:
  TheCauldron(std::string texts, std::string images, std::optional<std::string> system)
      : texts_(std::move(texts)), images_(std::move(images)), system_(std::move(system)) {}

  MultimodalRecord operator()(const json& record, std::size_t index) const override {
    const json& images = record_column(record, images_, index);
    const json& texts = record_column(record, texts_, index);
    if (!images.is_array())
      throw ft::Error(record_name(index) + ": column \"" + images_ + "\" is not a list of images");
    if (!texts.is_array()) throw ft::Error(record_name(index) + ": column \"" + texts_ + "\" is not a list of turns");
    MultimodalRecord out;
    for (std::size_t i = 0; i < images.size(); ++i)
      out.images.push_back(
          image_of(images[i], {}, index, record_name(index) + ": " + images_ + "[" + std::to_string(i) + "]"));
    if (system_) out.messages.emplace_back("system", *system_, true);
    for (std::size_t i = 0; i < texts.size(); ++i) {
      const auto where = record_name(index) + ": " + texts_ + "[" + std::to_string(i) + "]";
      if (!texts[i].is_object() || !texts[i].contains("user") || !texts[i].contains("assistant"))
        throw ft::Error(where + ": expected {\"user\": ..., \"assistant\": ...}");
      ft::Message user{"user", text_of(texts[i]["user"], where + ".user"), true};
      // Every image before the first turn's text.
      if (i == 0) user.image_offsets.assign(out.images.size(), 0);
      out.messages.push_back(std::move(user));
      out.messages.emplace_back("assistant", text_of(texts[i]["assistant"], where + ".assistant"));
    }
    if (texts.empty() && !out.images.empty())
      throw ft::Error(record_name(index) + " has images and no turn to put them in");
    return out;
  }

 private:
  std::string texts_, images_;
  std::optional<std::string> system_;
};

class InputOutputWithImage final : public MultimodalMessageTransform {
 public:
  InputOutputWithImage(std::string input, std::string output, std::string image, ImageLocation location,
                       std::optional<std::string> system)
      : input_(std::move(input)),
        output_(std::move(output)),
        image_(std::move(image)),
        location_(std::move(location)),
        system_(std::move(system)) {}

  MultimodalRecord operator()(const json& record, std::size_t index) const override {
    MultimodalRecord out;
    if (system_) out.messages.emplace_back("system", *system_, true);
    ft::Message user{"user", text_of(record_column(record, input_, index), record_name(index) + ": " + input_), true};
    if (record.contains(image_) && !record[image_].is_null()) {
      out.images.push_back(
          image_of(record[image_], location_, index, record_name(index) + ": column \"" + image_ + "\""));
      user.image_offsets = {0};
    }
    out.messages.push_back(std::move(user));
    out.messages.emplace_back("assistant",
                              text_of(record_column(record, output_, index), record_name(index) + ": " + output_));
    return out;
  }

 private:
  std::string input_, output_, image_;
  ImageLocation location_;
  std::optional<std::string> system_;
};

}  // namespace

std::string image_path_inside(const std::string& image_dir, const std::string& relative, std::size_t record) {
  const boost::filesystem::path path(relative);
  if (relative.empty() || path.is_absolute())
    throw ft::Error(record_name(record) + ": the image path \"" + relative + "\" must be relative to image_dir (\"" +
                    image_dir + "\")");
  int depth = 0;
  for (const auto& part : path) {
    if (part == "..") {
      if (--depth < 0)
        throw ft::Error(record_name(record) + ": the image path \"" + relative + "\" leads outside image_dir (\"" +
                        image_dir + "\")");
    } else if (part != "." && !part.empty()) {
      ++depth;
    }
  }
  return (boost::filesystem::path(image_dir) / path).string();
}

std::unique_ptr<MultimodalMessageTransform> sharegpt_with_image(std::string conversations_column,
                                                                std::string image_column,
                                                                std::optional<std::string> image_tag,
                                                                ImageLocation images,
                                                                std::optional<std::string> new_system_prompt) {
  return std::make_unique<ShareGptWithImage>(std::move(conversations_column), std::move(image_column),
                                             std::move(image_tag), std::move(images), std::move(new_system_prompt));
}

std::unique_ptr<MultimodalMessageTransform> the_cauldron(std::string texts_column, std::string images_column,
                                                         std::optional<std::string> new_system_prompt) {
  return std::make_unique<TheCauldron>(std::move(texts_column), std::move(images_column), std::move(new_system_prompt));
}

std::unique_ptr<MultimodalMessageTransform> input_output_with_image(std::string input_column, std::string output_column,
                                                                    std::string image_column, ImageLocation images,
                                                                    std::optional<std::string> new_system_prompt) {
  return std::make_unique<InputOutputWithImage>(std::move(input_column), std::move(output_column),
                                                std::move(image_column), std::move(images),
                                                std::move(new_system_prompt));
}

}  // namespace ft_ds
