#include "train/data_pipeline.h"

#include "train/concat_dataset.h"

#include <utility>
#include <vector>

namespace fthost {

std::shared_ptr<ft::Tokenizer> build_tokenizer(const ft::Registry& registry, const ft::ConfigNode& root) {
  if (!root.is_table("tokenizer")) return nullptr;
  return registry.instantiate<ft::Tokenizer>(root.table("tokenizer"));
}

std::shared_ptr<ft::Dataset> build_dataset(const ft::Registry& registry, const ft::ConfigNode& root,
                                           const std::shared_ptr<const ft::Tokenizer>& tokenizer, const char* key) {
  std::vector<std::shared_ptr<ft::Dataset>> datasets;
  for (const auto& table : root.table_list(key))
    datasets.push_back(registry.instantiate<ft::Dataset>(table, {tokenizer}));
  return datasets.size() == 1 ? datasets[0] : std::make_shared<ConcatDataset>(std::move(datasets));
}

std::shared_ptr<ft::Collate> build_collate(const ft::Registry& registry, const ft::ConfigNode& root,
                                           const ft::Tokenizer* tokenizer, std::int64_t ignore_index,
                                           std::int64_t pad_to_multiple_of) {
  // Without a tokenizer (pre-tokenized data) pad with 0: padded positions are ignored by the
  // loss and, being at the end, are never attended to by real tokens under the causal mask.
  const std::int64_t pad_id = tokenizer ? tokenizer->pad_id() : 0;
  return registry.instantiate<ft::Collate>(root.table("collate"), {pad_id, ignore_index, pad_to_multiple_of});
}

}  // namespace fthost
