// ft::checkpointed: one custom autograd node per checkpointed step. A Node subclass rather than
// torch::autograd::Function<T>, whose context saves only IValues: the node must own the step
// (a std::function with its captures) until its backward has run.
#include <ft/activation_checkpointing.h>

#include <ATen/Context.h>
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

// Where a checkpointed step keeps its input between forward and backward: the one place that
// activation offloading will change, to keep the input in host memory instead of on the device.
class SavedInput {
 public:
  static SavedInput pack(const at::Tensor& input) { return SavedInput(input.detach()); }
  // A fresh leaf for the recompute, sharing the saved values.
  at::Tensor unpack() const { return stored_.detach(); }
  void release() { stored_.reset(); }

 private:
  explicit SavedInput(at::Tensor stored) : stored_(std::move(stored)) {}
  at::Tensor stored_;
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

at::Tensor checkpointed(CheckpointedStep step, const at::Tensor& input) {
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
  auto node = std::shared_ptr<CheckpointedStepBackward>(
      new CheckpointedStepBackward(std::move(step), SavedInput::pack(input), input.device(), std::move(at_forward)),
      torch::autograd::deleteNode);
  node->set_next_edges(torch::autograd::collect_next_edges(input));
  torch::autograd::set_history(output, node);
  return output;
}

}  // namespace ft
