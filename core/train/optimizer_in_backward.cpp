#include "train/optimizer_in_backward.h"

#include <ft/errors.h>

#include <map>
#include <string>
#include <utility>

namespace fthost {

namespace {

const char* const kOwnPrefix = "state.0.";  // a one-tensor optimizer's names

}  // namespace

OptimizerInBackward::OptimizerInBackward(const ft::Registry& registry, const ft::ConfigNode& optimizer_table,
                                         std::vector<at::Tensor> params)
    : params_(std::move(params)) {
  if (params_.empty()) throw ft::Error("optimizer_in_bwd: the model has no trainable tensors");
  optimizers_.reserve(params_.size());
  for (const auto& p : params_) optimizers_.push_back(registry.instantiate<ft::Optimizer>(optimizer_table, {{p}}));
}

void OptimizerInBackward::step_parameter(std::size_t index) {
  if (observed_steps_ < params_.size()) {
    ++observed_steps_;
    std::size_t alive = 0;
    for (const auto& p : params_) alive += p.grad().defined();
    if (alive > most_gradients_alive_) most_gradients_alive_ = alive;
  }
  optimizers_.at(index)->step();
  optimizers_[index]->zero_grad(true);
}

void OptimizerInBackward::step() {
  throw ft::Error("optimizer_in_bwd: every tensor steps in backward; the recipe must not call step()");
}

void OptimizerInBackward::zero_grad(bool set_to_none) {
  for (auto& o : optimizers_) o->zero_grad(set_to_none);
}

double OptimizerInBackward::lr() const { return optimizers_.front()->lr(); }

void OptimizerInBackward::set_lr(double lr) {
  for (auto& o : optimizers_) o->set_lr(lr);
}

std::vector<ft::NamedTensor> OptimizerInBackward::state() const {
  std::vector<ft::NamedTensor> all;
  for (std::size_t i = 0; i < optimizers_.size(); ++i) {
    for (auto& t : optimizers_[i]->state()) {
      if (t.name.rfind(kOwnPrefix, 0) != 0)
        throw ft::Error("optimizer state \"" + t.name + "\" of a one-tensor optimizer is not state.0.<field>");
      all.push_back({"state." + std::to_string(i) + "." + t.name.substr(std::string(kOwnPrefix).size()), t.tensor});
    }
  }
  return all;
}

void OptimizerInBackward::load_state(const std::vector<ft::NamedTensor>& state) {
  std::map<std::size_t, std::vector<ft::NamedTensor>> by_tensor;
  for (const auto& t : state) {
    // state.<i>.<field>
    const auto dot = t.name.find('.', 6);
    std::size_t index = optimizers_.size();
    if (t.name.rfind("state.", 0) == 0 && dot != std::string::npos && dot > 6) {
      try {
        std::size_t used = 0;
        index = std::stoul(t.name.substr(6, dot - 6), &used);
        if (used != dot - 6) index = optimizers_.size();
      } catch (const std::exception&) {
      }
    }
    if (index >= optimizers_.size())
      throw ft::Error("optimizer state \"" + t.name + "\": not state.<i>.<field> for one of the " +
                      std::to_string(optimizers_.size()) + " trainable tensors");
    by_tensor[index].push_back({kOwnPrefix + t.name.substr(dot + 1), t.tensor});
  }
  for (std::size_t i = 0; i < optimizers_.size(); ++i) {
    auto it = by_tensor.find(i);
    try {
      optimizers_[i]->load_state(it == by_tensor.end() ? std::vector<ft::NamedTensor>{} : it->second);
    } catch (const ft::Error& e) {
      // The one-tensor optimizer names its tensors state.0.<field>; the checkpoint, state.<i>.<field>.
      std::string what = e.what();
      const std::string own = std::string("\"") + kOwnPrefix;
      if (auto at = what.find(own); at != std::string::npos)
        what.replace(at, own.size(), "\"state." + std::to_string(i) + ".");
      throw ft::Error(what);
    }
  }
}

}  // namespace fthost
