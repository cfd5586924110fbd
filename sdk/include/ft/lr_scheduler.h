// Learning-rate scheduler interface. Factory arguments, as in torchtune's recipe: the optimizer,
// the total number of optimizer steps, and the last step already taken (-1 for a fresh run).
#pragma once

#include <ft/kind.h>
#include <ft/optimizer.h>

#include <cstdint>

namespace ft {

class LRScheduler {
 public:
  static constexpr Kind kind = Kind::LRScheduler;
  struct Args {
    Optimizer* optimizer = nullptr;
    std::int64_t num_training_steps = 0;
    std::int64_t last_epoch = -1;
  };

  virtual ~LRScheduler() = default;
  // Advances one optimizer step and writes the new learning rate into the optimizer.
  virtual void step() = 0;
  virtual double lr() const = 0;
  virtual std::int64_t last_epoch() const = 0;
};

}  // namespace ft
