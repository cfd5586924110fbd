// The architectures of torchtune's named model builders (torchtune.models.<family>.<size>(), no
// arguments) as data: the plugin registers one builder per entry, and the tests count each
// entry's parameters from its shapes without allocating billions of weights.
#pragma once

#include "decoder_config.h"

#include <string>
#include <vector>

namespace ft_llama {

struct NamedModelSize {
  std::string component;  // the `_component_` name, e.g. "torchtune.models.llama3.llama3_8b"
  std::string summary;    // one line for `fthost ls model -v`
  DecoderConfig config;
};

const std::vector<NamedModelSize>& named_model_sizes();

}  // namespace ft_llama
