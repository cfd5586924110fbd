// The safetensors reader and writer against the format specification
// (https://github.com/huggingface/safetensors): the golden fixtures (written by Hugging Face's
// own library) read back with the shapes their config.json implies, the writer's bytes equal a
// file worked out by hand from the spec, and every malformed file is rejected by name.
#include "safetensors.h"
#include "test_helpers.h"

#include <ft/errors.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <stdlib.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using ft_checkpointers::SafetensorsFile;
using fttest::TempDir;

std::string fixture(const std::string& name) { return fttest::fixtures_dir() + "/golden/fixtures/" + name; }

void write_bytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// A file of the given header text (length prefixed as the spec says) followed by `buffer`.
std::string safetensors_bytes(const std::string& header, const std::string& buffer) {
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + buffer;
}

std::string open_error(const std::string& path) {
  return fttest::error_of<ft::Error>([&] { SafetensorsFile f(path); });
}

// --- The golden fixtures ----------------------------------------------------------------------

// name -> shape of every tensor a Hugging Face Llama / Qwen2 checkpoint of `config` holds.
std::map<std::string, std::vector<std::int64_t>> expected_tensors(const nlohmann::json& config) {
  const std::int64_t hidden = config["hidden_size"], inter = config["intermediate_size"],
                     layers = config["num_hidden_layers"], vocab = config["vocab_size"],
                     heads = config["num_attention_heads"], kv_heads = config["num_key_value_heads"],
                     head_dim = config["head_dim"];
  const bool qwen = config["model_type"] == "qwen2";
  std::map<std::string, std::vector<std::int64_t>> out;
  out["model.embed_tokens.weight"] = {vocab, hidden};
  out["model.norm.weight"] = {hidden};
  if (!config["tie_word_embeddings"].get<bool>()) out["lm_head.weight"] = {vocab, hidden};
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    out[p + "input_layernorm.weight"] = {hidden};
    out[p + "post_attention_layernorm.weight"] = {hidden};
    out[p + "self_attn.q_proj.weight"] = {heads * head_dim, hidden};
    out[p + "self_attn.k_proj.weight"] = {kv_heads * head_dim, hidden};
    out[p + "self_attn.v_proj.weight"] = {kv_heads * head_dim, hidden};
    out[p + "self_attn.o_proj.weight"] = {hidden, heads * head_dim};
    out[p + "mlp.gate_proj.weight"] = {inter, hidden};
    out[p + "mlp.up_proj.weight"] = {inter, hidden};
    out[p + "mlp.down_proj.weight"] = {hidden, inter};
    if (qwen) {
      out[p + "self_attn.q_proj.bias"] = {heads * head_dim};
      out[p + "self_attn.k_proj.bias"] = {kv_heads * head_dim};
      out[p + "self_attn.v_proj.bias"] = {kv_heads * head_dim};
    }
  }
  return out;
}

void expect_fixture_matches_config(const std::string& name, c10::ScalarType dtype) {
  const auto config = nlohmann::json::parse(fttest::read_file(fixture(name) + "/config.json"));
  SafetensorsFile file(fixture(name) + "/model.safetensors");
  const auto expected = expected_tensors(config);
  std::map<std::string, std::vector<std::int64_t>> actual;
  for (const auto& r : file.records()) {
    actual[r.name] = r.shape;
    EXPECT_EQ(r.dtype, dtype) << name << ": " << r.name;
    const at::Tensor t = file.tensor(r);
    EXPECT_EQ(t.sizes().vec(), r.shape);
    EXPECT_EQ(t.scalar_type(), dtype);
    EXPECT_TRUE(t.isfinite().all().item<bool>()) << name << ": " << r.name;
  }
  EXPECT_EQ(actual, expected) << name;
  EXPECT_EQ(file.metadata().at("format"), "pt");
}

TEST(Safetensors, GoldenFixturesHoldTheTensorsTheirConfigDescribes) {
  expect_fixture_matches_config("llama3_untied", at::kFloat);
  expect_fixture_matches_config("llama31_tied", at::kFloat);
  expect_fixture_matches_config("qwen2_tied_bf16", at::kBFloat16);
}

TEST(Safetensors, TensorsOutliveTheFileObjectAndShareTheMapping) {
  at::Tensor a, b;
  {
    SafetensorsFile file(fixture("llama3_untied") + "/model.safetensors");
    a = file.tensor("model.norm.weight");
    b = file.tensor("model.norm.weight");
  }
  EXPECT_EQ(a.data_ptr(), b.data_ptr());  // zero-copy views of the same mapped bytes
  EXPECT_TRUE(at::equal(a, b));
  EXPECT_GT(a.abs().sum().item<double>(), 0.0);
}

// --- Writer -----------------------------------------------------------------------------------

TEST(Safetensors, WriterBytesEqualTheSpecWorkedByHand) {
  TempDir dir;
  const std::string path = dir.file("two.safetensors");
  ft_checkpointers::write_safetensors(
      path, {{"a", at::tensor({1.0f, -2.0f})}, {"b", at::tensor({1, -2}, at::kShort).reshape({1, 2})}},
      {{"format", "pt"}});

  // 141 bytes of JSON padded with 3 spaces to 144 = 0x90, then F32 1.0, -2.0 and I16 1, -2, all
  // little-endian.
  const std::string header = R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"I16","shape":[1,2],"data_offsets":[8,12]}})"
                             "   ";
  const std::string expected = std::string("\x90\0\0\0\0\0\0\0", 8) + header +
                               std::string(
                                   "\x00\x00\x80\x3f"
                                   "\x00\x00\x00\xc0"
                                   "\x01\x00"
                                   "\xfe\xff",
                                   12);
  EXPECT_EQ(fttest::read_file(path), expected);
  EXPECT_FALSE(fs::exists(path + ".tmp-" + std::to_string(::getpid())));
}

TEST(Safetensors, RoundTripsEveryDtypeShapeAndLayout) {
  TempDir dir;
  at::manual_seed(7);
  std::vector<ft::NamedTensor> tensors = {
      {"f32", at::randn({3, 5})},
      {"bf16", at::randn({4, 2}).to(at::kBFloat16)},
      {"f16", at::randn({7}).to(at::kHalf)},
      {"f64", at::randn({2, 2}, at::kDouble)},
      {"i64", at::arange(-5, 6, at::kLong).reshape({11, 1})},
      {"i32", at::arange(0, 6, at::kInt)},
      {"i16", at::arange(-3, 3, at::kShort)},
      {"i8", at::arange(-128, 128, 16, at::kChar)},
      {"u8", at::arange(0, 256, 51, at::kByte)},
      {"bool", at::tensor({1, 0, 1}) > 0},  // (at::tensor has no bool overload in LibTorch 1.13)
      {"scalar", at::tensor(3.5f).reshape({})},
      {"empty", at::zeros({0, 3})},
      {"transposed", at::arange(12, at::kFloat).reshape({3, 4}).t()},  // not contiguous
  };
  const std::string path = dir.file("all.safetensors");
  ft_checkpointers::write_safetensors(path, tensors, {{"format", "pt"}, {"note", "round trip"}});

  SafetensorsFile file(path);
  ASSERT_EQ(file.records().size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(file.records()[i].name, tensors[i].name);  // written in the order given
    const at::Tensor back = file.tensor(tensors[i].name);
    EXPECT_EQ(back.scalar_type(), tensors[i].tensor.scalar_type()) << tensors[i].name;
    EXPECT_EQ(back.sizes(), tensors[i].tensor.sizes()) << tensors[i].name;
    EXPECT_TRUE(at::equal(back, tensors[i].tensor)) << tensors[i].name;
  }
  EXPECT_EQ(file.metadata().at("note"), "round trip");
  const auto raw = fttest::read_file(path);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(raw[i]);
  EXPECT_EQ(n % 8, 0u);
}

TEST(Safetensors, WriterRejectsWhatTheFormatCannotHold) {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  auto complex = fttest::error_of<ft::Error>([&] {
    ft_checkpointers::write_safetensors(path, {{"c", at::zeros({2}, at::kComplexFloat)}});
  });
  EXPECT_NE(complex.find("tensor \"c\""), std::string::npos) << complex;
  EXPECT_NE(complex.find("cannot be stored"), std::string::npos) << complex;
  auto twice = fttest::error_of<ft::Error>([&] {
    ft_checkpointers::write_safetensors(path, {{"x", at::zeros({1})}, {"x", at::zeros({1})}});
  });
  EXPECT_NE(twice.find("\"x\": given twice"), std::string::npos) << twice;
  EXPECT_FALSE(fs::exists(path));
}

TEST(Safetensors, ShardsLikeHuggingFaceWithAnIndex) {
  TempDir dir;
  // 400 + 400 bytes fill the first shard, 1200 (over the limit) gets its own, 100 starts a third.
  std::vector<ft::NamedTensor> tensors = {
      {"t0", at::randn({100})}, {"t1", at::randn({10, 10})}, {"t2", at::randn({300})}, {"t3", at::randn({25})}};
  auto written = ft_checkpointers::write_sharded_safetensors(dir.str(), tensors, 1000, {{"format", "pt"}});
  const std::vector<std::string> files = {"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                                          "model-00003-of-00003.safetensors"};
  EXPECT_EQ(written.files, files);
  EXPECT_EQ(written.total_size, 2100u);

  const auto index = nlohmann::json::parse(fttest::read_file(dir.file("model.safetensors.index.json")));
  EXPECT_EQ(index["metadata"]["total_size"].get<std::uint64_t>(), 2100u);
  const std::map<std::string, std::string> weight_map = index["weight_map"];
  EXPECT_EQ(weight_map, (std::map<std::string, std::string>{
                            {"t0", files[0]}, {"t1", files[0]}, {"t2", files[1]}, {"t3", files[2]}}));
  EXPECT_FALSE(fs::exists(dir.file("model.safetensors")));

  auto opened = ft_checkpointers::open_checkpoint(dir.str(), {});
  ASSERT_EQ(opened.size(), 3u);
  std::size_t seen = 0;
  for (const auto& f : opened)
    for (const auto& r : f.records()) {
      for (const auto& t : tensors) {
        if (t.name == r.name) {
          EXPECT_TRUE(at::equal(f.tensor(r), t.tensor)) << r.name;
        }
      }
      ++seen;
    }
  EXPECT_EQ(seen, tensors.size());
}

TEST(Safetensors, EverythingInOneShardIsModelSafetensorsWithoutIndex) {
  TempDir dir;
  auto written = ft_checkpointers::write_sharded_safetensors(dir.str(), {{"a", at::ones({4})}, {"b", at::ones({4})}},
                                                             5'000'000'000ULL);
  EXPECT_EQ(written.files, std::vector<std::string>{"model.safetensors"});
  EXPECT_TRUE(fs::exists(dir.file("model.safetensors")));
  EXPECT_FALSE(fs::exists(dir.file("model.safetensors.index.json")));
  EXPECT_EQ(ft_checkpointers::checkpoint_files_in(dir.str(), {}),
            std::vector<std::string>{dir.file("model.safetensors")});
}

TEST(Safetensors, CheckpointDirectoryErrorsNameTheFileAndWhatIsThere) {
  TempDir dir;
  ft_checkpointers::write_safetensors(dir.file("model-a.safetensors"), {{"a", at::ones({1})}});
  auto missing =
      fttest::error_of<ft::Error>([&] { ft_checkpointers::checkpoint_files_in(dir.str(), {"model-b.safetensors"}); });
  EXPECT_NE(missing.find(dir.file("model-b.safetensors") + ": checkpoint file does not exist"), std::string::npos)
      << missing;
  EXPECT_NE(missing.find("model-a.safetensors"), std::string::npos) << missing;

  auto nothing = fttest::error_of<ft::Error>([&] { ft_checkpointers::checkpoint_files_in(dir.str(), {}); });
  EXPECT_NE(nothing.find("no model.safetensors.index.json or model.safetensors"), std::string::npos) << nothing;

  write_bytes(dir.file("pytorch_model.bin"), "pickle");
  auto pickle =
      fttest::error_of<ft::Error>([&] { ft_checkpointers::checkpoint_files_in(dir.str(), {"pytorch_model.bin"}); });
  EXPECT_NE(pickle.find("only .safetensors checkpoints can be read"), std::string::npos) << pickle;

  write_bytes(dir.file("model.safetensors.index.json"),
              R"({"weight_map": {"a": "model-a.safetensors", "b": "model-c.safetensors"}})");
  auto shard = fttest::error_of<ft::Error>([&] { ft_checkpointers::checkpoint_files_in(dir.str(), {}); });
  EXPECT_NE(shard.find("lists shard model-c.safetensors, which does not exist"), std::string::npos) << shard;

  write_bytes(dir.file("model.safetensors.index.json"),
              R"({"weight_map": {"a": "model-a.safetensors", "b": "model-a.safetensors"}})");
  auto wrong = fttest::error_of<ft::Error>([&] { ft_checkpointers::open_checkpoint(dir.str(), {}); });
  EXPECT_NE(wrong.find("maps tensor \"b\" to model-a.safetensors, which does not hold it"), std::string::npos) << wrong;
}

// --- Malformed files, each built by hand ------------------------------------------------------

struct BadCase {
  const char* what;
  std::string bytes;
  std::string expected;  // a part of the message
};

TEST(Safetensors, RejectsEveryMalformedFileByName) {
  const std::string f32_one(4, '\0');
  const std::vector<BadCase> cases = {
      {"short", std::string("\x01\x00\x00", 3), "3 bytes, shorter than the 8-byte header length"},
      {"huge header", std::string("\x00\xe2\xf5\x05\x00\x00\x00\x00", 8) + "{}",
       "header length 100000256 exceeds the limit of 100000000 bytes"},
      {"header past end", std::string("\xe8\x03\x00\x00\x00\x00\x00\x00", 8) + "{}",
       "header length 1000 runs past the end of the file (10 bytes)"},
      {"not json", safetensors_bytes("{\"a\": ", ""), "header is not valid JSON"},
      {"not an object", safetensors_bytes("[1, 2]  ", ""), "header does not start with '{': not a JSON object"},
      {"empty header", safetensors_bytes("", ""), "header does not start with '{'"},
      {"entry not object", safetensors_bytes(R"({"w": 3})", ""), "tensor \"w\": expected an object"},
      {"missing offsets", safetensors_bytes(R"({"w": {"dtype": "F32", "shape": [1]}})", f32_one),
       "tensor \"w\": missing \"data_offsets\""},
      {"missing dtype", safetensors_bytes(R"({"w": {"shape": [1], "data_offsets": [0, 4]}})", f32_one),
       "tensor \"w\": missing \"dtype\""},
      {"unknown dtype",
       safetensors_bytes(R"({"w": {"dtype": "F8_E4M3", "shape": [4], "data_offsets": [0, 4]}})", f32_one),
       "tensor \"w\": unknown dtype \"F8_E4M3\" (supported: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)"},
      {"negative dim", safetensors_bytes(R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", f32_one),
       "tensor \"w\": shape must be a list of non-negative integers, got [-1]"},
      {"fractional dim",
       safetensors_bytes(R"({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", f32_one),
       "tensor \"w\": shape must be a list of non-negative integers"},
      {"offsets past buffer",
       safetensors_bytes(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", f32_one),
       "tensor \"w\": data_offsets [0, 8] run past the end of the 4-byte data buffer"},
      {"end before begin",
       safetensors_bytes(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})", f32_one),
       "tensor \"w\": data_offsets [4, 0] end before begin"},
      {"one offset", safetensors_bytes(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", f32_one),
       "tensor \"w\": data_offsets must be two non-negative integers"},
      {"size mismatch", safetensors_bytes(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", f32_one),
       "tensor \"w\": data_offsets [0, 4] hold 4 bytes but shape [2] of F32 needs 8"},
      {"overlap",
       safetensors_bytes(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                         R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}})",
                         std::string(6, '\0')),
       "tensors \"a\" (bytes 0-4) and \"b\" (bytes 2-6) overlap"},
      {"gap",
       safetensors_bytes(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                         R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
                         std::string(12, '\0')),
       "bytes 4-8 of the data buffer (before tensor \"b\") belong to no tensor"},
      {"trailing bytes",
       safetensors_bytes(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", std::string(8, '\0')),
       "bytes 4-8 at the end of the data buffer belong to no tensor"},
      {"duplicate name",
       safetensors_bytes(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                         R"( "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
                         f32_one),
       "header names \"a\" twice"},
      {"metadata not strings", safetensors_bytes(R"({"__metadata__": {"format": 1}})", ""),
       "__metadata__[\"format\"] must be a string"},
  };
  TempDir dir;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string path = dir.file("bad" + std::to_string(i) + ".safetensors");
    write_bytes(path, cases[i].bytes);
    const std::string message = open_error(path);
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << cases[i].what << ": " << message;
    EXPECT_NE(message.find(cases[i].expected), std::string::npos) << cases[i].what << ": " << message;
  }
  EXPECT_NE(open_error(dir.file("absent.safetensors")).find("cannot open safetensors file"), std::string::npos);
}

TEST(Safetensors, AcceptsAnEmptyFileAndTrailingHeaderSpaces) {
  TempDir dir;
  write_bytes(dir.file("empty.safetensors"), safetensors_bytes("{}      ", ""));
  SafetensorsFile empty(dir.file("empty.safetensors"));
  EXPECT_TRUE(empty.records().empty());
  // A zero-size tensor sits between two others without breaking the tiling.
  write_bytes(dir.file("zero.safetensors"),
              safetensors_bytes(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                                R"( "z": {"dtype": "F32", "shape": [0, 2], "data_offsets": [4, 4]},)"
                                R"( "b": {"dtype": "U8", "shape": [1], "data_offsets": [4, 5]}})",
                                std::string(5, '\x01')));
  SafetensorsFile zero(dir.file("zero.safetensors"));
  EXPECT_EQ(zero.tensor("z").sizes(), at::IntArrayRef({0, 2}));
  EXPECT_EQ(zero.tensor("b").item<std::uint8_t>(), 1);
}

}  // namespace
