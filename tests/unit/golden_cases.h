// The golden cases as fthost run configurations, and independent readers for what a run leaves
// behind (JSONL metrics, float32 safetensors). Two sources, one format: $FT_FIXTURES/golden
// (Llama 3 / 3.1, Qwen 2, computed with torchtune's model code) and the newer families' cases
// that tests/golden/make_family_goldens.py generates into the build tree before the tests run
// (torchtune's or transformers' model code; the ctest fixture `family_goldens`).
#pragma once

#include "jsonl.h"
#include "test_helpers.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fttest::golden {

using nlohmann::json;

inline std::string golden_dir() { return fttest::fixtures_dir() + "/golden"; }

// FT_FAMILY_GOLDENS overrides where the generated cases are (default: the build tree's).
inline std::string family_golden_dir() {
  const char* dir = std::getenv("FT_FAMILY_GOLDENS");
  return dir && *dir ? dir : FT_FAMILY_GOLDEN_DIR;
}

inline json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return json::parse(in);
}

// The newer families' cases (tests/golden/make_family_goldens.py names them; a test checks that
// the generation holds exactly these). Fixed here because test parameters are listed before the
// ctest fixture generates anything.
inline std::vector<std::string> family_case_names() {
  return {"qwen3_tied_ga2_clip",      "qwen3_untied",         "gemma_tied_ga2_clip",     "gemma2_ga2_clip",
          "mistral_sliding_ga2_clip", "phi3_untied_ga2_clip", "qwen3_moe_ga2_clip",      "qwen3_moe_step2_tied",
          "mixtral_ga2_clip",         "llama4_text_ga2_clip", "llama4_conditional_text", "qwen3_moe_aux"};
}

// The directory holding a case: the shared fixtures' or the generated families'.
inline std::string golden_dir_of(const std::string& case_name) {
  static const json shared = read_json(golden_dir() + "/cases.json");
  return shared.contains(case_name) ? golden_dir() : family_golden_dir();
}

inline json case_of(const std::string& case_name) {
  const std::string dir = golden_dir_of(case_name);
  if (dir != golden_dir() && !boost::filesystem::exists(dir + "/.complete"))
    throw std::runtime_error(dir +
                             " holds no complete generation of the family goldens (the ctest fixture "
                             "family_goldens makes it with tests/golden/make_family_goldens.py)");
  return read_json(dir + "/cases.json").at(case_name);
}

inline std::string fixture_of(const std::string& case_name) {
  return golden_dir_of(case_name) + "/" + case_of(case_name).at("fixture").get<std::string>();
}

// The HF checkpointer's model_type for a fixture's config.json model_type.
inline std::string checkpointer_model_type(const std::string& hf_model_type) {
  static const std::map<std::string, std::string> types = {
      {"llama", "LLAMA3"},    {"qwen2", "QWEN2"},        {"qwen3", "QWEN3"},    {"gemma", "GEMMA"},
      {"gemma2", "GEMMA2"},   {"mistral", "MISTRAL"},    {"phi3", "PHI3_MINI"}, {"qwen3_moe", "QWEN3_MOE"},
      {"mixtral", "MIXTRAL"}, {"llama4_text", "LLAMA4"}, {"llama4", "LLAMA4"}};
  return types.at(hf_model_type);
}

using fttest::read_jsonl;

// Every golden case with each loss the recipe is checked under.
struct GoldenCase {
  std::string name;
  std::string loss;
};

inline std::vector<std::string> shared_case_names() {
  return {"llama3_untied_ga2", "llama31_tied_clip", "qwen2_tied_ga2_clip"};
}

inline std::vector<GoldenCase> with_every_loss(const std::vector<std::string>& names) {
  std::vector<GoldenCase> cases;
  for (const auto& name : names)
    for (const char* loss : {"torch.nn.CrossEntropyLoss", "torchtune.modules.loss.CEWithChunkedOutputLoss",
                             "torchtune.modules.loss.LinearCrossEntropyLoss"})
      cases.push_back({name, loss});
  return cases;
}

inline std::vector<GoldenCase> cases_with_every_loss() { return with_every_loss(shared_case_names()); }

inline std::ostream& operator<<(std::ostream& os, const GoldenCase& c) { return os << c.name << " / " << c.loss; }

// A test name for a case: "llama3_untied_ga2_CrossEntropyLoss".
inline std::string case_test_name(const GoldenCase& c) { return c.name + "_" + c.loss.substr(c.loss.rfind('.') + 1); }

inline double rel_diff(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-12); }

// The case's hyperparameters (cases.json, strings) as a run configuration.
// `batch_size` / `grad_accum` 0: the case's own.
inline std::string config_for(const std::string& case_name, const std::string& loss_component,
                              const std::string& out_dir, int batch_size = 0, int grad_accum = 0) {
  const json c = case_of(case_name);
  const json& h = c.at("hyperparameters");
  const std::string fixture = fixture_of(case_name);
  const json hf_config = read_json(fixture + "/config.json");
  const std::string model_type = checkpointer_model_type(hf_config.at("model_type").get<std::string>());
  auto value = [&](const char* key, const std::string& fallback) {
    return h.contains(key) ? h.at(key).get<std::string>() : fallback;
  };
  std::ostringstream toml;
  toml << "output_dir = \"" << out_dir << "\"\n"
       << "seed = 0\nepochs = 1\n"
       << "max_steps_per_epoch = " << value("steps", "") << "\n"
       << "batch_size = " << (batch_size ? std::to_string(batch_size) : value("batch_size", "")) << "\n"
       << "gradient_accumulation_steps = " << (grad_accum ? std::to_string(grad_accum) : value("grad_accum", "1"))
       << "\n"
       << "clip_grad_norm = " << (h.contains("clip_grad_norm") ? value("clip_grad_norm", "") : "\"inf\"") << "\n"
       << "shuffle = " << (h.contains("shuffle") && h.at("shuffle").get<bool>() ? "true" : "false") << "\n"
       << "dtype = \"fp32\"\nnum_threads = 1\n\n"
       << "[model]\n_component_ = \"fthost.models.from_hf_config\"\npath = \"" << fixture << "\"\n\n"
       << "[checkpointer]\n_component_ = \"torchtune.training.FullModelHFCheckpointer\"\n"
       << "checkpoint_dir = \"" << fixture << "\"\ncheckpoint_files = [\"model.safetensors\"]\n"
       << "model_type = \"" << model_type << "\"\noutput_dir = \"" << out_dir << "\"\n\n"
       << "[dataset]\n_component_ = \"fthost.datasets.tokenized_jsonl\"\nsource = \"" << fixture << "/data.jsonl\"\n\n"
       << "[loss]\n_component_ = \"" << loss_component << "\"\n\n"
       << "[optimizer]\n_component_ = \"torch.optim.AdamW\"\nlr = " << value("lr", "") << "\n"
       << "betas = [0.9, 0.999]\neps = 1e-8\nweight_decay = " << value("weight_decay", "0.01") << "\n\n";
  if (h.contains("warmup"))
    toml << "[lr_scheduler]\n_component_ = \"torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup\"\n"
         << "num_warmup_steps = " << value("warmup", "") << "\nnum_cycles = 0.5\n\n";
  toml << "[metric_logger]\n_component_ = \"torchtune.training.metric_logging.DiskLogger\"\n"
       << "log_dir = \"" << out_dir << "/logs\"\nfilename = \"metrics.jsonl\"\noutput_fmt = \"jsonl\"\n";
  return toml.str();
}

// An independent reading of a safetensors file (header JSON, then raw little-endian data): every
// tensor's dtype, shape and bytes.
struct StoredTensor {
  std::string dtype;
  json shape;
  std::string bytes;
  bool operator==(const StoredTensor& o) const { return dtype == o.dtype && shape == o.shape && bytes == o.bytes; }
};
inline std::map<std::string, StoredTensor> read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::uint64_t header_len = 0;
  in.read(reinterpret_cast<char*>(&header_len), 8);
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  const std::string data((std::istreambuf_iterator<char>(in)), {});
  std::map<std::string, StoredTensor> tensors;
  const json entries = json::parse(header);
  for (const auto& [name, entry] : entries.items()) {
    if (name == "__metadata__") continue;
    const auto begin = entry.at("data_offsets")[0].get<std::size_t>();
    const auto end = entry.at("data_offsets")[1].get<std::size_t>();
    tensors[name] = {entry.at("dtype").get<std::string>(), entry.at("shape"), data.substr(begin, end - begin)};
  }
  return tensors;
}

// The float32 tensors' values, for the final-weight statistics.
inline std::map<std::string, std::vector<float>> read_f32_safetensors(const std::string& path) {
  std::map<std::string, std::vector<float>> tensors;
  for (const auto& [name, stored] : read_safetensors(path)) {
    EXPECT_EQ(stored.dtype, "F32") << name;
    std::vector<float> values(stored.bytes.size() / 4);
    std::memcpy(values.data(), stored.bytes.data(), stored.bytes.size());
    tensors[name] = std::move(values);
  }
  return tensors;
}

inline std::map<std::string, std::vector<float>> read_saved_model(const std::string& dir) {
  if (!boost::filesystem::exists(dir + "/model.safetensors.index.json"))
    return read_f32_safetensors(dir + "/model.safetensors");
  std::map<std::string, std::vector<float>> all;
  std::set<std::string> files;
  const json index = read_json(dir + "/model.safetensors.index.json");
  for (const auto& [name, file] : index.at("weight_map").items()) files.insert(file.get<std::string>());
  for (const auto& f : files) all.merge(read_f32_safetensors(dir + "/" + f));
  return all;
}

// Every logged step against the case's expected trajectory, and the saved epoch_0 weights
// against its final-weight statistics, with the fixtures' README tolerances.
inline void expect_matches_golden(const std::string& case_name, const std::string& out, const std::string& run_output) {
  const auto expected = read_jsonl(golden_dir_of(case_name) + "/" + case_name + ".expected.jsonl");
  const auto logged = read_jsonl(out + "/logs/metrics.jsonl");
  ASSERT_EQ(logged.size(), expected.size()) << run_output;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const json& e = expected[i];
    const json& l = logged[i];
    SCOPED_TRACE("step " + std::to_string(i + 1));
    EXPECT_EQ(l.at("step").get<int>(), e.at("step").get<int>());
    EXPECT_EQ(l.at("num_tokens").get<double>(), e.at("num_tokens").get<double>());
    EXPECT_LT(rel_diff(l.at("loss"), e.at("loss")), 2e-4) << l.at("loss") << " vs " << e.at("loss");
    EXPECT_LT(rel_diff(l.at("lr"), e.at("lr")), 2e-4) << l.at("lr") << " vs " << e.at("lr");
    EXPECT_LT(rel_diff(l.at("grad_norm"), e.at("grad_norm")), 2e-4) << l.at("grad_norm") << " vs " << e.at("grad_norm");
    if (e.contains("router_aux_loss")) {
      ASSERT_TRUE(l.contains("router_aux_loss")) << l.dump();
      EXPECT_LT(rel_diff(l.at("router_aux_loss"), e.at("router_aux_loss")), 2e-4)
          << l.at("router_aux_loss") << " vs " << e.at("router_aux_loss");
    }
  }

  const json final_weights = read_json(golden_dir_of(case_name) + "/" + case_name + ".final_weights.json");
  const auto saved = read_saved_model(out + "/epoch_0");
  for (const auto& [tensor, stats] : final_weights.items()) {
    SCOPED_TRACE(tensor);
    auto it = saved.find(tensor);
    ASSERT_NE(it, saved.end()) << "tensor missing from the saved checkpoint";
    double sumsq = 0;
    for (float v : it->second) sumsq += static_cast<double>(v) * v;
    EXPECT_LT(rel_diff(sumsq, stats.at("sumsq")), 1e-4) << sumsq << " vs " << stats.at("sumsq");
    for (std::size_t k = 0; k < 4; ++k)
      EXPECT_NEAR(it->second.at(k), stats.at("first4")[k].get<double>(), 1e-4) << "value " << k;
  }
}

}  // namespace fttest::golden
