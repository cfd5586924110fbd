// A tqdm-like progress line for rank 0, in the seed's words plus rate and time left:
//
//   1|5|Loss: 2.3450:  25%|#####               | 5/20 [00:03<00:09, 1234 tok/s]
//
// After a validation the line also shows its loss: `1|5|Loss: 2.3450|val_loss: 2.4012:  25%|...`.
//
// On a terminal it redraws one line in place (\r); elsewhere (CI logs, files) it prints plain
// lines now and then, so a log holds a readable history instead of carriage-return noise.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

namespace fthost {

class ProgressLine {
 public:
  struct Options {
    // Not a terminal: a line whenever another `plain_percent_step` % of the steps is done, or
    // `plain_interval_seconds` passed since the last line, and always for the first and last step.
    int plain_percent_step = 10;
    double plain_interval_seconds = 60.0;
    // A terminal: redraw at most this often (the last step always draws).
    double tty_min_interval_seconds = 0.1;
    int bar_width = 20;
    // Steps done before this process started (a resumed run), left out of the rate.
    std::int64_t initial_step = 0;
    // Seconds on a monotonic clock; empty: std::chrono::steady_clock. Tests pass their own.
    std::function<double()> clock;
  };

  ProgressLine(std::FILE* out, std::int64_t total_steps, bool is_tty);
  ProgressLine(std::FILE* out, std::int64_t total_steps, bool is_tty, Options options);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Whether `out` is a terminal (isatty of its descriptor).
  static bool is_terminal(std::FILE* out);

  // After optimizer step `step` (1-based, counted over the whole run) of epoch `epoch` (1-based,
  // as displayed). `tokens_per_second` is the last step's throughput.
  void update(std::int64_t epoch, std::int64_t step, double loss, double tokens_per_second);

  // The latest validation loss, shown from now on; draws the line at once (validations are rare).
  void set_validation_loss(double val_loss);

  // Ends the display: a terminal gets its newline, a plain log the last state if it was not
  // printed yet. Idempotent; the destructor calls it.
  void finish();

  // The text of one line, without \r or \n.
  std::string render(double now) const;

 private:
  double now() const;
  void draw(double now);

  std::FILE* out_;
  std::int64_t total_steps_;
  bool is_tty_;
  Options options_;
  double start_time_;
  // The latest update.
  std::int64_t epoch_ = 0, step_ = 0;
  double loss_ = 0, tokens_per_second_ = 0;
  std::optional<double> val_loss_;
  bool has_update_ = false;
  // What was drawn.
  bool drawn_latest_ = false;
  double last_draw_time_ = 0;
  std::int64_t last_drawn_bucket_ = -1;
  std::size_t last_width_ = 0;
  bool finished_ = false;
};

}  // namespace fthost
