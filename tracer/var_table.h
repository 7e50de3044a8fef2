// Variable tables and arrays shared between threads.
//
// Every thread traces into a table of its own (TracerState), so the hot path takes no lock. A
// handle (ff::detail::Handle, what an ff::Array holds) names a table and an index in it, so an
// array stays valid on any thread and after the thread that made it has exited:
//
//   - The owner thread marks each library call with a Window: a plain store before and after
//     (no atomic read-modify-write), plus one load that sees whether another thread waits.
//   - Another thread that must read or change a variable of that table (copy or destroy a
//     handle, evaluate it, read it back, use it as an operand) takes the table exclusively with
//     a ForeignAccess: it raises `request`, issues a heavy barrier (membarrier(2), which makes
//     every running thread of the process execute a full fence), and waits until the owner is
//     outside its window. This is an asymmetric Dekker handshake: the owner pays a compiler
//     fence, the rare foreign access pays a system call. Where membarrier is unavailable (and
//     under ThreadSanitizer, which cannot see it) both sides use sequentially consistent
//     fences instead.
//   - While it holds the table, the foreign thread *impersonates* its owner (the thread-local
//     table pointer is switched), so the ordinary tracer code evaluates or frees the variable
//     in its own table. Variable graphs never span tables: an operand from another table is
//     first evaluated there and *imported* as a local variable that shares its buffer (both
//     sides are then marked `shared`, so a scatter into either copies first).
//   - A thread that exits leaves its table orphaned; foreign accesses then only take its mutex,
//     and the table is freed with its last variable.
//
// Rules that keep this deadlock-free: a thread never holds its own window while it waits for
// another table (ForeignAccess releases it first, at a safe point between two operations),
// never holds two foreign tables, and user code (ff::record's function) never runs inside a
// window.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "freezeframe/detail/tracer_api.h"

namespace ff::detail {

struct TracerState;

/// Table ids are never reused; 0 means "no table".
inline uint32_t table_of(Handle h) {
  return static_cast<uint32_t>(h >> 32);
}

inline uint32_t index_of(Handle h) {
  return static_cast<uint32_t>(h);
}

inline Handle make_handle(uint32_t table, uint32_t index) {
  return (static_cast<uint64_t>(table) << 32) | index;
}

// __thread, not thread_local: both are plain words with no dynamic initialisation, and the
// GNU spelling says so to the compiler, so reading them from another file is one %fs load
// instead of a call through a TLS init wrapper on every access.
/// The calling thread's table, or null before its first use (and after it exited).
extern __thread TracerState* t_state;
/// Library calls of this thread in progress (windows nest; only the outermost one counts).
extern __thread int t_window_depth;

/// True when the heavy side of the handshake is membarrier(2), so the owner's light side is a
/// compiler fence only.
extern bool g_asymmetric_fences;

void window_enter_slow(TracerState& s);

/// The owner side of the handshake, around every library call that touches its table.
class Window {
 public:
  Window();

  ~Window();

  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;
};

/// Exclusive access to another thread's table (or an orphaned one), impersonating its owner
/// for the duration: state() is that table. Releases the caller's own window while it waits.
class ForeignAccess {
 public:
  explicit ForeignAccess(uint32_t table);
  ~ForeignAccess();

  ForeignAccess(const ForeignAccess&) = delete;
  ForeignAccess& operator=(const ForeignAccess&) = delete;

 private:
  std::shared_ptr<TracerState> table_;
  TracerState* saved_state_;
  int saved_depth_;
};

/// A new table for the calling thread (registered, so other threads can reach it).
TracerState& create_thread_table();

/// The variable `h` names, as a variable of the calling thread's table: `h` itself when it is
/// local; otherwise a new local variable (one reference, the caller's) importing it — a
/// literal is copied, anything else is evaluated in its own table first and shared. `*fresh`
/// is set when a new reference was made.
uint32_t localize(Handle h, bool* fresh);

/// Number of tables alive (the threads' own and orphaned ones), for tests.
size_t n_tables();

}  // namespace ff::detail
