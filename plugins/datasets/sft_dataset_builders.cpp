// torchtune's named builders of instruction and chat datasets: instruct_dataset, alpaca_dataset,
// alpaca_cleaned_dataset and chat_dataset. Each reads its config keys and builds an SftDataset
// (sft_dataset.h) over its message transform, packed when asked.
#include <ft/errors.h>

#include "data_source.h"
#include "dataset_components.h"
#include "dataset_options.h"
#include "sft_dataset.h"

namespace ft_ds {

namespace {

using ft::ValueType;

void add_masking_keys(ft::Schema& s, bool train_on_input_default) {
  s.optional("train_on_input", ValueType::Bool, train_on_input_default ? "true" : "false",
             "train on the prompt too (false: its labels are -100)")
      .optional("masking_strategy", ValueType::String, "",
                "train_on_all, train_on_assistant or train_on_last (overrides train_on_input)");
}

void refuse_filter_fn(const ft::ConfigNode& cfg) {
  if (cfg.has("filter_fn"))
    cfg.fail("filter_fn", "Python filter functions are not supported; filter the data file beforehand");
}

std::unique_ptr<ft::Dataset> make_sft(const ft::ConfigNode& cfg, const ft::Dataset::Args& args, const std::string& name,
                                      const std::function<std::unique_ptr<MessageTransform>()>& transform) {
  refuse_filter_fn(cfg);
  auto tokenizer = require_tokenizer(args, name);
  const SourceSpec spec = source_spec(cfg);
  auto records = load_records(spec);
  auto ds = with_source_in_errors(
      spec, [&] { return std::make_unique<SftDataset>(std::move(records), transform(), tokenizer); });
  return maybe_pack(std::move(ds), cfg, *tokenizer, false);
}

std::optional<std::string> system_prompt(const ft::ConfigNode& cfg) {
  return cfg.get_optional<std::string>("new_system_prompt");
}

void register_alpaca(ft::Registry& reg, const std::string& name, const std::string& default_source) {
  ft::Schema s;
  add_source_keys(s, default_source);
  add_masking_keys(s, true);
  add_packing_keys(s);
  s.optional("column_map", ValueType::Table, "",
             "columns for instruction, input, output, e.g. {output = \"response\"}");
  reg.add<ft::Dataset>(name, std::move(s), "Alpaca instruction data with torchtune's Alpaca prompt",
                       [name](const ft::ConfigNode& cfg, ft::Dataset::Args args) {
                         auto columns = column_map(cfg);
                         for (const auto& [k, v] : columns)
                           if (k != "instruction" && k != "input" && k != "output")
                             cfg.fail("column_map",
                                      "unknown field \"" + k + "\" (expected instruction, input, output)");
                         const auto strategy = masking_strategy(cfg, MaskingStrategy::TrainOnAll);
                         return make_sft(cfg, args, name, [&] { return alpaca_to_messages(columns, strategy); });
                       });
}

}  // namespace

void register_sft_dataset_builders(ft::Registry& reg) {
  register_alpaca(reg, "torchtune.datasets.alpaca_dataset", "tatsu-lab/alpaca");
  register_alpaca(reg, "torchtune.datasets.alpaca_cleaned_dataset", "yahma/alpaca-cleaned");
  {
    ft::Schema s;
    add_source_keys(s, "");
    add_masking_keys(s, false);
    add_packing_keys(s);
    s.optional("column_map", ValueType::Table, "",
               "columns for input and output, e.g. {input = \"question\", output = \"answer\"}")
        .optional("new_system_prompt", ValueType::String, "", "system message put first in every sample (masked)");
    const std::string name = "torchtune.datasets.instruct_dataset";
    reg.add<ft::Dataset>(name, std::move(s), "one-turn input -> output data rendered in the model's chat format",
                         [name](const ft::ConfigNode& cfg, ft::Dataset::Args args) {
                           auto columns = column_map(cfg);
                           if (!columns.empty())
                             for (const char* need : {"input", "output"})
                               if (!columns.count(need))
                                 cfg.fail("column_map", std::string("expected a key \"") + need + "\" in column_map");
                           const auto strategy = masking_strategy(cfg, MaskingStrategy::TrainOnAssistant);
                           return make_sft(cfg, args, name, [&] {
                             return input_output_to_messages(columns, system_prompt(cfg), strategy);
                           });
                         });
  }
  {
    ft::Schema s;
    add_source_keys(s, "");
    add_masking_keys(s, false);
    add_packing_keys(s);
    s.required("conversation_column", ValueType::String,
               "column holding the conversation (\"conversations\", \"messages\")")
        .required("conversation_style", ValueType::String, "sharegpt (from/value) or openai (role/content)")
        .optional("new_system_prompt", ValueType::String, "", "system message replacing any in the data (masked)");
    const std::string name = "torchtune.datasets.chat_dataset";
    reg.add<ft::Dataset>(name, std::move(s), "multi-turn conversations rendered in the model's chat format",
                         [name](const ft::ConfigNode& cfg, ft::Dataset::Args args) {
                           const auto style = cfg.get<std::string>("conversation_style");
                           const auto column = cfg.get<std::string>("conversation_column");
                           const auto strategy = masking_strategy(cfg, MaskingStrategy::TrainOnAssistant);
                           if (style != "sharegpt" && style != "openai")
                             cfg.fail("conversation_style",
                                      "expected \"sharegpt\" or \"openai\", got \"" + style + "\"");
                           return make_sft(cfg, args, name, [&] {
                             return style == "sharegpt" ? sharegpt_to_messages(column, system_prompt(cfg), strategy)
                                                        : openai_to_messages(column, system_prompt(cfg), strategy);
                           });
                         });
  }
}

}  // namespace ft_ds
