// Shared helpers for the unit tests: temporary config files and error capture.
#pragma once

#include <gtest/gtest.h>

#include <boost/filesystem.hpp>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>

namespace fttest {

// Writes `text` to a fresh file named `name` in a per-test temporary directory; returns its path.
inline std::string write_temp(const std::string& name, const std::string& text) {
  auto dir = boost::filesystem::temp_directory_path() / boost::filesystem::unique_path("fthost-test-%%%%%%%%");
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

}  // namespace fttest
