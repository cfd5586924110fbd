// Model role: context parallelism. Each sequence is split across a group of ranks (ft::nn's
// load_balanced_indices: 2n equal chunks, rank r holding chunks r and 2n-1-r); forward then takes
// this rank's positions of every row, their global indices as input_pos and, for packed rows,
// the global rows' document lengths. Attention runs round the group; everything else is per
// position. The parameters are unchanged: the parallelism strategy reduces their gradients over
// the context-parallel ranks as over data-parallel ones.
#pragma once

#include <ft/collectives.h>
#include <ft/model.h>

#include <memory>
#include <string>

namespace ft {

// torchtune's context_parallel_rotate_method: how keys and values travel between the ranks.
enum class RotateMethod { AllGather, AllToAll };

inline const char* rotate_method_name(RotateMethod method) {
  return method == RotateMethod::AllGather ? "allgather" : "alltoall";
}

class ModelContextParallelism {
 public:
  static constexpr ModelRole role = ModelRole::ContextParallelism;
  virtual ~ModelContextParallelism() = default;
  // Empty when every attention layer can run split, else what cannot (the host's refusal says it).
  virtual std::string context_parallel_problem() const = 0;
  // Called once, before the parallelism strategy distributes the model. Throws ft::Error when
  // context_parallel_problem() is not empty.
  virtual void apply_context_parallel(const std::shared_ptr<Collectives>& group, RotateMethod rotate) = 0;
};

}  // namespace ft
