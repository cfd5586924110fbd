// The progress line: plain lines for logs, one redrawn line for terminals, the seed's text.
#include "train/progress_line.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

using fthost::ProgressLine;

// What a ProgressLine wrote to a temporary file.
std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

struct FakeClock {
  double now = 100.0;
  std::function<double()> fn() {
    return [this] { return now; };
  }
};

TEST(ProgressLine, PlainOutputIsLineBasedEveryTenPercent) {
  std::FILE* f = std::tmpfile();
  FakeClock clock;
  {
    ProgressLine::Options options;
    options.clock = clock.fn();
    ProgressLine progress(f, 40, /*is_tty=*/false, options);
    for (std::int64_t step = 1; step <= 40; ++step) {
      clock.now += 0.5;
      progress.update(1 + (step - 1) / 20, step, 4.0 - 0.05 * static_cast<double>(step), 1000.0);
    }
  }
  const std::string text = contents(f);
  std::fclose(f);
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  ASSERT_EQ(text.back(), '\n');
  const auto lines = lines_of(text);
  // The first step, then every 10% (steps 4, 8, ..., 40).
  ASSERT_EQ(lines.size(), 11u) << text;
  EXPECT_EQ(lines[0].rfind("1|1|Loss: 3.9500:   2%|", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("1|4|Loss: 3.8000:  10%|##  ", 0), 0u) << lines[1];
  EXPECT_EQ(lines.back().rfind("2|40|Loss: 2.0000: 100%|####################| 40/40 [00:20<00:00, 1000 tok/s]", 0), 0u)
      << lines.back();
  const std::regex shape(
      R"(\d+\|\d+\|Loss: -?\d+\.\d{4}: +\d+%\|[# ]{20}\| \d+/40 \[\d\d:\d\d<(\d\d:\d\d|\?), \d+ tok/s\])");
  for (const auto& line : lines) EXPECT_TRUE(std::regex_match(line, shape)) << line;
}

TEST(ProgressLine, PlainOutputAlsoPrintsAfterItsInterval) {
  std::FILE* f = std::tmpfile();
  FakeClock clock;
  ProgressLine::Options options;
  options.clock = clock.fn();
  options.plain_percent_step = 100;
  options.plain_interval_seconds = 30;
  ProgressLine progress(f, 1000, false, options);
  for (std::int64_t step = 1; step <= 100; ++step) {
    clock.now += 1.0;
    progress.update(1, step, 1.0, 10.0);
  }
  progress.finish();
  // Step 1, then steps 31, 61, 91 (30 s apart), then the unprinted last state at finish().
  const auto lines = lines_of(contents(f));
  std::fclose(f);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_NE(lines[1].find("|31|"), std::string::npos) << lines[1];
  EXPECT_NE(lines[4].find("|100|"), std::string::npos) << lines[4];
}

TEST(ProgressLine, TerminalRedrawsInPlaceAndEndsWithOneNewline) {
  std::FILE* f = std::tmpfile();
  FakeClock clock;
  ProgressLine::Options options;
  options.clock = clock.fn();
  ProgressLine progress(f, 20, /*is_tty=*/true, options);
  for (std::int64_t step = 1; step <= 5; ++step) {
    clock.now += 2.0;
    progress.update(1, step, 100.0 / static_cast<double>(step), 1234.4);
  }
  std::string text = contents(f);
  EXPECT_EQ(text.find('\n'), std::string::npos) << "no newline while running";
  EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 5);
  // 5 of 20 steps in 10 s: 30 s to go. A shorter line is padded over the longer one before it.
  const std::string last = text.substr(text.rfind('\r') + 1);
  EXPECT_EQ(last.rfind("1|5|Loss: 20.0000:  25%|#####               | 5/20 [00:10<00:30, 1234 tok/s]", 0), 0u) << last;
  const std::string first = text.substr(1, text.find('\r', 1) - 1);  // "Loss: 100.0000" is one longer
  EXPECT_EQ(last.size(), first.size()) << "[" << last << "] [" << first << "]";
  EXPECT_EQ(last.back(), ' ');
  progress.finish();
  progress.finish();
  text = contents(f);
  std::fclose(f);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  EXPECT_EQ(text.back(), '\n');
}

TEST(ProgressLine, TerminalThrottlesRedrawsButAlwaysDrawsTheLastStep) {
  std::FILE* f = std::tmpfile();
  FakeClock clock;
  ProgressLine::Options options;
  options.clock = clock.fn();
  ProgressLine progress(f, 100, true, options);
  for (std::int64_t step = 1; step <= 100; ++step) {
    clock.now += 0.01;  // 10 ms a step: a redraw every 10 steps at most
    progress.update(1, step, 1.0, 1.0);
  }
  progress.finish();  // before the file closes: the destructor would write to it
  const std::string text = contents(f);
  std::fclose(f);
  const auto redraws = std::count(text.begin(), text.end(), '\r');
  EXPECT_GE(redraws, 9);
  EXPECT_LE(redraws, 12);
  EXPECT_NE(text.substr(text.rfind('\r')).find("100/100"), std::string::npos);
}

TEST(ProgressLine, ResumedRunLeavesEarlierStepsOutOfTheRate) {
  FakeClock clock;
  ProgressLine::Options options;
  options.clock = clock.fn();
  options.initial_step = 50;
  std::FILE* f = std::tmpfile();
  ProgressLine progress(f, 100, false, options);
  clock.now += 10;
  progress.update(3, 60, 0.5, 99.6);
  // 10 steps in 10 s, 40 to go.
  EXPECT_NE(progress.render(clock.now).find("60/100 [00:10<00:40, 100 tok/s]"), std::string::npos)
      << progress.render(clock.now);
  progress.finish();
  std::fclose(f);
}

TEST(ProgressLine, ClockTextSwitchesToHoursAndUnknownEta) {
  FakeClock clock;
  ProgressLine::Options options;
  options.clock = clock.fn();
  std::FILE* f = std::tmpfile();
  ProgressLine progress(f, 10, false, options);
  progress.update(1, 0, 1.0, 0.0);
  EXPECT_NE(progress.render(clock.now).find("[00:00<?,"), std::string::npos) << progress.render(clock.now);
  clock.now += 3725;
  progress.update(1, 1, 1.0, 0.0);
  EXPECT_NE(progress.render(clock.now).find("[1:02:05<9:18:45,"), std::string::npos) << progress.render(clock.now);
  progress.finish();
  std::fclose(f);
}

}  // namespace

namespace {

TEST(ProgressLine, ShowsTheLatestValidationLossFromItsValidationOn) {
  std::FILE* f = std::tmpfile();
  FakeClock clock;
  {
    ProgressLine::Options options;
    options.clock = clock.fn();
    ProgressLine progress(f, 4, /*is_tty=*/false, options);
    progress.update(1, 1, 3.0, 1000.0);
    progress.set_validation_loss(2.71828);  // printed at once, though no step is due
    progress.update(1, 2, 2.5, 1000.0);
    progress.set_validation_loss(1.5);
  }
  const std::string text = contents(f);
  std::fclose(f);
  const auto lines = lines_of(text);
  ASSERT_EQ(lines.size(), 4u) << text;
  EXPECT_EQ(lines[0].rfind("1|1|Loss: 3.0000:  25%|", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("1|1|Loss: 3.0000|val_loss: 2.7183:  25%|", 0), 0u) << lines[1];
  // The next step keeps showing the earlier validation's loss until another replaces it.
  EXPECT_EQ(lines[2].rfind("1|2|Loss: 2.5000|val_loss: 2.7183:  50%|", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3].rfind("1|2|Loss: 2.5000|val_loss: 1.5000:  50%|", 0), 0u) << lines[3];
}

}  // namespace
