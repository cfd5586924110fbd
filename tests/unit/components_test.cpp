// The built-in optimizer, scheduler and logger plugins, instantiated through the registry as the
// recipe does. Expected values are worked by hand from the algorithms' definitions.
#include "config_loader.h"
#include "plugin_loader.h"
#include "test_helpers.h"

#include <ft/loss.h>
#include <ft/lr_scheduler.h>
#include <ft/metric_logger.h>
#include <ft/model.h>
#include <ft/optimizer.h>

#include <torch/torch.h>

#include <cmath>

namespace {

class Components : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    loader_ = new fthost::PluginLoader;
    loader_->load_all({{FT_BUILTIN_PLUGIN_DIR, "default"}});
  }
  static void TearDownTestSuite() { delete loader_; }
  ft::ConfigNode root(const std::string& text) {
    return ft::detail::root_node(fthost::load_config(fttest::write_temp("run.toml", text), {}));
  }
  static fthost::PluginLoader* loader_;
};
fthost::PluginLoader* Components::loader_ = nullptr;

torch::Tensor param_with_grad(double value, double grad) {
  auto p = torch::full({1}, value, torch::dtype(torch::kFloat64).requires_grad(true));
  p.mutable_grad() = torch::full({1}, grad, torch::kFloat64);
  return p;
}

TEST_F(Components, SgdStep) {
  auto p = param_with_grad(1.0, 2.0);
  auto opt = loader_->registry().instantiate<ft::Optimizer>(
      root("[optimizer]\n_component_ = \"torch.optim.SGD\"\nlr = 0.1\n").table("optimizer"), {{p}});
  opt->step();
  EXPECT_NEAR(p.item<double>(), 1.0 - 0.1 * 2.0, 1e-12);
  opt->zero_grad(true);
  EXPECT_FALSE(p.grad().defined());
}

TEST_F(Components, AdamWFirstStepDecouplesWeightDecay) {
  auto p = param_with_grad(1.0, 2.0);
  auto opt = loader_->registry().instantiate<ft::Optimizer>(
      root("[optimizer]\n_component_ = \"torch.optim.AdamW\"\nlr = 0.1\n").table("optimizer"), {{p}});
  opt->step();
  // Step 1: bias-corrected m = g, v = g^2, so the Adam update is lr * g / (|g| + eps); decay is lr * wd * p.
  const double expected = 1.0 * (1.0 - 0.1 * 0.01) - 0.1 * 2.0 / (2.0 + 1e-8);
  EXPECT_NEAR(p.item<double>(), expected, 1e-12);
  opt->set_lr(0.5);
  EXPECT_DOUBLE_EQ(opt->lr(), 0.5);
}

TEST_F(Components, OptimizerRejectsBadBetas) {
  auto p = param_with_grad(1.0, 2.0);
  auto msg = fttest::error_of<ft::ConfigError>([&] {
    loader_->registry().instantiate<ft::Optimizer>(
        root("[optimizer]\n_component_ = \"torch.optim.Adam\"\nbetas = [0.9]\n").table("optimizer"), {{p}});
  });
  EXPECT_NE(msg.find("optimizer.betas: expected two numbers"), std::string::npos) << msg;
}

// SGD at lr 1.0 (so the lr is the schedule's multiplier) under a 10-step-warmup cosine.
const char* const kCosineConfig =
    "[optimizer]\n_component_ = \"torch.optim.SGD\"\nlr = 1.0\n"
    "[lr_scheduler]\n_component_ = \"torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup\"\n"
    "num_warmup_steps = 10\n";

TEST_F(Components, CosineWithWarmupMatchesTorchtuneSchedule) {
  auto p = param_with_grad(1.0, 0.0);
  auto cfg = root(kCosineConfig);
  auto opt = loader_->registry().instantiate<ft::Optimizer>(cfg.table("optimizer"), {{p}});
  auto sched = loader_->registry().instantiate<ft::LRScheduler>(cfg.table("lr_scheduler"), {opt.get(), 100, -1});
  EXPECT_DOUBLE_EQ(opt->lr(), 0.0);  // step 0 of warmup
  auto advance = [&](int n) {
    for (int i = 0; i < n; ++i) sched->step();
  };
  advance(5);
  EXPECT_DOUBLE_EQ(opt->lr(), 0.5);  // 5 / 10
  advance(5);
  EXPECT_DOUBLE_EQ(opt->lr(), 1.0);  // end of warmup, cos(0)
  advance(45);
  EXPECT_NEAR(opt->lr(), 0.5, 1e-12);  // halfway through the decay: 0.5 * (1 + cos(pi/2))
  advance(45);
  EXPECT_NEAR(opt->lr(), 0.0, 1e-12);
  EXPECT_EQ(sched->last_epoch(), 100);
}

TEST_F(Components, LinearWithWarmupDecaysToZero) {
  auto p = param_with_grad(1.0, 0.0);
  auto cfg = root(R"(
[optimizer]
_component_ = "torch.optim.SGD"
lr = 2.0
[lr_scheduler]
_component_ = "fthost.lr_schedulers.linear_with_warmup"
num_warmup_steps = 4
)");
  auto opt = loader_->registry().instantiate<ft::Optimizer>(cfg.table("optimizer"), {{p}});
  auto sched = loader_->registry().instantiate<ft::LRScheduler>(cfg.table("lr_scheduler"), {opt.get(), 20, -1});
  std::vector<double> lrs{opt->lr()};
  for (int i = 0; i < 20; ++i) {
    sched->step();
    lrs.push_back(opt->lr());
  }
  EXPECT_DOUBLE_EQ(lrs[0], 0.0);
  EXPECT_DOUBLE_EQ(lrs[2], 1.0);   // 2 * 2/4
  EXPECT_DOUBLE_EQ(lrs[4], 2.0);   // warmup done
  EXPECT_DOUBLE_EQ(lrs[12], 1.0);  // 2 * (20 - 12) / 16
  EXPECT_DOUBLE_EQ(lrs[20], 0.0);
}

TEST_F(Components, SchedulerResumesFromLastEpoch) {
  auto p = param_with_grad(1.0, 0.0);
  auto cfg = root(kCosineConfig);
  auto opt = loader_->registry().instantiate<ft::Optimizer>(cfg.table("optimizer"), {{p}});
  auto sched = loader_->registry().instantiate<ft::LRScheduler>(cfg.table("lr_scheduler"), {opt.get(), 100, 54});
  EXPECT_EQ(sched->last_epoch(), 55);
  EXPECT_NEAR(opt->lr(), 0.5, 1e-12);
}

TEST_F(Components, DiskLoggerWritesTorchtuneTextAndJsonl) {
  auto dir = boost::filesystem::path(fttest::write_temp("x", "")).parent_path().string();
  for (std::string fmt : {"txt", "jsonl"}) {
    auto cfg = root("[metric_logger]\n_component_ = \"torchtune.training.metric_logging.DiskLogger\"\nlog_dir = \"" +
                    dir + "\"\nfilename = \"m." + fmt + "\"\noutput_fmt = \"" + fmt + "\"\n");
    auto logger = loader_->registry().instantiate<ft::MetricLogger>(cfg.table("metric_logger"));
    logger->log_dict({{"loss", 0.5}, {"lr", 2e-05}}, 1);
    logger->log("tokens_per_second", 12.0, 2);
    EXPECT_EQ(logger->close(0), std::nullopt);
    const std::string text = fttest::read_file(dir + "/m." + fmt);
    if (fmt == "txt")
      EXPECT_EQ(text, "Step 1 | loss:0.5 lr:2e-05 \nStep 2 | tokens_per_second:12 \n");
    else
      EXPECT_EQ(text, "{\"step\": 1, \"loss\": 0.5, \"lr\": 2e-05}\n{\"step\": 2, \"tokens_per_second\": 12}\n");
  }
}

}  // namespace

namespace {

class ModelAndLossErrors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    loader_ = new fthost::PluginLoader;
    loader_->load_all({{FT_BUILTIN_PLUGIN_DIR, "default"}});
  }
  static void TearDownTestSuite() { delete loader_; }
  static ft::ConfigNode root(const std::string& text) {
    return ft::detail::root_node(fthost::load_config(fttest::write_temp("run.toml", text), {}));
  }
  template <class Interface>
  static std::string error_of(const std::string& text, typename Interface::Args args = {}) {
    auto cfg = root(text);
    const std::string key = std::string(ft::kind_name(Interface::kind));
    return fttest::error_of([&] { loader_->registry().instantiate<Interface>(cfg.table(key), args); });
  }
  static fthost::PluginLoader* loader_;
};
fthost::PluginLoader* ModelAndLossErrors::loader_ = nullptr;

const char* kTinyLlama = R"(
[model]
_component_ = "torchtune.models.llama3.llama3"
vocab_size = 64
num_layers = 1
num_heads = 4
num_kv_heads = 2
embed_dim = 32
max_seq_len = 16
)";

std::string with(const std::string& base, const std::string& extra) { return base + extra + "\n"; }

TEST_F(ModelAndLossErrors, ModelBuildersNameTheInconsistentKey) {
  std::string no_layers = kTinyLlama;
  no_layers.replace(no_layers.find("num_layers = 1"), 14, "num_layers = 0");
  EXPECT_NE(error_of<ft::Model>(no_layers).find("num_layers must be positive"), std::string::npos);
  const std::string heads = R"(
[model]
_component_ = "torchtune.models.llama3.llama3"
vocab_size = 64
num_layers = 1
num_heads = 3
num_kv_heads = 2
embed_dim = 32
max_seq_len = 16
)";
  EXPECT_NE(error_of<ft::Model>(heads).find("num_heads (3) must be a multiple of num_kv_heads (2)"), std::string::npos);
  EXPECT_NE(error_of<ft::Model>(with(kTinyLlama, "attn_dropout = 0.1")).find("model.attn_dropout"), std::string::npos);
  EXPECT_NE(error_of<ft::Model>(with(kTinyLlama, "vocab = 3")).find("model.vocab: unknown key"), std::string::npos);
}

TEST_F(ModelAndLossErrors, HfConfigBuilderNamesTheJsonField) {
  auto config_json = [](const std::string& body) {
    return "[model]\n_component_ = \"fthost.models.from_hf_config\"\npath = \"" +
           fttest::write_temp("config.json", body) + "\"\n";
  };
  const std::string llama = R"({"model_type": "llama", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64,
    "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 16,
    "rms_norm_eps": 1e-5, "rope_theta": 10000.0)";
  EXPECT_NE(
      error_of<ft::Model>(config_json(R"({"model_type": "gpt2"})")).find("\"gpt2\" is not a supported architecture"),
      std::string::npos);
  EXPECT_NE(
      error_of<ft::Model>(config_json(llama + R"(, "hidden_act": "gelu"})")).find("\"hidden_act\": only \"silu\""),
      std::string::npos);
  EXPECT_NE(error_of<ft::Model>(config_json(llama + R"(, "hidden_size": "wide"})"))
                .find("\"hidden_size\": expected an integer"),
            std::string::npos);
  EXPECT_NE(error_of<ft::Model>(config_json("{not json")).find("not valid JSON"), std::string::npos);
  auto model = loader_->registry().instantiate<ft::Model>(root(config_json(llama + "}")).table("model"));
  EXPECT_EQ(model->vocab_size(), 64);
}

TEST_F(ModelAndLossErrors, ForwardRejectsTokensTheModelCannotEmbed) {
  auto model = loader_->registry().instantiate<ft::Model>(root(kTinyLlama).table("model"));
  auto too_big = torch::tensor({{1, 2, 64}}, torch::kLong);
  EXPECT_NE(fttest::error_of([&] { model->forward({too_big}); }).find("token id 64 is outside the vocabulary [0, 64)"),
            std::string::npos);
  auto too_long = torch::zeros({1, 17}, torch::kLong);
  EXPECT_NE(fttest::error_of([&] { model->forward({too_long}); }).find("exceeds max_seq_len 16"), std::string::npos);
  auto out = model->forward({torch::zeros({2, 5}, torch::kLong)}, {2, false});
  ASSERT_EQ(out.logits.size(), 2u);
  EXPECT_EQ(out.logits[0].sizes(), (std::vector<int64_t>{2, 3, 64}));
  EXPECT_EQ(out.logits[1].sizes(), (std::vector<int64_t>{2, 2, 64}));
}

TEST_F(ModelAndLossErrors, LossesRefuseWhatTheyDoNotImplement) {
  EXPECT_NE(error_of<ft::Loss>("[loss]\n_component_ = \"torch.nn.CrossEntropyLoss\"\nreduction = \"sum\"\n")
                .find("loss.reduction"),
            std::string::npos);
  EXPECT_NE(error_of<ft::Loss>("[loss]\n_component_ = \"torch.nn.CrossEntropyLoss\"\nlabel_smoothing = 0.1\n")
                .find("label smoothing is not supported"),
            std::string::npos);
  EXPECT_NE(error_of<ft::Loss>(
                "[loss]\n_component_ = \"torchtune.modules.loss.CEWithChunkedOutputLoss\"\nnum_output_chunks = 0\n")
                .find("must be at least 1, got 0"),
            std::string::npos);
}

// The three losses are the same sum: chunking and skipping ignored positions change memory, not values.
TEST_F(ModelAndLossErrors, LossesAgreeOnTheSameOutput) {
  auto model = loader_->registry().instantiate<ft::Model>(root(kTinyLlama).table("model"));
  auto tokens = torch::randint(0, 64, {2, 9}, torch::kLong);
  auto targets = torch::randint(0, 64, {2, 9}, torch::kLong);
  targets.index_put_({0, torch::indexing::Slice(0, 4)}, -100);
  std::vector<double> sums;
  for (const char* name : {"torch.nn.CrossEntropyLoss", "torchtune.modules.loss.CEWithChunkedOutputLoss",
                           "torchtune.modules.loss.LinearCrossEntropyLoss"}) {
    auto loss = loader_->registry().instantiate<ft::Loss>(
        root(std::string("[loss]\n_component_ = \"") + name + "\"\n").table("loss"));
    auto out = model->forward({tokens}, loss->output_request());
    sums.push_back(loss->sum(out, targets, *model).item<double>());
  }
  // Reference: the mean cross-entropy over the 14 kept targets, times 14.
  auto logits = model->forward({tokens}).logits[0];
  const double reference =
      torch::nn::functional::cross_entropy(logits.reshape({-1, 64}), targets.reshape({-1}),
                                           torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100))
          .item<double>() *
      14.0;
  for (double s : sums) EXPECT_NEAR(s, reference, 1e-4 * std::abs(reference));
}

}  // namespace
