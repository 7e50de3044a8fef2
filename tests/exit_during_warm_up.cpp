// A process that exits while the backend still compiles in the background must exit
// cleanly. Without ExitWatch (tracer/runtime.cpp) LLVM's function-local statics were
// destroyed under a running JIT warm-up compile: "free(): invalid pointer" or SIGSEGV,
// intermittently, after the last test of a short test binary had passed.
//
// The parent only forks; each child initialises freezeframe, waits a different time (the
// warm-up takes about 13 ms here, so the exits sweep across it), sometimes does some work
// first, and exits.
#include <freezeframe/freezeframe.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

// Never destroyed, and reachable from a global so LeakSanitizer does not call it a leak.
ff::Float32* g_kept = nullptr;

namespace {

[[noreturn]] void child(int variant) {
  ff::init("llvm");
  if (variant % 4 == 3) {
    // An array outlives shutdown(), keeping its backend and the warm-up in flight alive
    // after the stack stopped being current; ExitWatch stops every live stack, not only the
    // current one. (Here the main thread's tracing state still drops the last reference
    // before static destruction, so this variant checks the path runs rather than the race.)
    g_kept = new ff::Float32(ff::Float32::from({1.f, 2.f}));
    ff::shutdown();
  } else if (variant % 4 == 1) {
    auto x = ff::arange<ff::Float32>(ff::Size(1000));
    (void)ff::sum(x * 2.f).to_vector();  // compiles on the calling thread, joining the warm-up
  } else if (variant % 4 == 2) {
    (void)ff::sum(ff::Float32::from({1.f, 2.f, 3.f})).to_vector();  // no kernel
  }
  std::this_thread::sleep_for(std::chrono::microseconds(500) * variant);
  std::exit(0);
}

}  // namespace

int main() {
  const int runs = 40;
  int failures = 0;
  for (int i = 0; i < runs; ++i) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      return 2;
    }
    if (pid == 0)
      child(i);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) {
      std::perror("waitpid");
      return 2;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failures;
      if (WIFSIGNALED(status))
        std::fprintf(stderr, "run %d: killed by signal %d\n", i, WTERMSIG(status));
      else
        std::fprintf(stderr, "run %d: exit status %d\n", i, WEXITSTATUS(status));
    }
  }
  std::printf("%d of %d processes exited cleanly\n", runs - failures, runs);
  return failures ? 1 : 0;
}
