// Shared helpers for the unit tests: temporary config files and error capture.
#pragma once

#include <gtest/gtest.h>

#include <boost/filesystem.hpp>

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace fttest {

// Every temporary file of one test process lives under one directory, removed when the
// process exits, unless a test failed or FT_KEEP_TEST_FILES is set (then its path is printed):
// a suite run writes gigabytes of checkpoints. Forked children (ranks) leave it to the parent.
class ProcessTempRoot {
 public:
  ProcessTempRoot()
      : owner_(::getpid()),
        path_(boost::filesystem::temp_directory_path() / boost::filesystem::unique_path("fthost-test-%%%%%%%%")) {
    boost::filesystem::create_directories(path_);
  }
  ~ProcessTempRoot() {
    if (::getpid() != owner_) return;
    const bool failed = ::testing::UnitTest::GetInstance()->failed_test_count() > 0;
    if (failed || std::getenv("FT_KEEP_TEST_FILES")) {
      std::fprintf(stderr, "test files kept in %s\n", path_.string().c_str());
      return;
    }
    boost::system::error_code ec;
    boost::filesystem::remove_all(path_, ec);
  }
  ProcessTempRoot(const ProcessTempRoot&) = delete;
  ProcessTempRoot& operator=(const ProcessTempRoot&) = delete;
  const boost::filesystem::path& path() const { return path_; }

 private:
  pid_t owner_;
  boost::filesystem::path path_;
};

inline const boost::filesystem::path& process_temp_root() {
  static ProcessTempRoot root;
  return root.path();
}

// Writes `text` to a fresh file named `name` in a fresh temporary directory; returns its path.
inline std::string write_temp(const std::string& name, const std::string& text) {
  auto dir = process_temp_root() / boost::filesystem::unique_path("%%%%%%%%");
  boost::filesystem::create_directories(dir);
  auto path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

// The whole contents of a file ("" if it cannot be read).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// The message of the exception `fn` throws (fails the test when it throws none).
template <class E = std::exception>
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

// The shared third-party fixtures: $FT_FIXTURES, else ../shared/fixtures next to the source tree.
inline std::string fixtures_dir() {
  if (const char* env = std::getenv("FT_FIXTURES"); env && *env) return env;
  return std::string(FT_SOURCE_DIR) + "/../shared/fixtures";
}

struct CommandResult {
  int exit_code;
  std::string output;  // what it wrote: stdout and stderr together, except from run_command_stdout
};

// Runs a shell command line and waits for it; `output` is its stdout (the command line redirects
// stderr where it wants it).
inline CommandResult run_command_stdout(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (std::size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Runs a shell command line; stdout and stderr together.
inline CommandResult run_shell(const std::string& command) { return run_command_stdout(command + " 2>&1"); }

// Runs the fthost binary with `args` (shell syntax) and waits for it.
inline CommandResult run_fthost(const std::string& args) { return run_shell(std::string(FTHOST_BINARY) + " " + args); }

// A failing fthost run: non-zero exit and every expected fragment in its output.
inline void expect_refused(const std::string& args, const std::vector<std::string>& fragments) {
  const auto r = run_fthost(args);
  EXPECT_NE(r.exit_code, 0) << r.output;
  for (const auto& f : fragments)
    EXPECT_NE(r.output.find(f), std::string::npos) << "missing: " << f << "\n" << r.output;
}

// A fresh empty directory for one test.
inline std::string temp_dir() { return boost::filesystem::path(write_temp("placeholder", "")).parent_path().string(); }

// A fresh directory, removed with its contents at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (process_temp_root() / "XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    boost::system::error_code ec;
    boost::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& str() const { return path_; }

 private:
  std::string path_;
};

}  // namespace fttest
