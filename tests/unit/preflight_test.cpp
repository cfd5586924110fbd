// The pre-flight check: every file a run will read is checked before anything is built, and
// every problem is reported at once with where the config named it. A new user's copy of a
// shipped config lists its three missing inputs (validate warns, --strict and a run refuse, the
// run in a fraction of its normal footprint); each input kind (tokenizer files, local and Hub
// datasets, checkpoint directories, listed shards, an index's shards, a resumed checkpoint) is
// checked; an unreadable file and a read-only output directory are refused for a user who cannot
// read or write them; a filesystem too small for one checkpoint is refused, one large enough is
// not; and the launcher reports the problems once, not once per rank.
#include "test_helpers.h"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& relative) { return fttest::fixtures_dir() + "/" + relative; }

// The tiny Alpaca run with its inputs found, then `overrides`.
std::string tiny_alpaca(const std::string& overrides) {
  return "--config " + std::string(FT_SOURCE_DIR) +
         "/configs/tiny_alpaca_llama3.toml tokenizer.path=" + fixture("tokenizers/llama3/tokenizer.json") +
         " dataset.source=" + fixture("data/alpaca_tiny.json") + " output_dir=" + fttest::temp_dir() + "/out " +
         overrides;
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

void expect_all_in(const std::string& output, const std::vector<std::string>& parts) {
  for (const auto& part : parts)
    EXPECT_NE(output.find(part), std::string::npos) << "missing: " << part << "\n" << output;
}

struct Measured {
  int exit_code;
  std::string output;
  long peak_rss_kib;
};

// Runs `command` through the shell in a child of its own, with the child's peak RSS.
Measured run_measured(const std::string& command) {
  const std::string log = fttest::temp_dir() + "/output.txt";
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + command + " >" + log + " 2>&1").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, fttest::read_file(log), usage.ru_maxrss};
}

// Who cannot read a mode-000 file: root can, so as root the check runs as nobody.
std::string as_unprivileged(const std::string& command) {
  if (geteuid() != 0) return command;
  return "setpriv --reuid=65534 --regid=65534 --clear-groups " + command;
}

// Every directory from `path` up to the test's temporary root readable by all (mkdtemp makes
// them private), so the unprivileged user can reach the config.
void open_to_all(const fs::path& path) {
  for (fs::path p = path; !p.empty() && p != p.root_path(); p = p.parent_path()) {
    ::chmod(p.c_str(), 0755);
    if (p == fttest::process_temp_root().string()) break;
  }
}

TEST(Preflight, ANewUsersCopyOfAShippedConfigListsEveryMissingInputWithItsLine) {
  ASSERT_FALSE(fs::exists("/tmp/Qwen3-0.6B")) << "the shipped config's model directory exists on this machine";
  const fttest::TempDir dir;
  const std::string hub = dir.file("empty_hub");
  fs::create_directories(hub);
  const auto copied = fttest::run_fthost("cp qwen3/0.6B_full " + dir.file("my.yaml"));
  ASSERT_EQ(copied.exit_code, 0) << copied.output;
  const std::string env = "env HF_HUB_CACHE=" + hub + " ";
  const std::vector<std::string> missing = {
      "my.yaml:31: tokenizer.path: no such file: /tmp/Qwen3-0.6B/vocab.json",
      "my.yaml:32: tokenizer.merges_file: no such file: /tmp/Qwen3-0.6B/merges.txt",
      "my.yaml:38: checkpointer.checkpoint_dir: no such directory: /tmp/Qwen3-0.6B",
      "dataset.source: source = \"yahma/alpaca-cleaned\": this Hugging Face Hub dataset is not in the local cache",
      "hf download yahma/alpaca-cleaned --repo-type dataset"};

  const auto validated = fttest::run_shell(env + FTHOST_BINARY + " validate --config " + dir.file("my.yaml"));
  EXPECT_EQ(validated.exit_code, 0) << validated.output;
  expect_all_in(validated.output, missing);
  EXPECT_EQ(count_of(validated.output, "fthost: warning:"), 4u) << validated.output;

  const auto strict = fttest::run_shell(env + FTHOST_BINARY + " validate --strict --config " + dir.file("my.yaml"));
  EXPECT_NE(strict.exit_code, 0) << strict.output;
  expect_all_in(strict.output, missing);
  EXPECT_NE(strict.output.find("4 problem(s)"), std::string::npos) << strict.output;

  // The run fails on all of them before LibTorch loads: a small fraction of the 3.1 GB it
  // reached building the model before the missing directory stopped it.
  const Measured run = run_measured(env + FTHOST_BINARY + " --config " + dir.file("my.yaml"));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  expect_all_in(run.output, missing);
#if !defined(__SANITIZE_ADDRESS__)  // AddressSanitizer's shadow memory alone is larger
  EXPECT_LT(run.peak_rss_kib, 200 * 1024) << "peak RSS " << run.peak_rss_kib << " KiB";
#endif
}

TEST(Preflight, EveryKindOfInputIsChecked) {
  const fttest::TempDir dir;
  const std::string hub = dir.file("empty_hub");
  fs::create_directories(hub);
  // A checkpoint directory holding the first of three shards, one whose index names a shard it
  // lacks, and one with no weights at all.
  const std::string shards = dir.file("shards"), indexed = dir.file("indexed"), empty = dir.file("empty");
  for (const auto& d : {shards, indexed, empty}) fs::create_directories(d);
  fs::copy_file(fixture("golden/fixtures/llama3_untied/model.safetensors"),
                shards + "/model-00001-of-00003.safetensors");
  std::ofstream(indexed + "/model.safetensors.index.json")
      << R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})";
  fs::copy_file(fixture("golden/fixtures/llama3_untied/model.safetensors"),
                indexed + "/model-00001-of-00002.safetensors");
  std::ofstream(dir.file("a_file")) << "not a directory";

  struct Case {
    std::string what, overrides;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {"a tokenizer file",
       "tokenizer.path=/nonexistent/tokenizer.json",
       {"tokenizer.path: no such file: /nonexistent/tokenizer.json"}},
      {"a directory as the tokenizer file",
       "tokenizer.path=" + dir.str(),
       {"tokenizer.path: " + dir.str() + " is a directory; expected a file"}},
      {"a local dataset file",
       "dataset.source=/nonexistent/data.json",
       {"dataset.source: no such file: /nonexistent/data.json"}},
      {"data_files matching nothing",
       "dataset.source=parquet 'dataset.data_files=/nonexistent/*.parquet'",
       {"dataset.source: data_files = \"/nonexistent/*.parquet\": the pattern matches no file"}},
      {"data_files naming a missing file",
       "dataset.source=json dataset.data_files=/nonexistent/part.jsonl",
       {"dataset.data_files: no such file: /nonexistent/part.jsonl"}},
      {"a Hub dataset not in the cache",
       "dataset.source=someone/absent-dataset",
       {"dataset.source: source = \"someone/absent-dataset\": this Hugging Face Hub dataset is not in the local cache",
        hub, "hf download someone/absent-dataset --repo-type dataset"}},
      {"a checkpoint directory",
       "checkpointer.checkpoint_dir=/nonexistent/model",
       {"checkpointer.checkpoint_dir: no such directory: /nonexistent/model"}},
      {"a file as the checkpoint directory",
       "checkpointer.checkpoint_dir=" + dir.file("a_file"),
       {"checkpointer.checkpoint_dir: " + dir.file("a_file") + " is a file; expected a directory"}},
      {"listed shards missing from the directory",
       "checkpointer.checkpoint_dir=" + shards +
           " 'checkpointer.checkpoint_files={filename_format = \"model-{}-of-{}.safetensors\", max_filename = "
           "\"00003\"}'",
       {"checkpointer.checkpoint_files: no such file: " + shards + "/model-00002-of-00003.safetensors",
        "checkpointer.checkpoint_files: no such file: " + shards + "/model-00003-of-00003.safetensors"}},
      {"an index naming a missing shard",
       "checkpointer.checkpoint_dir=" + indexed,
       {"checkpointer.checkpoint_dir: " + indexed +
        "/model.safetensors.index.json: lists shard "
        "model-00002-of-00002.safetensors, which does not exist"}},
      {"a directory without weights",
       "checkpointer.checkpoint_dir=" + empty,
       {"checkpointer.checkpoint_dir: " + empty + ": no model.safetensors.index.json or model.safetensors to read"}},
      {"a resumed checkpoint",
       "resume_from_checkpoint=/nonexistent/step_3",
       {"resume_from_checkpoint: no such directory: /nonexistent/step_3"}},
      {"a resumed directory that is no checkpoint",
       "resume_from_checkpoint=" + empty,
       {"resume_from_checkpoint: not a checkpoint fthost wrote (no such file: " + empty +
        "/recipe_state/manifest.json"}},
      {"an output directory that is a file",
       "output_dir=" + dir.file("a_file"),
       {"output_dir: " + dir.file("a_file") + " is not a directory"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const auto r = fttest::run_shell("env HF_HUB_CACHE=" + hub + " " + FTHOST_BINARY + " validate --strict " +
                                     tiny_alpaca(c.overrides));
    EXPECT_NE(r.exit_code, 0) << r.output;
    expect_all_in(r.output, c.expected);
  }
  // All at once: each reported, counted together.
  const auto all = fttest::run_shell(
      "env HF_HUB_CACHE=" + hub + " " + FTHOST_BINARY + " validate --strict " +
      tiny_alpaca("tokenizer.path=/nonexistent/t.json dataset.source=/nonexistent/d.json "
                  "checkpointer.checkpoint_dir=/nonexistent/m resume_from_checkpoint=/nonexistent/r"));
  EXPECT_NE(all.exit_code, 0);
  EXPECT_NE(all.output.find("4 problem(s)"), std::string::npos) << all.output;
  // And the inputs found: clean.
  const auto good = fttest::run_fthost(
      "validate --strict " + tiny_alpaca("checkpointer.checkpoint_dir=" + shards +
                                         " checkpointer.checkpoint_files=[model-00001-of-00003.safetensors]"));
  EXPECT_EQ(good.exit_code, 0) << good.output;
  EXPECT_NE(good.output.find(": OK"), std::string::npos) << good.output;
}

TEST(Preflight, AnUnreadableFileAndAReadOnlyOutputDirectoryAreRefused) {
  // Root reads and writes past permissions: the check runs as nobody, who must reach the binary.
  const auto reachable = fttest::run_shell(as_unprivileged(std::string(FTHOST_BINARY) + " --version"));
  if (reachable.exit_code != 0)
    GTEST_SKIP() << "the unprivileged user cannot run " << FTHOST_BINARY << " here: " << reachable.output;
  const fttest::TempDir dir;
  const std::string secret = dir.file("tokenizer.json"), read_only = dir.file("read_only");
  fs::copy_file(fixture("tokenizers/llama3/tokenizer.json"), secret);
  ::chmod(secret.c_str(), 0000);
  fs::create_directories(read_only);
  ::chmod(read_only.c_str(), 0555);
  const std::string config = fttest::write_temp(
      "run.toml", fttest::read_file(std::string(FT_SOURCE_DIR) + "/configs/tiny_alpaca_llama3.toml"));
  open_to_all(dir.str());
  open_to_all(fs::path(config).parent_path());
  const auto r = fttest::run_shell(as_unprivileged(
      std::string(FTHOST_BINARY) + " validate --strict --config " + config + " tokenizer.path=" + secret +
      " dataset.source=" + fixture("data/alpaca_tiny.json") + " output_dir=" + read_only + "/run"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  expect_all_in(r.output, {"tokenizer.path: cannot read " + secret + ": Permission denied",
                           "output_dir: cannot write in " + read_only + ": Permission denied (" + read_only +
                               "/run would be created in it)"});
}

// A tmpfs of its own (a private mount namespace) too small for one checkpoint of the golden
// model: its weights and AdamW's two states at fp32, 3 x 429 KB.
TEST(Preflight, AFilesystemTooSmallForOneCheckpointIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root (a private mount namespace)";
  const auto isolated = fttest::run_shell("unshare -m --propagation private true");
  if (isolated.exit_code != 0) GTEST_SKIP() << "no private mount namespace here: " << isolated.output;
  const fttest::TempDir dir;
  const std::string mount = dir.file("small");
  fs::create_directories(mount);
  const std::string validate = std::string(FTHOST_BINARY) + " validate --strict " +
                               tiny_alpaca("checkpointer.checkpoint_dir=" + fixture("golden/fixtures/llama3_untied") +
                                           " output_dir=" + mount + "/run");
  auto on_tmpfs = [&](const std::string& size) {
    return fttest::run_shell("unshare -m --propagation private sh -c 'mount -t tmpfs -o size=" + size + " tmpfs " +
                             mount + " && " + validate + "'");
  };
  const auto small = on_tmpfs("1m");
  EXPECT_NE(small.exit_code, 0) << small.output;
  expect_all_in(small.output, {"output_dir: one checkpoint needs about", "has 1.0 MiB free"});
  const auto roomy = on_tmpfs("16m");
  EXPECT_EQ(roomy.exit_code, 0) << roomy.output;
}

// Two ranks started by the launcher: the problem is reported once, before any rank starts.
TEST(Preflight, TheLauncherReportsProblemsOnceBeforeStartingRanks) {
  const auto r = fttest::run_fthost("--nproc-per-node 2 " + tiny_alpaca("tokenizer.path=/nonexistent/t.json"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "tokenizer.path: no such file: /nonexistent/t.json"), 1u) << r.output;
  EXPECT_EQ(r.output.find("rank 1"), std::string::npos) << r.output;
}

}  // namespace
