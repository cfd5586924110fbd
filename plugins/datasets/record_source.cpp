#include "record_source.h"

#include <ft/errors.h>
#include <ft/text.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>

namespace ft_ds {

namespace {

using nlohmann::json;

class InMemoryRecords final : public RecordSource {
 public:
  explicit InMemoryRecords(std::vector<json> records) : records_(std::move(records)) {}
  std::size_t size() const override { return records_.size(); }
  json record(std::size_t index) const override { return records_.at(index); }

 private:
  std::vector<json> records_;
};

class SlicedRecords final : public RecordSource {
 public:
  SlicedRecords(std::unique_ptr<RecordSource> source, std::size_t begin, std::size_t end)
      : source_(std::move(source)), begin_(begin), end_(end) {}
  std::size_t size() const override { return end_ - begin_; }
  json record(std::size_t index) const override { return source_->record(begin_ + index); }

 private:
  std::unique_ptr<RecordSource> source_;
  std::size_t begin_, end_;
};

class ConcatenatedRecords final : public RecordSource {
 public:
  explicit ConcatenatedRecords(std::vector<std::unique_ptr<RecordSource>> sources) : sources_(std::move(sources)) {
    for (const auto& s : sources_) ends_.push_back((ends_.empty() ? 0 : ends_.back()) + s->size());
  }
  std::size_t size() const override { return ends_.empty() ? 0 : ends_.back(); }
  json record(std::size_t index) const override {
    const auto s = static_cast<std::size_t>(std::upper_bound(ends_.begin(), ends_.end(), index) - ends_.begin());
    if (s == sources_.size())
      throw ft::Error("record " + std::to_string(index) + " out of range (" + std::to_string(size()) + " records)");
    return sources_[s]->record(index - (s == 0 ? 0 : ends_[s - 1]));
  }

 private:
  std::vector<std::unique_ptr<RecordSource>> sources_;
  std::vector<std::size_t> ends_;
};

// One file descriptor, read with pread (safe from any thread); closed with the source.
class JsonLinesOnDemand final : public RecordSource {
 public:
  explicit JsonLinesOnDemand(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw ft::Error(path_ + ": cannot open dataset file: " + ft::errno_text(errno));
    index_lines();
  }
  ~JsonLinesOnDemand() override { ::close(fd_); }
  JsonLinesOnDemand(const JsonLinesOnDemand&) = delete;
  JsonLinesOnDemand& operator=(const JsonLinesOnDemand&) = delete;

  std::size_t size() const override { return lines_.size(); }
  json record(std::size_t index) const override {
    const Line& line = lines_.at(index);
    std::string text(line.length, '\0');
    std::size_t done = 0;
    while (done < line.length) {
      const ssize_t n = ::pread(fd_, text.data() + done, line.length - done, static_cast<off_t>(line.offset + done));
      if (n <= 0)
        throw ft::Error(path_ + ":" + std::to_string(line.number) + ": cannot read the record (" +
                        (n == 0 ? std::string("the file is shorter than when it was indexed") : ft::errno_text(errno)) +
                        ")");
      done += static_cast<std::size_t>(n);
    }
    return parse(text, line.number);
  }

 private:
  struct Line {
    std::uint64_t offset;
    std::uint32_t length;
    std::uint32_t number;  // 1-based, for messages
  };

  json parse(const std::string& text, std::size_t number) const {
    try {
      json j = json::parse(text);
      if (!j.is_object()) throw ft::Error(path_ + ":" + std::to_string(number) + ": expected a JSON object");
      return j;
    } catch (const json::exception& e) {
      throw ft::Error(path_ + ":" + std::to_string(number) + ": not valid JSON (" + e.what() +
                      "); expected one object a line");
    }
  }

  // One pass over the file: where each non-blank line starts and ends. Each line is parsed once
  // here too, so a malformed record fails before training, not at its first draw.
  void index_lines() {
    std::string buffer(1 << 20, '\0'), pending;
    std::uint64_t offset = 0, line_start = 0;
    std::uint32_t number = 1;
    auto finish_line = [&](const std::string& text) {
      std::string trimmed = text;
      if (!trimmed.empty() && trimmed.back() == '\r') trimmed.pop_back();
      if (trimmed.find_first_not_of(" \t") != std::string::npos) {
        parse(trimmed, number);
        if (trimmed.size() > UINT32_MAX) throw ft::Error(path_ + ":" + std::to_string(number) + ": line over 4 GiB");
        lines_.push_back({line_start, static_cast<std::uint32_t>(trimmed.size()), number});
      }
      ++number;
    };
    while (true) {
      const ssize_t n = ::pread(fd_, buffer.data(), buffer.size(), static_cast<off_t>(offset));
      if (n < 0) throw ft::Error(path_ + ": cannot read dataset file: " + ft::errno_text(errno));
      if (n == 0) break;
      std::size_t from = 0;
      for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
        if (buffer[i] != '\n') continue;
        pending.append(buffer, from, i - from);
        finish_line(pending);
        pending.clear();
        from = i + 1;
        line_start = offset + from;
      }
      pending.append(buffer, from, static_cast<std::size_t>(n) - from);
      offset += static_cast<std::uint64_t>(n);
    }
    if (!pending.empty()) finish_line(pending);
    if (lines_.empty()) throw ft::Error(path_ + ": dataset file has no records");
  }

  std::string path_;
  int fd_ = -1;
  std::vector<Line> lines_;
};

}  // namespace

std::unique_ptr<RecordSource> records_in_memory(std::vector<json> records) {
  return std::make_unique<InMemoryRecords>(std::move(records));
}

std::unique_ptr<RecordSource> slice_of(std::unique_ptr<RecordSource> source, std::size_t begin, std::size_t end) {
  if (begin == 0 && end == source->size()) return source;
  return std::make_unique<SlicedRecords>(std::move(source), begin, end);
}

std::unique_ptr<RecordSource> concatenation(std::vector<std::unique_ptr<RecordSource>> sources) {
  if (sources.size() == 1) return std::move(sources.front());
  return std::make_unique<ConcatenatedRecords>(std::move(sources));
}

std::unique_ptr<RecordSource> json_lines_on_demand(const std::string& path) {
  return std::make_unique<JsonLinesOnDemand>(path);
}

}  // namespace ft_ds
