#include <ft/errors.h>
#include <ft/text.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bpe_loaders.h"

namespace ft_tok {

std::string read_text_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;  // before anything below allocates
    std::string where = path;
    if (!path.empty() && path[0] != '/')
      where += " (relative to the working directory " + std::filesystem::current_path().string() + ")";
    throw ft::Error(where + ": cannot open " + what + ": " + ft::errno_text(err));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ft_tok
