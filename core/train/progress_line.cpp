#include "train/progress_line.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace fthost {

namespace {

// tqdm's clock: MM:SS, or H:MM:SS from an hour on.
std::string clock_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto total = static_cast<std::int64_t>(seconds + 0.5);
  const auto h = total / 3600, m = (total / 60) % 60, s = total % 60;
  return h > 0 ? fmt::format("{}:{:02d}:{:02d}", h, m, s) : fmt::format("{:02d}:{:02d}", m, s);
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

ProgressLine::ProgressLine(std::FILE* out, std::int64_t total_steps, bool is_tty)
    : ProgressLine(out, total_steps, is_tty, Options{}) {}

ProgressLine::ProgressLine(std::FILE* out, std::int64_t total_steps, bool is_tty, Options options)
    : out_(out), total_steps_(std::max<std::int64_t>(total_steps, 1)), is_tty_(is_tty), options_(std::move(options)) {
  if (options_.plain_percent_step < 1) options_.plain_percent_step = 1;
  start_time_ = now();
}

ProgressLine::~ProgressLine() { finish(); }

bool ProgressLine::is_terminal(std::FILE* out) { return out && ::isatty(::fileno(out)) == 1; }

double ProgressLine::now() const { return options_.clock ? options_.clock() : steady_seconds(); }

std::string ProgressLine::render(double at) const {
  const double fraction = std::clamp(static_cast<double>(step_) / static_cast<double>(total_steps_), 0.0, 1.0);
  const int filled = static_cast<int>(fraction * options_.bar_width);
  const double elapsed = at - start_time_;
  const std::int64_t done_here = step_ - options_.initial_step;
  const double remaining =
      done_here > 0 ? elapsed / static_cast<double>(done_here) * static_cast<double>(total_steps_ - step_) : NAN;
  const std::string val_loss = val_loss_ ? fmt::format("|val_loss: {:.4f}", *val_loss_) : std::string();
  return fmt::format("{}|{}|Loss: {:.4f}{}: {:3d}%|{}{}| {}/{} [{}<{}, {:.0f} tok/s]", epoch_, step_, loss_, val_loss,
                     static_cast<int>(fraction * 100), std::string(filled, '#'),
                     std::string(options_.bar_width - filled, ' '), step_, total_steps_, clock_text(elapsed),
                     clock_text(remaining), tokens_per_second_);
}

void ProgressLine::draw(double at) {
  std::string text = render(at);
  if (is_tty_) {
    // Spaces over the tail of a longer earlier line, since \r only moves the cursor.
    if (text.size() < last_width_) text.append(last_width_ - text.size(), ' ');
    last_width_ = text.size();
    std::fputc('\r', out_);
    std::fputs(text.c_str(), out_);
  } else {
    std::fputs(text.c_str(), out_);
    std::fputc('\n', out_);
  }
  std::fflush(out_);
  drawn_latest_ = true;
  last_draw_time_ = at;
  last_drawn_bucket_ = step_ * 100 / total_steps_ / options_.plain_percent_step;
}

void ProgressLine::update(std::int64_t epoch, std::int64_t step, double loss, double tokens_per_second) {
  if (finished_) return;
  const bool first = !has_update_;
  epoch_ = epoch;
  step_ = step;
  loss_ = loss;
  tokens_per_second_ = tokens_per_second;
  has_update_ = true;
  drawn_latest_ = false;

  const double at = now();
  const bool last = step >= total_steps_;
  bool due;
  if (is_tty_) {
    due = first || last || at - last_draw_time_ >= options_.tty_min_interval_seconds;
  } else {
    const std::int64_t bucket = step * 100 / total_steps_ / options_.plain_percent_step;
    due = first || last || bucket > last_drawn_bucket_ || at - last_draw_time_ >= options_.plain_interval_seconds;
  }
  if (due) draw(at);
}

void ProgressLine::set_validation_loss(double val_loss) {
  if (finished_) return;
  val_loss_ = val_loss;
  if (has_update_) draw(now());
}

void ProgressLine::finish() {
  if (finished_) return;
  finished_ = true;
  if (!has_update_) return;
  if (!drawn_latest_) draw(now());
  if (is_tty_) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
}

}  // namespace fthost
