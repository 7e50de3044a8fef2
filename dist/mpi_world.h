// The one place freezeframe calls MPI (DESIGN.md: collectives). ff::dist's public functions and
// the backends' collective operations come here; nothing else includes mpi.h. Built without
// MPI (FF_HAS_MPI undefined), every function but initialized(), finalize() and abort_all() raises
// ff::Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dist/collective.h"
#include "freezeframe/errors.h"

namespace ff::dist_impl {

/// An ff::Error that every rank raises at the same point (a check that compared every rank's
/// call): a replay may give up on it after earlier collectives without leaving a rank alone.
class EveryRankError : public Error {
 public:
  using Error::Error;
};

/// The EveryRankError of a rank whose own size guard failed after a collective while another
/// rank was recording the call (which cannot retry, so nobody does): a frozen function skips
/// that recording at its next call, so that it records the call too instead of failing the
/// same way again.
class GuardBesideRecorder : public EveryRankError {
 public:
  using EveryRankError::EveryRankError;
};

/// Initialises MPI with MPI_THREAD_MULTIPLE unless the program already has (then its level is
/// kept, and use from a second thread raises ff::Error where it is below MULTIPLE), and makes
/// freezeframe's own communicator (a duplicate of MPI_COMM_WORLD that returns errors instead
/// of aborting). A second init() without finalize() does nothing.
/// `cuda_aware`: whether MPI takes device pointers (takes_device_pointers()); nullopt asks the
/// library once MPI is up (FF_DIST_CUDA_AWARE, read by the front end).
void init(int* argc, char*** argv, std::optional<bool> cuda_aware = std::nullopt);
/// Frees the communicator; finalises MPI only where init() started it. Safe to call twice.
void finalize() noexcept;
/// True between init() and finalize().
bool initialized();
/// This process's rank and the number of ranks (raises ff::Error before init(), naming
/// ff::dist::<what>).
int rank(const char* what = "rank");
int size(const char* what = "size");

/// True where MPI takes device (CUDA) pointers itself, so a GPU backend hands its buffers to
/// the collectives instead of staging them through host memory. Decided at init(): the MPI
/// library's own answer (Open MPI's MPIX_Query_cuda_support), unless init() was told (a wrong
/// `true` makes MPI read device addresses as host memory). False before init().
bool takes_device_pointers();

/// The result count of `c` (see Collective); exchanges counts between ranks where it must
/// (every kind but AllReduce). With c.check, first compares every rank's call and raises
/// ff::Error on every rank where they differ, naming both. Raises ff::BackendError naming the
/// collective on an MPI error.
size_t exchange_count(const Collective& c);
/// Runs `c` on host memory (after exchange_count). Raises ff::BackendError naming the
/// collective on an MPI error.
void run(const Collective& c);

/// How a rank's part of a replay went, for agree(): worse outcomes have larger values.
enum class Outcome : int {
  Ok = 0,
  Recording = 1,    // fine, but tracing a recording: it cannot go back and retry the call
  GuardFailed = 2,  // a recorded size guard failed: the call may be retried on another path
  Failed = 3,       // any other error
};

/// A guard or another error (not Ok, not Recording).
inline bool is_failure(Outcome o) {
  return o == Outcome::GuardFailed || o == Outcome::Failed;
}

/// What every rank said: the worst outcome, the highest rank that reported it where it is a
/// failure (-1: none), and whether some rank was recording.
struct Agreement {
  Outcome worst = Outcome::Ok;
  int failed_rank = -1;
  bool recording = false;

  /// Some rank failed (a guard or another error).
  bool failed() const { return is_failure(worst); }

  /// Every rank may retry the call on another path: a guard failed somewhere, nothing worse,
  /// and no rank is tracing (which cannot retry).
  bool retry() const { return worst == Outcome::GuardFailed && !recording; }
};

/// The message of a rank that records a call while rank `failed_rank` failed its replay of it
/// `where` ("between two collectives"): the recording rank cannot retry, so every rank raises.
inline std::string recorder_cannot_retry(int failed_rank, const char* where) {
  return "ff::dist: rank " + std::to_string(failed_rank) + " failed in its replay of this call " +
         where + ", and this rank, which records the call, cannot retry it: every rank raises";
}

/// Every rank states its outcome; returns what all of them said (one MPI_Allreduce of two
/// ints, on a communicator of its own). A recording or replay calls it before each collective
/// after its first, and at its end where it has exchanged sizes, so a rank that failed in
/// between can tell the others instead of leaving them waiting. Raises ff::BackendError on an
/// MPI error.
Agreement agree(Outcome mine);

/// Ends every rank (MPI_Abort) after logging `why` at error level: for a rank that fails where
/// the others would wait for it forever. Returns (does nothing) where ff::dist is not running.
void abort_all(const std::string& why) noexcept;

}  // namespace ff::dist_impl
