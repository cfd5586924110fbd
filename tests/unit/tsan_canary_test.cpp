// The ThreadSanitizer phase can fail: a race in instrumented code ends the process with TSan's
// report, under the options tests/sanitizers/tsan_env.sh sets (halt_on_error) and with the
// suppressions in place. Built only into fthost_thread_tests (scripts/test.sh --tsan).
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

namespace {

int unguarded_counter = 0;

void race_twice() {
  std::thread other([] { ++unguarded_counter; });
  ++unguarded_counter;
  other.join();
  std::exit(0);  // reached only when TSan missed the race
}

}  // namespace

TEST(ThreadSanitizerCanary, AnUnguardedCounterEndsTheProcessWithADataRaceReport) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(race_twice(), testing::ExitedWithCode(66), "ThreadSanitizer: data race");
}
