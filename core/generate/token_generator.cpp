#include "generate/token_generator.h"

#include <ft/clock.h>
#include <ft/errors.h>
#include <ft/model_kv_cache.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <string>

namespace fthost {

NextTokenLogits::NextTokenLogits(ft::Model& model, bool use_kv_cache, std::int64_t max_seq_len)
    : model_(model), use_kv_cache_(use_kv_cache), max_seq_len_(max_seq_len) {
  if (max_seq_len < 1) throw ft::Error("generation: max_seq_len must be positive");
  if (use_kv_cache_) {
    kv_cache_ = ft::role_of<ft::ModelKvCache>(model_);
    if (!kv_cache_) throw ft::Error("this model has no KV cache; generate without it");
    kv_cache_->setup_caches(1, max_seq_len);
  }
}

NextTokenLogits::~NextTokenLogits() {
  if (kv_cache_) kv_cache_->remove_caches();
}

std::vector<float> NextTokenLogits::start(const std::vector<std::int64_t>& prompt) {
  if (prompt.empty()) throw ft::Error("generation: the prompt has no tokens");
  if (static_cast<std::int64_t>(prompt.size()) > max_seq_len_)
    throw ft::Error("generation: the prompt's " + std::to_string(prompt.size()) + " tokens exceed the " +
                    std::to_string(max_seq_len_) + " positions available");
  sequence_ = prompt;
  if (kv_cache_) kv_cache_->reset_caches();
  return run(sequence_, 0);
}

std::vector<float> NextTokenLogits::append(std::int64_t token) {
  if (static_cast<std::int64_t>(sequence_.size()) >= max_seq_len_)
    throw ft::Error("generation: the sequence is at its " + std::to_string(max_seq_len_) + " positions");
  sequence_.push_back(token);
  if (use_kv_cache_) return run({token}, static_cast<std::int64_t>(sequence_.size()) - 1);
  return run(sequence_, 0);
}

std::vector<float> NextTokenLogits::run(const std::vector<std::int64_t>& tokens, std::int64_t first_position) {
  at::NoGradGuard no_grad;
  const at::Tensor weight = model_.output_weight();
  const auto options = at::TensorOptions().dtype(at::kLong).device(weight.device());
  const auto n = static_cast<std::int64_t>(tokens.size());
  ft::ModelInput input;
  input.tokens = at::tensor(tokens, at::kLong).view({1, n}).to(options.device());
  if (use_kv_cache_) input.input_pos = at::arange(first_position, first_position + n, options).view({1, n});
  ft::OutputRequest request;
  request.hidden_only = true;  // only the last position is projected onto the vocabulary
  const ft::ModelOutput out = model_.forward(input, request);
  const at::Tensor hidden = out.hidden.select(1, n - 1);  // [1, dim]
  // The model's own logits are soft-capped (Gemma 2); projecting here must not skip that.
  const at::Tensor logits = ft::soft_cap(at::linear(hidden, model_.output_weight()), out.final_logit_softcap)
                                .to(at::kFloat)
                                .cpu()
                                .contiguous()
                                .view(-1);
  return std::vector<float>(logits.data_ptr<float>(), logits.data_ptr<float>() + logits.numel());
}

Generation generate(NextTokenLogits& logits, const std::vector<std::int64_t>& prompt, TokenSampler& sampler,
                    const GenerationLimits& limits, const std::function<void(std::int64_t)>& on_token) {
  Generation g;
  g.prompt_tokens = static_cast<std::int64_t>(prompt.size());
  const auto is_stop = [&](std::int64_t t) {
    return std::find(limits.stop_tokens.begin(), limits.stop_tokens.end(), t) != limits.stop_tokens.end();
  };
  if (limits.max_new_tokens < 1) return g;
  auto start = ft::Clock::now();
  std::vector<float> next = logits.start(prompt);
  for (;;) {
    const std::int64_t token = sampler.next(next);
    ++g.steps;
    if (g.steps == 1) {
      g.prefill_seconds = ft::seconds_since(start);
      start = ft::Clock::now();
    }
    if (is_stop(token)) {
      g.stopped = true;
      break;
    }
    g.tokens.push_back(token);
    if (on_token) on_token(token);
    if (g.steps >= limits.max_new_tokens) break;
    if (static_cast<std::int64_t>(logits.sequence().size()) >= logits.max_seq_len()) break;
    next = logits.append(token);
  }
  if (g.steps > 1) g.decode_seconds = ft::seconds_since(start);
  return g;
}

}  // namespace fthost
