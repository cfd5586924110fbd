// The run configuration as the loggers' formats want it: JSON per top-level key (W&B config
// items) and flat dotted leaves (TensorBoard hyperparameters). ConfigNode has no type query,
// so each value is read as the first type that accepts it.
#pragma once

#include "tensorboard_events.h"

#include <ft/config.h>

#include <string>
#include <utility>
#include <vector>

namespace ft_loggers {

// (key, JSON text of its value) for every key of `table`, in file order; sub-tables become objects.
std::vector<std::pair<std::string, std::string>> config_items_as_json(const ft::ConfigNode& table);

// Every scalar leaf under `table` as `dotted.key = value`; integers become numbers and arrays
// their JSON text, since the HParams tab takes numbers, bools and strings only.
std::vector<HParam> config_leaves_as_hparams(const ft::ConfigNode& table);

// Every leaf under `table` as (dotted.key, Python's str() of its value): torchtune's flatten_dict
// of the resolved config, as its MLflow logger logs the parameters. Arrays stay whole ("[1, 2]",
// "['a', 'b']"), arrays of tables as lists of dicts.
std::vector<std::pair<std::string, std::string>> config_leaves_as_python_str(const ft::ConfigNode& table);

// Every leaf under `table` as (keys joined by `separator`, JSON text of its value): comet_ml's
// flattening of nested parameters ("|"). Arrays stay whole, arrays of tables as arrays of objects.
std::vector<std::pair<std::string, std::string>> config_leaves_as_json(const ft::ConfigNode& table,
                                                                       const std::string& separator);

}  // namespace ft_loggers
