#include <ft/errors.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bpe_loaders.h"

namespace ft_tok {

std::string read_text_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::string where = path;
    if (!path.empty() && path[0] != '/')
      where += " (relative to the working directory " + std::filesystem::current_path().string() + ")";
    throw ft::Error(where + ": cannot open " + what + ": " + std::strerror(errno));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ft_tok
