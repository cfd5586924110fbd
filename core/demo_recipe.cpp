#include "demo_recipe.h"

#include <ft/log.h>
#include <ft/lr_scheduler.h>
#include <ft/metric_logger.h>
#include <ft/optimizer.h>

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <cmath>

namespace fthost {

int run_demo_recipe(const ft::Registry& registry, const ft::ConfigNode& root) {
  const int64_t seed = root.get<int64_t>("seed");
  const int64_t epochs = root.get<int64_t>("epochs");
  const int64_t steps_per_epoch = root.get<int64_t>("max_steps_per_epoch", 100);
  const int64_t batch_size = root.get<int64_t>("batch_size");
  const int64_t log_every = root.get<int64_t>("log_every_n_steps");
  if (const int threads = root.get<int>("num_threads"); threads > 0) torch::set_num_threads(threads);
  torch::manual_seed(static_cast<uint64_t>(seed));

  // Target: y = sin(2 x·w) for a fixed random w, the model a 2-layer MLP.
  constexpr int64_t kIn = 16, kHidden = 64;
  torch::Tensor w_true = torch::randn({kIn, 1}) / std::sqrt(static_cast<double>(kIn));  // x·w ~ N(0, 1)
  torch::nn::Sequential model(torch::nn::Linear(kIn, kHidden), torch::nn::GELU(), torch::nn::Linear(kHidden, 1));

  auto logger = registry.instantiate<ft::MetricLogger>(root.table("metric_logger"));
  logger->log_config(root);
  auto optimizer = registry.instantiate<ft::Optimizer>(root.table("optimizer"), {model->parameters()});
  std::shared_ptr<ft::LRScheduler> scheduler;
  const int64_t total_steps = epochs * steps_per_epoch;
  if (root.is_table("lr_scheduler"))
    scheduler = registry.instantiate<ft::LRScheduler>(root.table("lr_scheduler"), {optimizer.get(), total_steps, -1});

  ft::log::info("demo: training a {}-{}-1 MLP for {} steps", kIn, kHidden, total_steps);
  double first_loss = 0, last_loss = 0;
  for (int64_t step = 1; step <= total_steps; ++step) {
    torch::Tensor x = torch::randn({batch_size, kIn});
    torch::Tensor y = torch::sin(2.0 * x.matmul(w_true));
    optimizer->zero_grad();
    torch::Tensor loss = (model->forward(x) - y).pow(2).mean();
    loss.backward();
    optimizer->step();
    if (scheduler) scheduler->step();
    last_loss = loss.item<double>();
    if (step == 1) first_loss = last_loss;
    if (step % log_every == 0) logger->log_dict({{"loss", last_loss}, {"lr", optimizer->lr()}}, step);
  }
  logger->close();
  ft::log::info("demo: loss {:.4f} -> {:.4f}", first_loss, last_loss);
  return 0;
}

}  // namespace fthost
