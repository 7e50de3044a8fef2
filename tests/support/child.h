// Death tests without a framework: run a function in a forked child with its stderr captured.
// The child must not rely on threads of the parent (fork copies only the calling thread), so
// call this before starting any backend in the test, or only from single-threaded tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

namespace fft {

struct ChildResult {
  int status = 0;   // as waitpid reports it
  std::string err;  // everything the child wrote to stderr

  bool exited_cleanly() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

  bool aborted() const { return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT; }
};

/// Runs `f` in a forked child (which exits with status 0 if `f` returns).
template <class F>
ChildResult in_child(F&& f) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    f();
    _exit(0);
  }
  close(fds[1]);
  ChildResult r;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;)
    r.err.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  waitpid(pid, &r.status, 0);
  return r;
}

}  // namespace fft
