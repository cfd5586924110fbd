// ft::checkpointed: one custom autograd node per checkpointed step. A Node subclass rather than
// torch::autograd::Function<T>, whose context saves only IValues: the node must own the step
// (a std::function with its captures) until its backward has run.
#include <ft/activation_checkpointing.h>
#include <ft/torch_compat.h>

#include <ATen/Context.h>
#include <ATen/Functions.h>
#include <ATen/core/Generator.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ft {

namespace {

// Where a checkpointed step keeps its input between forward and backward: on its device, or
// (activation offloading) in pinned host memory, so the device holds no activation of the layer
// at all until its backward.
class SavedInput {
 public:
  static SavedInput pack(const at::Tensor& input, bool offload) {
    if (!offload) return SavedInput(input.detach(), input.device());
    TORCH_CHECK(input.is_cuda(), "ft::checkpointed: activation offloading needs an input on a CUDA device, got ",
                input.device());
    // Asynchronous on the current stream: later kernels, and the reuse of the input's memory
    // once it is freed, are ordered after the copy; the pinned block is not reused before it ends.
    at::Tensor host = at::empty(input.sizes(), input.options().device(c10::kCPU).pinned_memory(true));
    host.copy_(input.detach(), /*non_blocking=*/true);
    return SavedInput(std::move(host), input.device());
  }
  // A fresh leaf for the recompute, sharing the saved values (or copied back to the device).
  at::Tensor unpack() const {
    if (stored_.device() == device_) return stored_.detach();
    return stored_.to(device_, /*non_blocking=*/true).detach();
  }
  void release() { stored_.reset(); }

 private:
  SavedInput(at::Tensor stored, c10::Device device) : stored_(std::move(stored)), device_(device) {}
  at::Tensor stored_;
  c10::Device device_;
};

// The states of the random generators a step may draw from: the CPU's and, for an input on
// another device, that device's default generator.
class GeneratorStates {
 public:
  static GeneratorStates capture(const c10::Device& device) {
    GeneratorStates states;
    states.add(at::globalContext().defaultGenerator(c10::Device(c10::DeviceType::CPU)));
    if (!device.is_cpu()) states.add(at::globalContext().defaultGenerator(device));
    return states;
  }

  void restore() const {
    for (const auto& [generator, state] : saved_) {
      at::Generator g = generator;
      std::lock_guard<std::mutex> lock(g.mutex());
      g.set_state(state);
    }
  }

 private:
  void add(const at::Generator& generator) {
    at::Generator g = generator;
    std::lock_guard<std::mutex> lock(g.mutex());
    saved_.emplace_back(g, g.get_state());
  }
  std::vector<std::pair<at::Generator, at::Tensor>> saved_;
};

// Puts the generators back to where they were when it was made, also when the recompute throws.
class GeneratorStatesRestorer {
 public:
  explicit GeneratorStatesRestorer(const c10::Device& device) : states_(GeneratorStates::capture(device)) {}
  ~GeneratorStatesRestorer() { states_.restore(); }
  GeneratorStatesRestorer(const GeneratorStatesRestorer&) = delete;
  GeneratorStatesRestorer& operator=(const GeneratorStatesRestorer&) = delete;

 private:
  GeneratorStates states_;
};

class CheckpointedStepBackward final : public torch::autograd::Node {
 public:
  CheckpointedStepBackward(CheckpointedStep step, SavedInput input, c10::Device device, GeneratorStates at_forward)
      : step_(std::move(step)), input_(std::move(input)), device_(device), at_forward_(std::move(at_forward)) {}

  std::string name() const override { return "ft::CheckpointedStepBackward"; }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    TORCH_CHECK(step_,
                "ft::checkpointed: backward through a checkpointed step whose graph was already freed; "
                "pass retain_graph=true to the first backward to go through it twice");
    if (!grads.at(0).defined()) return {at::Tensor()};
    const at::Tensor input = input_.unpack().requires_grad_(true);
    at::Tensor output;
    {
      GeneratorStatesRestorer afterwards(device_);
      at_forward_.restore();
      at::AutoGradMode grad_enabled(true);
      output = step_(input);
    }
    if (!output.requires_grad()) return {at::Tensor()};
    // Accumulates every parameter's .grad through its own AccumulateGrad node, and the input's.
    torch::autograd::backward({output}, {grads[0]});
    return {input.grad()};
  }

  // Called by the engine after apply unless the graph is retained.
  void release_variables() override {
    step_ = nullptr;
    input_.release();
  }

 private:
  CheckpointedStep step_;
  SavedInput input_;
  c10::Device device_;
  GeneratorStates at_forward_;
};

}  // namespace

at::Tensor checkpointed(CheckpointedStep step, const at::Tensor& input, const CheckpointOptions& options) {
  if (!at::GradMode::is_enabled() || !input.requires_grad()) return step(input);
  GeneratorStates at_forward = GeneratorStates::capture(input.device());
  at::Tensor output;
  {
    at::NoGradGuard no_grad;
    output = step(input.detach());
  }
  // The node becomes the output's grad_fn: the output must be a tensor of its own, not a view
  // or the input itself, whose autograd history would be overwritten.
  if (output.is_view() || output.is_alias_of(input)) output = output.clone();
  auto node = compat::make_autograd_node<CheckpointedStepBackward>(
      std::move(step), SavedInput::pack(input, options.offload_input), input.device(), std::move(at_forward));
  node->set_next_edges(torch::autograd::collect_next_edges(input));
  torch::autograd::set_history(output, node);
  return output;
}

}  // namespace ft
