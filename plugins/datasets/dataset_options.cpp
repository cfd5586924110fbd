#include "dataset_options.h"

#include "packed_dataset.h"

namespace ft_ds {

void add_source_keys(ft::Schema& s, const std::string& default_source) {
  const std::string what =
      "local file or directory (json, jsonl, txt, csv, parquet, arrow; a save_to_disk directory), a format name "
      "(json, text, csv, parquet, arrow) with data_files, or a Hugging Face Hub dataset in the local cache";
  if (default_source.empty())
    s.required("source", ft::ValueType::String, what);
  else
    s.optional("source", ft::ValueType::String, "\"" + default_source + "\"", what);
  s.optional("data_files", ft::ValueType::Any, "",
             "with a format name in source: a file, a list of files, a directory or a glob; with a Hub dataset: "
             "its own files, relative to it")
      .optional("split", ft::ValueType::String, "\"train\"",
                "split and slice of the records: train, test, train[:95%], train[95%:], train[10:200]")
      .optional("revision", ft::ValueType::String, "\"main\"",
                "a Hub dataset's branch, tag or commit in the local cache")
      .optional("streaming", ft::ValueType::Bool, "false",
                "read each record from its file when it is drawn (JSON Lines, Parquet, Arrow, CSV), keeping only "
                "where it is in memory")
      .optional("filter_fn", ft::ValueType::String, "", "not supported (Python callables); filter the file beforehand")
      .path("source", ft::PathRole::DatasetSource);
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
