// torchtune.datasets.ConcatDataset: a `[[dataset]]` list read as one dataset, the samples of
// each in turn (the seed recipe builds it whenever `dataset` is a list).
#pragma once

#include <ft/dataset.h>

#include <memory>
#include <vector>

namespace fthost {

class ConcatDataset final : public ft::Dataset {
 public:
  explicit ConcatDataset(std::vector<std::shared_ptr<ft::Dataset>> parts);
  std::size_t size() const override { return offsets_.back(); }
  ft::Sample get(std::size_t index) const override;

 private:
  std::vector<std::shared_ptr<ft::Dataset>> parts_;
  std::vector<std::size_t> offsets_;  // offsets_[i]: first index of parts_[i]; last: the total
};

}  // namespace fthost
