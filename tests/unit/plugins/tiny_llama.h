// The smallest Llama 3 config the model and loss tests build: one layer, grouped-query attention
// (4 query heads over 2 key/value heads), a 64-token vocabulary and 16 positions.
#pragma once

namespace fttest {

inline const char* const kTinyLlamaConfig = R"(
[model]
_component_ = "torchtune.models.llama3.llama3"
vocab_size = 64
num_layers = 1
num_heads = 4
num_kv_heads = 2
embed_dim = 32
max_seq_len = 16
)";

}  // namespace fttest
