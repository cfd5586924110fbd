#include "buffered_append_file.h"

namespace ft_loggers {

void BufferedAppendFile::flush() {
  if (pending_.empty()) return;
  file_.write(pending_);
  pending_.clear();
}

void BufferedAppendFile::close() {
  if (!file_.is_open()) return;
  try {
    flush();
  } catch (...) {
    abandon();
    throw;
  }
  file_.close();
}

void BufferedAppendFile::abandon() noexcept {
  pending_.clear();
  file_.abandon();
}

}  // namespace ft_loggers
