// Every configuration key a schema accepts must be read by some code: a key declared with
// .optional("key", ...) / .required("key", ...) and named nowhere else in the sources is
// accepted and silently ignored, which is worse than refusing it. A source scan, not a proof: a
// key named elsewhere may still be unread there, but one named nowhere certainly is.
#include "test_helpers.h"

#include <boost/filesystem.hpp>

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>

namespace {

std::map<std::string, std::string> source_files() {
  std::map<std::string, std::string> files;
  for (const char* dir : {"core", "plugins", "sdk"}) {
    const boost::filesystem::path root = boost::filesystem::path(FT_SOURCE_DIR) / dir;
    for (boost::filesystem::recursive_directory_iterator it(root), end; it != end; ++it) {
      const std::string ext = it->path().extension().string();
      if (ext == ".cpp" || ext == ".h") files[it->path().string()] = fttest::read_file(it->path().string());
    }
  }
  return files;
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(SchemaKeys, EveryAcceptedKeyIsNamedOutsideItsDeclaration) {
  const auto files = source_files();
  ASSERT_GT(files.size(), 20u) << "no sources under " << FT_SOURCE_DIR;
  const std::regex declaration(R"re(\.(optional|required)\(\s*"([A-Za-z0-9_]+)")re");
  std::map<std::string, std::string> declared;  // key -> file declaring it
  std::map<std::string, std::size_t> declarations;
  for (const auto& [path, text] : files)
    for (auto it = std::sregex_iterator(text.begin(), text.end(), declaration); it != std::sregex_iterator(); ++it) {
      declared[(*it)[2]] = path;
      ++declarations[(*it)[2]];
    }
  ASSERT_GT(declared.size(), 50u);
  for (const auto& [key, path] : declared) {
    std::size_t mentions = 0;
    for (const auto& [file, text] : files) mentions += count(text, "\"" + key + "\"");
    EXPECT_GT(mentions, declarations[key])
        << "\"" << key << "\" (declared in " << path << ") is accepted by a schema and read nowhere";
  }
}

}  // namespace
