#include "plan/planning_group.h"

#include <ft/errors.h>

#include <string>

namespace fthost {

namespace {

class PlanningGroup final : public ft::Collectives {
 public:
  explicit PlanningGroup(int size) : size_(size) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  void all_reduce_sum(at::Tensor&) override { refuse("all_reduce"); }
  std::unique_ptr<ft::PendingCollective> all_reduce_sum_async(at::Tensor&) override { refuse("all_reduce"); }
  void all_gather(at::Tensor&, const at::Tensor&) override { refuse("all_gather"); }
  void reduce_scatter_sum(at::Tensor&, const at::Tensor&) override { refuse("reduce_scatter"); }
  void broadcast(at::Tensor&, int) override { refuse("broadcast"); }
  void barrier() override { refuse("barrier"); }

 private:
  [[noreturn]] static void refuse(const char* what) {
    throw ft::Error(std::string("planning: a model split for the memory plan tried to communicate (") + what + ")");
  }
  int size_;
};

}  // namespace

std::shared_ptr<ft::Collectives> planning_group(int size) { return std::make_shared<PlanningGroup>(size); }

}  // namespace fthost
