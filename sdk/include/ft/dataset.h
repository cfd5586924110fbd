// Dataset interface (`torchtune.datasets.*`): random access to samples, as a map-style
// torch Dataset. Text datasets get the run's tokenizer; pre-tokenized ones ignore it.
#pragma once

#include <ft/kind.h>
#include <ft/sample.h>
#include <ft/tokenizer.h>

#include <cstddef>
#include <memory>

namespace ft {

class Dataset {
 public:
  static constexpr Kind kind = Kind::Dataset;
  struct Args {
    std::shared_ptr<const Tokenizer> tokenizer;  // null when the run configures none
  };

  virtual ~Dataset() = default;
  virtual std::size_t size() const = 0;
  // Throws ft::Error naming the source and index when the sample is malformed.
  virtual Sample get(std::size_t index) const = 0;
};

}  // namespace ft
