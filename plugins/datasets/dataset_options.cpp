#include "dataset_options.h"

#include "packed_dataset.h"

namespace ft_ds {

void add_source_keys(ft::Schema& s, const std::string& default_source) {
  if (default_source.empty())
    s.required("source", ft::ValueType::String, "local .json/.jsonl/.txt file, or \"json\"/\"text\" with data_files");
  else
    s.optional("source", ft::ValueType::String, "\"" + default_source + "\"",
               "local .json/.jsonl/.txt file, or \"json\"/\"text\" with data_files (Hub names are refused)");
  s.optional("data_files", ft::ValueType::Any, "", "file (or list of files) read when source is \"json\" or \"text\"")
      .optional("split", ft::ValueType::String, "\"train\"",
                "slice of the records: train, train[:95%], train[95%:], train[10:200]")
      .optional("filter_fn", ft::ValueType::String, "", "not supported (Python callables); filter the file beforehand");
}

void add_packing_keys(ft::Schema& s) {
  s.optional("packed", ft::ValueType::Bool, "false",
             "pack samples into the tokenizer's max_seq_len (collated by torchtune.data.padded_collate_packed)");
}

std::unique_ptr<ft::Dataset> maybe_pack(std::unique_ptr<ft::Dataset> dataset, const ft::ConfigNode& cfg,
                                        const ft::Tokenizer& tokenizer, bool split_across_pack) {
  if (!cfg.get<bool>("packed")) return dataset;
  if (tokenizer.max_seq_len() <= 0)
    cfg.fail("packed", "packing needs a max_seq_len: set max_seq_len in the [tokenizer] table");
  PackOptions o;
  o.max_seq_len = tokenizer.max_seq_len();
  o.split_across_pack = split_across_pack;
  return std::make_unique<PackedDataset>(*dataset, o);
}

}  // namespace ft_ds
