// torchtune's multimodal dataset builders: multimodal_chat_dataset and llava_instruct_dataset,
// each a MultimodalChatDataset (multimodal_chat_dataset.h) over its records.
#include <ft/errors.h>

#include <algorithm>

#include "data_source.h"
#include "dataset_components.h"
#include "dataset_options.h"
#include "message_transforms.h"
#include "multimodal_message_transforms.h"
#include "multimodal_sft_dataset.h"
#include "sft_dataset.h"

namespace ft_ds {

namespace {

using ft::ValueType;

void refuse_unsupported(const ft::ConfigNode& cfg) {
  if (cfg.has("filter_fn"))
    cfg.fail("filter_fn", "Python filter functions are not supported; filter the data file beforehand");
  if (cfg.get<bool>("packed", false)) cfg.fail("packed", "multimodal datasets are not packed (torchtune packs none)");
}

void add_common_keys(ft::Schema& s, const std::string& columns_help) {
  s.optional("column_map", ValueType::Table, "", columns_help)
      .optional("new_system_prompt", ValueType::String, "", "system message replacing any in the data (masked)")
      .optional("packed", ValueType::Bool, "false", "must be false: torchtune packs no multimodal dataset");
}

// column_map's columns for `fields`, each defaulting to its own name; any other field is refused.
std::vector<std::string> columns_of(const ft::ConfigNode& cfg, const std::vector<std::string>& fields) {
  const ColumnMap map = column_map(cfg);
  for (const auto& [field, column] : map)
    if (std::find(fields.begin(), fields.end(), field) == fields.end()) {
      std::string expected;
      for (const auto& f : fields) expected += (expected.empty() ? "" : ", ") + f;
      cfg.fail("column_map", "unknown field \"" + field + "\" (expected " + expected + ")");
    }
  std::vector<std::string> out;
  for (const auto& f : fields) out.push_back(map.count(f) ? map.at(f) : f);
  return out;
}

std::unique_ptr<ft::Dataset> make_multimodal(const ft::ConfigNode& cfg, const ft::Dataset::Args& args,
                                             const std::string& name,
                                             std::unique_ptr<MultimodalMessageTransform> transform,
                                             const std::string& default_data_file = "") {
  auto tokenizer = require_tokenizer(args, name);
  SourceSpec spec = source_spec(cfg);
  if (!cfg.has("data_files") && !default_data_file.empty()) spec.data_files = {default_data_file};
  auto records = load_records(spec);
  return with_source_in_errors(spec, [&] {
    return std::make_unique<MultimodalSftDataset>(std::move(records), std::move(transform), tokenizer);
  });
}

}  // namespace

void register_multimodal_dataset_builders(ft::Registry& reg) {
  const auto image_dir_key = [](ft::Schema& s, const std::string& fallback) {
    if (fallback.empty())
      s.required("image_dir", ValueType::String, "directory the records' image paths are relative to");
    else
      s.optional("image_dir", ValueType::String, "\"" + fallback + "\"",
                 "directory the records' image paths are relative to");
    s.path("image_dir", ft::PathRole::InputDirectory);
  };
  {
    ft::Schema s;
    add_source_keys(s, "");
    add_common_keys(s, "columns for the conversation and the image, e.g. {conversations = \"dialogue\"}");
    image_dir_key(s, "");
    s.optional("image_tag", ValueType::String, "",
               "placeholder in the first user message where the image goes; left out: before its text");
    const std::string name = "torchtune.datasets.multimodal.multimodal_chat_dataset";
    reg.add<ft::Dataset>(
        name, std::move(s), "ShareGPT conversations with an image (a path under image_dir) in the first user message",
        [name](const ft::ConfigNode& cfg, ft::Dataset::Args args) {
          refuse_unsupported(cfg);
          const auto columns = columns_of(cfg, {"conversations", "image"});
          return make_multimodal(cfg, args, name,
                                 sharegpt_with_image(columns[0], columns[1], cfg.get_optional<std::string>("image_tag"),
                                                     {cfg.get<std::string>("image_dir")},
                                                     cfg.get_optional<std::string>("new_system_prompt")));
        });
  }
  {
    ft::Schema s;
    add_source_keys(s, "liuhaotian/LLaVA-Instruct-150K");
    add_common_keys(s, "columns for the conversation and the image");
    image_dir_key(s, "coco/train2017/");
    const std::string name = "torchtune.datasets.multimodal.llava_instruct_dataset";
    reg.add<ft::Dataset>(
        name, std::move(s), "LLaVA-Instruct-150K: COCO images under image_dir, conversations with an <image> tag",
        [name](const ft::ConfigNode& cfg, ft::Dataset::Args args) {
          refuse_unsupported(cfg);
          const auto columns = columns_of(cfg, {"conversations", "image"});
          // torchtune's default data_files: the file in the Hub dataset.
          return make_multimodal(
              cfg, args, name,
              sharegpt_with_image(columns[0], columns[1], std::string("<image>"), {cfg.get<std::string>("image_dir")},
                                  cfg.get_optional<std::string>("new_system_prompt")),
              "llava_instruct_150k.json");
        });
  }
  {
    ft::Schema s;
    add_source_keys(s, "HuggingFaceM4/the_cauldron");
    add_common_keys(s, "columns for the turns and the images: both or neither, e.g. {texts = \"t\", images = \"i\"}");
    s.optional("subset", ValueType::String, "\"ocrvqa\"",
               "the Cauldron's subset: its folder in the Hub dataset (ai2d, ocrvqa, ...)");
    const std::string name = "torchtune.datasets.multimodal.the_cauldron_dataset";
    reg.add<ft::Dataset>(
        name, std::move(s),
        "The Cauldron: images stored in the records, before the first user turn; user/assistant turns",
        [name](const ft::ConfigNode& cfg, ft::Dataset::Args args) {
          refuse_unsupported(cfg);
          const ColumnMap map = column_map(cfg);
          if (!map.empty() && (!map.count("texts") || !map.count("images")))
            cfg.fail("column_map", "must map both \"texts\" and \"images\" when given (as torchtune's)");
          const auto columns = columns_of(cfg, {"texts", "images"});
          return make_multimodal(
              cfg, args, name, the_cauldron(columns[0], columns[1], cfg.get_optional<std::string>("new_system_prompt")),
              // The subset's folder in the Hub dataset's snapshot.
              cfg.has("data_files") ? "" : cfg.get<std::string>("subset", "ocrvqa") + "/*.parquet");
        });
  }
  {
    ft::Schema s;
    add_source_keys(s, "");
    add_common_keys(s, "columns for the question, the answer and the image, e.g. {input = \"question\"}");
    s.optional(
         "image_dir", ValueType::String, "",
         "directory image paths are relative to; left out: paths as given (images stored in the records need none)")
        .path("image_dir", ft::PathRole::InputDirectory);
    const std::string name = "torchtune.datasets.multimodal.vqa_dataset";
    reg.add<ft::Dataset>(
        name, std::move(s), "visual questions: a question about an image, and its answer",
        [name](const ft::ConfigNode& cfg, ft::Dataset::Args args) {
          refuse_unsupported(cfg);
          const auto columns = columns_of(cfg, {"input", "output", "image"});
          return make_multimodal(
              cfg, args, name,
              input_output_with_image(columns[0], columns[1], columns[2], {cfg.get_optional<std::string>("image_dir")},
                                      cfg.get_optional<std::string>("new_system_prompt")));
        });
  }
}

}  // namespace ft_ds
