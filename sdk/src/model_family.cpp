#include <ft/model_family.h>

#include <algorithm>
#include <filesystem>

namespace ft {

bool ModelDirectory::has_file(const std::string& name) const {
  std::error_code ignored;
  return std::filesystem::is_regular_file(file(name), ignored);
}

std::string ModelDirectory::file(const std::string& name) const { return path + "/" + name; }

bool ModelDirectory::has_added_token(const std::string& token) const {
  return std::find(added_tokens.begin(), added_tokens.end(), token) != added_tokens.end();
}

}  // namespace ft
