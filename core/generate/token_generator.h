// Autoregressive generation with any ft::Model: the prompt is fed once (prefill), then one token
// per step. With the model's KV cache a step runs the new token only; without it (a model with
// no cache, or to check the cache) each step recomputes the whole sequence.
#pragma once

#include "generate/token_sampler.h"

#include <ft/model.h>
#include <ft/model_kv_cache.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace fthost {

// The logits of the next position as the model runs, one sequence at a time.
class NextTokenLogits {
 public:
  // Sets up the model's caches for sequences of up to `max_seq_len` tokens when `use_kv_cache`
  // (throws ft::Error when the model has none); removes them again on destruction.
  NextTokenLogits(ft::Model& model, bool use_kv_cache, std::int64_t max_seq_len);
  ~NextTokenLogits();
  NextTokenLogits(const NextTokenLogits&) = delete;
  NextTokenLogits& operator=(const NextTokenLogits&) = delete;

  // Starts a sequence with `prompt` (at least one token); the logits after its last token.
  std::vector<float> start(const std::vector<std::int64_t>& prompt);
  // Appends one token; the logits after it.
  std::vector<float> append(std::int64_t token);

  const std::vector<std::int64_t>& sequence() const { return sequence_; }
  std::int64_t max_seq_len() const { return max_seq_len_; }

 private:
  // Runs `tokens` at positions [first_position, ...) and projects the last hidden state.
  std::vector<float> run(const std::vector<std::int64_t>& tokens, std::int64_t first_position);

  ft::Model& model_;
  bool use_kv_cache_;
  ft::ModelKvCache* kv_cache_ = nullptr;  // the model's cache role while it is used
  std::int64_t max_seq_len_;
  std::vector<std::int64_t> sequence_;
};

struct GenerationLimits {
  std::int64_t max_new_tokens = 256;
  std::vector<std::int64_t> stop_tokens;  // generation ends after any of them (not part of the answer)
};

struct Generation {
  std::vector<std::int64_t> tokens;  // the answer, without the stop token
  bool stopped = false;              // ended by a stop token (else by max_new_tokens or the length limit)
  std::int64_t prompt_tokens = 0;
  std::int64_t steps = 0;      // tokens chosen, the stop token included
  double prefill_seconds = 0;  // the prompt's forward and the first token
  double decode_seconds = 0;   // every later token
};

// Generates an answer to `prompt`. `on_token` sees each answer token as it is chosen (never a
// stop token).
Generation generate(NextTokenLogits& logits, const std::vector<std::int64_t>& prompt, TokenSampler& sampler,
                    const GenerationLimits& limits, const std::function<void(std::int64_t)>& on_token = {});

}  // namespace fthost
