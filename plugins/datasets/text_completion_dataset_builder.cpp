// The builder of torchtune.datasets.text_completion_dataset: reads its config keys and builds a
// TextCompletionDataset (text_completion_dataset.h), packed when asked.
#include "data_source.h"
#include "dataset_components.h"
#include "dataset_options.h"
#include "sft_dataset.h"
#include "text_completion_dataset.h"

namespace ft_ds {

void register_text_completion_dataset(ft::Registry& reg) {
  using ft::ValueType;
  ft::Schema s;
  add_source_keys(s, "");
  add_packing_keys(s);
  s.optional("column", ValueType::String, "\"text\"", "column holding the text (text files: \"text\")")
      .optional("add_eos", ValueType::Bool, "true", "end every document with EOS")
      .optional("split_across_pack", ValueType::Bool, "true", "packed: a document may continue in the next pack")
      .optional("sample_by", ValueType::String, "\"line\"",
                "text files: one record per line, paragraph (blank-line separated) or document");
  const std::string name = "torchtune.datasets.text_completion_dataset";
  reg.add<ft::Dataset>(
      name, std::move(s), "plain text for continued pre-training; long documents split into max_seq_len chunks",
      [name](const ft::ConfigNode& cfg, ft::Dataset::Args args) {
        if (cfg.has("filter_fn"))
          cfg.fail("filter_fn", "Python filter functions are not supported; filter the data file beforehand");
        auto tokenizer = require_tokenizer(args, name);
        const SourceSpec spec = source_spec(cfg);
        auto records = load_records(spec);
        std::unique_ptr<ft::Dataset> ds = with_source_in_errors(spec, [&] {
          return std::make_unique<TextCompletionDataset>(*records, cfg.get<std::string>("column"),
                                                         cfg.get<bool>("add_eos"), *tokenizer);
        });
        records.reset();  // the text is tokenized: only the ids stay
        return maybe_pack(std::move(ds), cfg, *tokenizer, cfg.get<bool>("split_across_pack"));
      });
}

}  // namespace ft_ds
