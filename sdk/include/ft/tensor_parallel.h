// Tensor parallelism (`tensor_parallel_dim` > 1): the ranks of a tensor-parallel group each hold
// a slice of the big matrices and compute on it, in the Megatron layout torchtune's plans give
// (torch.distributed.tensor.parallel):
//
//   colwise  (q/k/v, w1/w3, the output projection): each rank holds a slice of the output
//            features; its input is the whole activation, whose gradient is summed over the
//            group in backward (copy_to_tensor_parallel).
//   rowwise  (attention output, w2, the embedding): each rank holds a slice of the input
//            features (vocabulary rows for the embedding); the partial outputs are summed over
//            the group in forward (reduce_from_tensor_parallel).
//
// A plan (`tensor_parallel_plan._component_`) is data: module patterns and their styles. The
// model applies it (ft::ModelTensorParallelism::apply_tensor_parallel, a model role). Loss parallel: the output
// projection's logits stay sharded over the vocabulary and the losses compute the cross-entropy from them without
// gathering (vocab_parallel_cross_entropy_sum).
#pragma once

#include <ft/collectives.h>
#include <ft/export.h>
#include <ft/kind.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ft {

// torch.distributed.tensor.parallel's styles, as torchtune's plans use them.
enum class ParallelStyle {
  Colwise,               // ColwiseParallel: output features split
  Rowwise,               // RowwiseParallel: input features split, outputs summed
  SequenceParallel,      // SequenceParallel (norms): the module stays whole on every rank
  PrepareModuleInput,    // PrepareModuleInput: the module's inputs made whole on every rank
  NoParallel,            // NoParallel (a router's gate): whole on every rank, its gradient summed
  ExpertTensorParallel,  // ExpertTensorParallel: every expert's hidden features split, outputs summed
};

// "colwise", "rowwise", "sequence_parallel", "prepare_module_input", "no_parallel",
// "expert_tensor_parallel".
FT_API std::string_view parallel_style_name(ParallelStyle style);

// One entry of a plan: a module path pattern in torchtune's module names ("output",
// "layers.*.attn.q_proj") and its style. `*` matches one path component, as fnmatch does.
struct ModuleParallelism {
  std::string pattern;
  ParallelStyle style;
  // The model may have no module it matches (the dense MLP of a model whose every layer is a
  // mixture of experts): matching none is then no error.
  bool optional = false;
};

// Whether `pattern` matches the dotted module path `module` component by component (fnmatch
// within each component: `*`, `?`, `[...]`), as torch's parallelize_module matches plan keys.
FT_API bool module_pattern_matches(std::string_view pattern, std::string_view module);

// A tensor-parallel plan component (torchtune.models.llama3.base_llama_tp_plan, ...).
class TensorParallelPlan {
 public:
  static constexpr Kind kind = Kind::TensorParallelPlan;
  struct Args {};

  virtual ~TensorParallelPlan() = default;
  virtual std::vector<ModuleParallelism> modules() const = 0;
};

// Forward: `x` unchanged; backward: the gradient summed over `group`. The input of a colwise
// region: every rank's slice contributes to the whole input's gradient.
FT_API at::Tensor copy_to_tensor_parallel(const at::Tensor& x, const std::shared_ptr<Collectives>& group);

// Forward: `x` summed over `group`; backward: the gradient unchanged. The output of a rowwise
// region: every rank computed a partial sum of the same output.
FT_API at::Tensor reduce_from_tensor_parallel(const at::Tensor& x, const std::shared_ptr<Collectives>& group);

// Logits sharded over the vocabulary: this rank holds ids [offset, offset + local size).
struct VocabShard {
  std::shared_ptr<Collectives> group;
  std::int64_t offset = 0;
};

// The cross-entropy summed over `targets` != `ignore_index`, from this rank's vocabulary slice
// of the logits ([..., local vocab], any float type; computed in float32) without gathering
// them: the row maxima, the sums of exponentials and the target logits are combined over the
// group. Every rank of the group returns the same value; each one's backward yields the
// gradient of its own slice. `targets` hold global vocabulary ids.
FT_API at::Tensor vocab_parallel_cross_entropy_sum(const at::Tensor& local_logits, const at::Tensor& targets,
                                                   std::int64_t ignore_index, const VocabShard& shard);

}  // namespace ft
