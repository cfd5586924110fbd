#include "train/concat_dataset.h"

#include <ft/errors.h>

#include <algorithm>

namespace fthost {

ConcatDataset::ConcatDataset(std::vector<std::shared_ptr<ft::Dataset>> parts) : parts_(std::move(parts)) {
  offsets_.push_back(0);
  for (const auto& p : parts_) offsets_.push_back(offsets_.back() + p->size());
}

ft::Sample ConcatDataset::get(std::size_t index) const {
  if (index >= size())
    throw ft::Error("ConcatDataset: index " + std::to_string(index) + " out of range (" + std::to_string(size()) +
                    " samples)");
  const auto it = std::upper_bound(offsets_.begin(), offsets_.end(), index);
  const auto part = static_cast<std::size_t>(it - offsets_.begin()) - 1;
  return parts_[part]->get(index - offsets_[part]);
}

}  // namespace fthost
