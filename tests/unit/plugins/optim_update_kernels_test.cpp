// The optimizers' update loops exist in a baseline and an AVX2 copy (plugins/optim/
// update_kernels.h); the copy a process runs depends on its CPU, so both must give the same bits
// for every setting, or a run's result would depend on the machine it ran on.
#include "update_kernels.h"

#include <ft_kernels/kernel_choice.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

// Values spread over several binades, with a ragged length so the vector loops' tails run too.
at::Tensor random_values(at::ScalarType dtype, std::int64_t n, std::uint64_t seed, double scale, bool positive) {
  at::manual_seed(seed);
  at::Tensor t = at::randn({n}, at::kDouble) * scale;
  if (positive) t = t.abs();
  return t.to(dtype);
}

// The recipe's 1 / tokens, folded into the step.
constexpr double kScale = 1.0 / 37.0;

bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  return a.numel() == b.numel() && std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

struct AdamSetting {
  std::string name;
  ftoptim::AdamHyperparameters h;
};

std::vector<AdamSetting> adam_settings() {
  std::vector<AdamSetting> s;
  ftoptim::AdamHyperparameters adamw;
  adamw.lr = 2e-3;
  adamw.weight_decay = 0.1;
  adamw.decoupled_weight_decay = true;
  s.push_back({"AdamW", adamw});
  ftoptim::AdamHyperparameters adam_l2 = adamw;
  adam_l2.decoupled_weight_decay = false;
  s.push_back({"Adam with L2", adam_l2});
  ftoptim::AdamHyperparameters plain;
  s.push_back({"Adam", plain});
  ftoptim::AdamHyperparameters amsgrad = adamw;
  amsgrad.amsgrad = true;
  s.push_back({"AdamW amsgrad", amsgrad});
  return s;
}

template <class Stored>
void expect_adam_copies_agree(at::ScalarType dtype) {
  const std::int64_t n = 1000003;
  for (const auto& setting : adam_settings()) {
    for (std::int64_t step : {1, 7}) {
      SCOPED_TRACE(setting.name + ", step " + std::to_string(step) + ", " + c10::toString(dtype));
      const at::Tensor g = random_values(dtype, n, 1, 1e-2, false);
      std::vector<at::Tensor> results;
      for (int copy = 0; copy < 2; ++copy) {
        at::Tensor p = random_values(dtype, n, 2, 1.0, false), m = random_values(dtype, n, 3, 1e-3, false);
        at::Tensor v = random_values(dtype, n, 4, 1e-5, true), vmax = random_values(dtype, n, 5, 1e-5, true);
        Stored* vmax_ptr = setting.h.amsgrad ? vmax.data_ptr<Stored>() : nullptr;
        if (copy == 0)
          ftoptim::baseline::adam_range(p.data_ptr<Stored>(), g.data_ptr<Stored>(), m.data_ptr<Stored>(),
                                        v.data_ptr<Stored>(), vmax_ptr, 0, n, step, setting.h, kScale);
        else
          ftoptim::avx2::adam_range(p.data_ptr<Stored>(), g.data_ptr<Stored>(), m.data_ptr<Stored>(),
                                    v.data_ptr<Stored>(), vmax_ptr, 0, n, step, setting.h, kScale);
        results.insert(results.end(), {p, m, v, vmax});
      }
      // The update moved the parameters: a copy that did nothing would not compare equal to it.
      EXPECT_FALSE(same_bits(results[0], random_values(dtype, n, 2, 1.0, false)));
      for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(same_bits(results[i], results[i + 4])) << "tensor " << i;
    }
  }
}

TEST(OptimizerUpdateKernels, AdamCopiesGiveTheSameBits) {
  if (!ft_kernels::cpu_has_avx2()) GTEST_SKIP() << "this CPU has no AVX2: only the baseline copy can run";
  expect_adam_copies_agree<float>(at::kFloat);
  expect_adam_copies_agree<double>(at::kDouble);
  expect_adam_copies_agree<c10::BFloat16>(at::kBFloat16);
}

template <class Stored>
void expect_sgd_copies_agree(at::ScalarType dtype) {
  const std::int64_t n = 1000003;
  struct Setting {
    std::string name;
    double momentum, dampening, weight_decay;
    bool nesterov;
  };
  for (const Setting& s :
       {Setting{"plain", 0, 0, 0, false}, Setting{"weight decay", 0, 0, 0.01, false},
        Setting{"momentum, dampening", 0.9, 0.1, 0.01, false}, Setting{"nesterov", 0.9, 0, 0, true}}) {
    for (bool first_step : {true, false}) {
      SCOPED_TRACE(s.name + (first_step ? ", first step, " : ", later step, ") + c10::toString(dtype));
      ftoptim::SgdHyperparameters h;
      h.lr = 0.05;
      h.momentum = s.momentum;
      h.dampening = s.dampening;
      h.weight_decay = s.weight_decay;
      h.nesterov = s.nesterov;
      const at::Tensor g = random_values(dtype, n, 1, 1e-2, false);
      std::vector<at::Tensor> results;
      for (int copy = 0; copy < 2; ++copy) {
        at::Tensor p = random_values(dtype, n, 2, 1.0, false), buf = random_values(dtype, n, 3, 1e-2, false);
        Stored* buf_ptr = s.momentum != 0 ? buf.data_ptr<Stored>() : nullptr;
        if (copy == 0)
          ftoptim::baseline::sgd_range(p.data_ptr<Stored>(), g.data_ptr<Stored>(), buf_ptr, first_step, 0, n, h,
                                       kScale);
        else
          ftoptim::avx2::sgd_range(p.data_ptr<Stored>(), g.data_ptr<Stored>(), buf_ptr, first_step, 0, n, h, kScale);
        results.insert(results.end(), {p, buf});
      }
      EXPECT_FALSE(same_bits(results[0], random_values(dtype, n, 2, 1.0, false)));
      EXPECT_TRUE(same_bits(results[0], results[2])) << "parameters";
      EXPECT_TRUE(same_bits(results[1], results[3])) << "momentum buffers";
    }
  }
}

TEST(OptimizerUpdateKernels, SgdCopiesGiveTheSameBits) {
  if (!ft_kernels::cpu_has_avx2()) GTEST_SKIP() << "this CPU has no AVX2: only the baseline copy can run";
  expect_sgd_copies_agree<float>(at::kFloat);
  expect_sgd_copies_agree<double>(at::kDouble);
  expect_sgd_copies_agree<c10::BFloat16>(at::kBFloat16);
}

// The updates split each tensor across LibTorch's intra-op threads; compiled without OpenMP the
// split ran on one thread (half a 2-core machine's memory bandwidth for a bfloat16 AdamW step).
TEST(OptimizerUpdateKernels, UpdatesRunOnLibTorchsThreads) {
  const int threads_before = at::get_num_threads();
  for (int threads : {1, 3}) {
    at::set_num_threads(threads);
    EXPECT_EQ(ftoptim::threads_in_update_loops(), threads);
  }
  at::set_num_threads(threads_before);
}

}  // namespace
