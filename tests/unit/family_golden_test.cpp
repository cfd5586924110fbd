// The newer families, mixtures of experts included, against their golden trajectories
// (tests/golden/make_family_goldens.py: torchtune's model code where it computes what the
// published model does, transformers' modeling code where it does not): the real fthost binary
// trains each tiny Hugging Face fixture, under every loss, over 2 FSDP ranks, and split over 2
// tensor-parallel, expert-parallel or context-parallel ranks, and must reproduce every step and the final weights
// within the fixtures' README tolerances.
#include "golden_cases.h"
#include "test_helpers.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace {

using namespace fttest::golden;

TEST(FamilyGoldens, GenerationHoldsTheseCasesEachWithAnIndependentReference) {
  const std::string dir = family_golden_dir();
  ASSERT_TRUE(boost::filesystem::exists(dir + "/.complete")) << dir;
  std::set<std::string> generated, expected;
  const json cases = read_json(dir + "/cases.json");
  for (const auto& [name, c] : cases.items()) {
    generated.insert(name);
    const std::string reference = c.at("reference").get<std::string>();
    EXPECT_TRUE(reference == "torchtune" || reference == "transformers") << name << ": " << reference;
  }
  for (const auto& name : family_case_names()) expected.insert(name);
  EXPECT_EQ(generated, expected);
}

class FamilyTrajectory : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(FamilyTrajectory, MatchesTheReference) {
  const GoldenCase& gc = GetParam();
  const std::string out = fttest::temp_dir();
  const auto r = fttest::run_fthost("--config " + fttest::write_temp("run.toml", config_for(gc.name, gc.loss, out)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_matches_golden(gc.name, out, r.output);
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyTrajectory, ::testing::ValuesIn(with_every_loss(family_case_names())),
                         [](const auto& param_info) { return case_test_name(param_info.param); });

const char* kChunked = "torchtune.modules.loss.CEWithChunkedOutputLoss";
const char* kLinear = "torchtune.modules.loss.LinearCrossEntropyLoss";

struct LayoutCase {
  std::string name;
  std::string golden;
  std::string loss;
  int batch_size;  // per rank
  int grad_accum;
  std::string overrides;
};

void PrintTo(const LayoutCase& c, std::ostream* os) { *os << c.name; }

class FamilyLayout : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(FamilyLayout, TwoRanksMatchTheReference) {
  const LayoutCase& c = GetParam();
  const std::string out = fttest::temp_dir();
  const std::string config =
      fttest::write_temp("run.toml", config_for(c.golden, c.loss, out, c.batch_size, c.grad_accum));
  const auto r = fttest::run_fthost("--nproc-per-node 2 --config " + config + " " + c.overrides);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_matches_golden(c.golden, out, r.output);
  if (c.overrides.find("expert_parallel_dim=2") != std::string::npos) {
    EXPECT_NE(r.output.find("expert parallelism: 4 experts per layer over 2 ranks, 2 on each"), std::string::npos)
        << r.output;
  }
}

const std::string kTp2 = "tensor_parallel_dim=2 tensor_parallel_plan._component_=";
const std::string kCp2 = "context_parallel_dim=2 ";
const std::string kAllToAll = "context_parallel_rotate_method=alltoall";

// FSDP: the cases' 2 x 2 samples per step as 2 ranks x 2 (qwen3_untied: 2 ranks x 1). Tensor
// parallelism: both ranks read the case's own batches. Gemma's single key/value head cannot be
// split (torchtune has no tensor-parallel plan for Gemma either).
INSTANTIATE_TEST_SUITE_P(
    Families, FamilyLayout,
    ::testing::Values(
        LayoutCase{"fsdp_qwen3_tied", "qwen3_tied_ga2_clip", kChunked, 2, 1, ""},
        LayoutCase{"fsdp_qwen3_untied", "qwen3_untied", kChunked, 1, 1, ""},
        LayoutCase{"fsdp_gemma", "gemma_tied_ga2_clip", kChunked, 2, 1, ""},
        LayoutCase{"fsdp_gemma2_linear", "gemma2_ga2_clip", kLinear, 2, 1, ""},
        LayoutCase{"fsdp_mistral_sliding", "mistral_sliding_ga2_clip", kChunked, 2, 1, ""},
        LayoutCase{"fsdp_phi3", "phi3_untied_ga2_clip", kChunked, 2, 1, ""},
        LayoutCase{"tp2_qwen3", "qwen3_tied_ga2_clip", kChunked, 0, 0, kTp2 + "torchtune.models.qwen3.tp_plan"},
        LayoutCase{"tp2_gemma2_linear", "gemma2_ga2_clip", kLinear, 0, 0,
                   kTp2 + "torchtune.models.llama3.base_llama_tp_plan"},
        LayoutCase{"tp2_gemma2_chunked", "gemma2_ga2_clip", kChunked, 0, 0,
                   kTp2 + "torchtune.models.llama3.base_llama_tp_plan"},
        LayoutCase{"tp2_mistral_sliding", "mistral_sliding_ga2_clip", kChunked, 0, 0,
                   kTp2 + "torchtune.models.llama3.base_llama_tp_plan"},
        LayoutCase{"tp2_phi3", "phi3_untied_ga2_clip", kChunked, 0, 0,
                   kTp2 + "torchtune.models.llama3.base_llama_tp_plan"},
        LayoutCase{"fsdp_qwen3_moe", "qwen3_moe_ga2_clip", kChunked, 2, 1, ""},
        LayoutCase{"fsdp_mixtral_linear", "mixtral_ga2_clip", kLinear, 2, 1, ""},
        LayoutCase{"fsdp_llama4_conditional", "llama4_conditional_text", kChunked, 1, 1, ""},
        LayoutCase{"tp2_qwen3_moe", "qwen3_moe_ga2_clip", kChunked, 0, 0, kTp2 + "fthost.models.qwen3_moe.tp_plan"},
        LayoutCase{"tp2_llama4_conditional_linear", "llama4_conditional_text", kLinear, 0, 0,
                   kTp2 + "torchtune.models.llama4.decoder_only_tp_plan"},
        // Expert parallelism: each rank holds half of every layer's experts; the same numbers.
        LayoutCase{"ep2_fsdp_qwen3_moe", "qwen3_moe_ga2_clip", kChunked, 2, 1, "expert_parallel_dim=2"},
        LayoutCase{"ep2_ddp_mixtral_linear", "mixtral_ga2_clip", kLinear, 2, 1,
                   "expert_parallel_dim=2 parallelism._component_=fthost.parallelism.ddp"},
        LayoutCase{"ep2_fsdp_llama4_conditional", "llama4_conditional_text", kChunked, 1, 1, "expert_parallel_dim=2"},
        // Context parallelism: both ranks read the case's own batches, each holding two of the four
        // chunks of every sequence; the mask kinds, soft caps and key/value layouts of every family.
        // Every family under both rotate methods.
        LayoutCase{"cp2_qwen3", "qwen3_tied_ga2_clip", kChunked, 0, 0, kCp2},
        LayoutCase{"cp2_qwen3_alltoall", "qwen3_tied_ga2_clip", kChunked, 0, 0, kCp2 + kAllToAll},
        LayoutCase{"cp2_gemma_multi_query", "gemma_tied_ga2_clip", kChunked, 0, 0, kCp2},
        LayoutCase{"cp2_gemma_multi_query_alltoall", "gemma_tied_ga2_clip", kChunked, 0, 0, kCp2 + kAllToAll},
        LayoutCase{"cp2_gemma2_soft_caps_linear", "gemma2_ga2_clip", kLinear, 0, 0, kCp2},
        LayoutCase{"cp2_gemma2_soft_caps_alltoall", "gemma2_ga2_clip", kChunked, 0, 0, kCp2 + kAllToAll},
        LayoutCase{"cp2_mistral_sliding", "mistral_sliding_ga2_clip", kChunked, 0, 0, kCp2},
        LayoutCase{"cp2_mistral_sliding_alltoall", "mistral_sliding_ga2_clip", kChunked, 0, 0, kCp2 + kAllToAll},
        LayoutCase{"cp2_phi3", "phi3_untied_ga2_clip", kChunked, 0, 0, kCp2},
        LayoutCase{"cp2_phi3_alltoall", "phi3_untied_ga2_clip", kChunked, 0, 0, kCp2 + kAllToAll},
        LayoutCase{"cp2_qwen3_moe", "qwen3_moe_ga2_clip", kChunked, 0, 0, kCp2},
        LayoutCase{"cp2_qwen3_moe_alltoall", "qwen3_moe_ga2_clip", kChunked, 0, 0, kCp2 + kAllToAll},
        LayoutCase{"cp2_mixtral_linear", "mixtral_ga2_clip", kLinear, 0, 0, kCp2},
        LayoutCase{"cp2_mixtral_linear_alltoall", "mixtral_ga2_clip", kLinear, 0, 0, kCp2 + kAllToAll},
        LayoutCase{"cp2_llama4_conditional_chunked_attention", "llama4_conditional_text", kChunked, 0, 0, kCp2},
        LayoutCase{"cp2_llama4_conditional_chunked_attention_alltoall", "llama4_conditional_text", kChunked, 0, 0,
                   kCp2 + kAllToAll}),
    [](const auto& param_info) { return param_info.param.name; });

// A saved Phi-3 checkpoint fuses q/k/v and gate/up again, as Hugging Face stores them.
// Four ranks, the experts split over pairs of them: each expert is held by two ranks, which shard
// it (FSDP) or all-reduce its gradient (DDP) between them; or, as tensor_parallel_dim 2 x
// expert_parallel_dim 2, an expert's hidden features split as well.
class FourRankExpertLayout : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(FourRankExpertLayout, MatchesTheReference) {
  const LayoutCase& c = GetParam();
  const std::string out = fttest::temp_dir();
  const std::string config =
      fttest::write_temp("run.toml", config_for(c.golden, c.loss, out, c.batch_size, c.grad_accum));
  const auto r = fttest::run_fthost("--nproc-per-node 4 --config " + config + " expert_parallel_dim=2 " + c.overrides);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_matches_golden(c.golden, out, r.output);
  EXPECT_NE(r.output.find("expert parallelism: 4 experts per layer over 2 ranks"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Families, FourRankExpertLayout,
                         ::testing::Values(LayoutCase{"fsdp_qwen3_moe", "qwen3_moe_ga2_clip", kChunked, 1, 1, ""},
                                           LayoutCase{"ddp_mixtral", "mixtral_ga2_clip", kChunked, 1, 1,
                                                      "parallelism._component_=fthost.parallelism.ddp"},
                                           LayoutCase{"tp2_qwen3_moe", "qwen3_moe_ga2_clip", kChunked, 2, 1,
                                                      kTp2 + "fthost.models.qwen3_moe.tp_plan"}),
                         [](const auto& param_info) { return param_info.param.name; });

// Each rank's optimizer state holds its own experts' moments: every rank's is saved, and a run
// resumed mid-epoch ends with the uninterrupted run's weights, bit for bit; resuming with another
// expert_parallel_dim is refused.
TEST(FamilyLayouts, ExpertParallelRunResumesMidEpochBitwise) {
  const std::string ep2 = " --nproc-per-node 2 expert_parallel_dim=2";
  const std::string full = fttest::temp_dir();
  const auto a = fttest::run_fthost(
      "--config " + fttest::write_temp("run.toml", config_for("qwen3_moe_ga2_clip", kChunked, full, 2, 1)) + ep2 +
      " save_every_n_steps=4");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  expect_matches_golden("qwen3_moe_ga2_clip", full, a.output);
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_TRUE(std::filesystem::exists(full + "/step_4/recipe_state/optimizer-rank-0000" + std::to_string(rank) +
                                        "-of-00002.safetensors"));

  const std::string resumed = fttest::temp_dir();
  const std::string resumed_config =
      fttest::write_temp("run.toml", config_for("qwen3_moe_ga2_clip", kChunked, resumed, 2, 1));
  const auto b = fttest::run_fthost("--config " + resumed_config + ep2 + " resume_from_checkpoint=" + full + "/step_4");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_TRUE(fttest::read_file(resumed + "/epoch_0/model.safetensors") ==
              fttest::read_file(full + "/epoch_0/model.safetensors"));

  const auto c = fttest::run_fthost("--config " + resumed_config +
                                    " --nproc-per-node 2 resume_from_checkpoint=" + full + "/step_4");
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_NE(c.output.find("written by a run with expert_parallel_dim = 2, this run has 1"), std::string::npos)
      << c.output;
}

TEST(FamilyLayouts, ExpertParallelismRefusesWhatItCannotSplit) {
  auto refused = [](const std::string& golden, const std::string& ranks, const std::string& overrides,
                    const std::string& expected) {
    const std::string out = fttest::temp_dir();
    const std::string config = fttest::write_temp("run.toml", config_for(golden, kChunked, out, 1, 1));
    const auto r = fttest::run_fthost("--nproc-per-node " + ranks + " --config " + config + " " + overrides);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
  };
  // 4 experts per layer.
  refused("qwen3_moe_ga2_clip", "3", "expert_parallel_dim=3",
          "expert_parallel_dim: 3 does not divide the model's 4 experts per layer");
  refused("qwen3_moe_ga2_clip", "2", "expert_parallel_dim=4",
          "expert_parallel_dim: 4 does not divide the 2 data-parallel ranks of this run");
  refused("qwen3_tied_ga2_clip", "2", "expert_parallel_dim=2",
          "expert_parallel_dim: 2: the model has no mixture-of-experts layer");
}

// The load-balancing loss multiplies two averages over every token of the batch; no rank of a
// context-parallel group holds them all.
TEST(FamilyLayouts, ContextParallelismRefusesTheLoadBalancingLoss) {
  const std::string out = fttest::temp_dir();
  const std::string config = fttest::write_temp("run.toml", config_for("qwen3_moe_aux", kChunked, out, 0, 0));
  const auto r = fttest::run_fthost("--nproc-per-node 2 --config " + config + " " + kCp2);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("context_parallel_dim: 2: the router's load-balancing loss (output_router_logits)"),
            std::string::npos)
      << r.output;
}

TEST(FamilyCheckpoints, Phi3SavesTheFusedProjections) {
  const std::string out = fttest::temp_dir();
  const auto r = fttest::run_fthost("--config " +
                                    fttest::write_temp("run.toml", config_for("phi3_untied_ga2_clip", kChunked, out)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto saved = read_saved_model(out + "/epoch_0");
  EXPECT_TRUE(saved.count("model.layers.0.self_attn.qkv_proj.weight"));
  EXPECT_TRUE(saved.count("model.layers.1.mlp.gate_up_proj.weight"));
  EXPECT_FALSE(saved.count("model.layers.0.self_attn.q_proj.weight"));
  EXPECT_FALSE(saved.count("model.layers.0.mlp.gate_proj.weight"));
  const json config = read_json(out + "/epoch_0/config.json");
  EXPECT_EQ(config.at("model_type"), "phi3");
}

// A Llama4ForConditionalGeneration checkpoint finetuned on text: the language model trains (the
// trajectory test), and the vision tower and projector come back bit for bit, with the source's
// config.json and exactly its key set.
TEST(FamilyCheckpoints, Llama4ConditionalGenerationKeepsItsVisionWeightsBitwise) {
  const std::string out = fttest::temp_dir();
  const auto r = fttest::run_fthost(
      "--config " + fttest::write_temp("run.toml", config_for("llama4_conditional_text", kChunked, out)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string fixture = fixture_of("llama4_conditional_text");
  const auto before = read_safetensors(fixture + "/model.safetensors");
  const auto after = read_safetensors(out + "/epoch_0/model.safetensors");
  std::set<std::string> before_names, after_names;
  for (const auto& [name, t] : before) before_names.insert(name);
  for (const auto& [name, t] : after) after_names.insert(name);
  EXPECT_EQ(before_names, after_names);
  std::size_t vision = 0, trained = 0;
  for (const auto& [name, t] : before) {
    if (!after.count(name)) continue;
    if (name.rfind("language_model.", 0) == 0) {
      trained += after.at(name).bytes != t.bytes;
    } else {
      ++vision;
      EXPECT_TRUE(after.at(name) == t) << name;
    }
  }
  EXPECT_GT(vision, 10u);
  EXPECT_GT(trained, 10u);  // the language model did train
  EXPECT_EQ(read_json(out + "/epoch_0/config.json").at("vision_config"),
            read_json(fixture + "/config.json").at("vision_config"));
}

// Mixture-of-experts settings a family cannot compute are refused before anything is built,
// naming the config.json key.
TEST(FamilyScope, ExpertKeysTheFamilyCannotComputeAreRefusedByName) {
  const auto refused = [](const std::string& case_name, const std::string& key, const json& value) {
    const std::string fixture = fixture_of(case_name);
    json config = read_json(fixture + "/config.json");
    config[key] = value;
    const std::string dir = fttest::temp_dir();
    std::ofstream(dir + "/config.json") << config.dump();
    // The run reads the model's architecture from the changed config.json, everything else as
    // the case has it.
    std::string run = config_for(case_name, kChunked, fttest::temp_dir());
    const std::string from = "path = \"" + fixture + "\"";
    run.replace(run.find(from), from.size(), "path = \"" + dir + "\"");
    const auto r = fttest::run_fthost("--config " + fttest::write_temp("run.toml", run));
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("\"" + key + "\""), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("Loss:"), std::string::npos) << r.output;  // refused before training
  };
  refused("qwen3_moe_ga2_clip", "num_experts_per_tok", 5);  // 4 experts
  refused("qwen3_moe_ga2_clip", "n_group", 8);              // DeepSeek's grouped routing
  refused("mixtral_ga2_clip", "router_jitter_noise", 0.01);
  refused("llama4_text_ga2_clip", "attention_chunk_size", nullptr);
}

// torchtune's Vision configs: refused in one line that says why, not as a typo.
TEST(FamilyScope, MultimodalBuildersAreRefusedAsSuch) {
  const std::string out = fttest::temp_dir();
  const std::string base = config_for("qwen3_untied", kChunked, out);
  for (const auto& [component, reason] : std::vector<std::pair<std::string, std::string>>{
           {"torchtune.models.clip.clip_vision_encoder", "multimodal model"}}) {
    const auto r = fttest::run_fthost("validate --config " + fttest::write_temp("run.toml", base) +
                                      " model._component_=" + component);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("'" + component + "' "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(reason), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("did you mean"), std::string::npos) << r.output;
  }
}

}  // namespace
