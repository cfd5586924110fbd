# Sanitizer runtime options for the FTHOST_SANITIZE build, sourced by scripts/test.sh (and by anyone
# running ctest in build-asan/ by hand). Exported, so they reach every process a test spawns: the
# fthost binary, the ranks the multi-rank launcher forks, and the test discovery run at build time.
sanitizer_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# halt_on_error: the first report fails the process (and so the test), not a log line nobody reads.
# check_initialization_order / strict_string_checks: off by default, cheap, and catch real bugs.
# intercept_tls_get_addr=0: LibTorch is loaded with dlopen, so its thread_local variables live in
# glibc's dynamic TLS. The runtime's own record of those blocks (kept by intercepting
# __tls_get_addr) picks up a bogus range in some runs ("DTLS 20 at 0x1e0e-0x1000002f10" with
# LSAN_OPTIONS=verbosity=1), and its exit-time leak scan then faults on it ("Tracer caught signal
# 11"). Without the interception nothing is lost: glibc allocates those blocks with the
# intercepted malloc and reaches them from the thread's DTV, so the scan still finds every
# pointer they hold, and a leak is still reported.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_string_checks=1:intercept_tls_get_addr=0"
export LSAN_OPTIONS="suppressions=${sanitizer_dir}/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=${sanitizer_dir}/ubsan.supp"
unset sanitizer_dir
