# ThreadSanitizer's runtime options for scripts/test.sh --tsan (and anyone running ctest in
# build-tsan/ by hand). Exported, so they reach the fthost processes and ranks the tests start.
tsan_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# halt_on_error: the first report fails the process, and so the test.
# second_deadlock_stack: both stacks of a lock-order inversion.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=${tsan_dir}/tsan.supp"
# LibTorch and its OpenMP runtime are not instrumented: TSan cannot see the happens-before edges
# of libgomp's barriers, so one thread per process keeps at::parallel_for inline and every race
# it reports one in fthost's own threads.
export OMP_NUM_THREADS=1
unset tsan_dir
