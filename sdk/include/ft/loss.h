// Loss interface (`torch.nn.CrossEntropyLoss`, `torchtune.modules.loss.*`). A loss returns the
// SUM of per-token losses over targets != ignore_index: the recipe divides by the tokens of the
// whole optimizer step (all micro-batches, all ranks), which a per-micro-batch mean cannot do.
#pragma once

#include <ft/kind.h>
#include <ft/model.h>

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace ft {

class Loss {
 public:
  static constexpr Kind kind = Kind::Loss;
  struct Args {};

  virtual ~Loss() = default;
  virtual std::int64_t ignore_index() const = 0;
  // The model output this loss consumes.
  virtual OutputRequest output_request() const = 0;
  // `targets`: [b, s] int64, already shifted (targets[:, i] is predicted at position i).
  // Returns a 0-dim tensor; `model` gives the output projection to losses that need it.
  virtual at::Tensor sum(const ModelOutput& output, const at::Tensor& targets, Model& model) = 0;
  // Whether sum() handles logits sharded over the vocabulary (output.vocab_shard, tensor
  // parallelism); the host refuses tensor parallelism with a loss that does not.
  virtual bool supports_vocab_parallel() const { return false; }
};

}  // namespace ft
