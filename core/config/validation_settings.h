// The validation keys of a run (torchtune's dataset_val, batch_size_val, run_val_every_n_steps),
// read once, here, with torchtune's recipe's rules; core/validation_loop.h runs the validation.
#pragma once

#include <ft/config.h>

#include <cstdint>
#include <optional>

namespace fthost {

// The validation keys of a run, checked against each other as torchtune's recipe checks them.
struct ValidationSettings {
  bool has_dataset = false;                   // dataset_val is configured (then it is built)
  std::optional<std::int64_t> every_n_steps;  // run_val_every_n_steps; unset: validation never runs
  std::int64_t batch_size = 1;                // batch_size_val, torchtune's default: batch_size
};

// Throws ft::ConfigError naming the key: run_val_every_n_steps without dataset_val (torchtune
// asserts), a non-positive value, or a dataset_val whose packing differs from the dataset's.
ValidationSettings read_validation_settings(const ft::ConfigNode& root, std::int64_t batch_size);

}  // namespace fthost
