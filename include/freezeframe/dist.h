// ff::dist: several processes (MPI ranks) running the same program, combining arrays with
// collectives. A collective is a backend operation: it runs after the work that produces its
// input, on the device's buffers (staged through host memory on a GPU). Every rank must call
// the same collectives in the same order (the lock-step is the program's, as in MPI).
// docs/dist.md has the details; a build without MPI raises ff::Error from every call.
#pragma once

#include <functional>
#include <string>

#include "freezeframe/array.h"
#include "freezeframe/detail/collective_kind.h"
#include "freezeframe/errors.h"
#include "freezeframe/reduce_op.h"

namespace ff::dist {

/// As `dest` or `source` of sendrecv: send nothing, or receive nothing (an edge rank).
inline constexpr int kNone = detail::kNoPeer;

/// Initialises MPI with MPI_THREAD_MULTIPLE, unless the program already has (its level is then
/// kept; below MULTIPLE, ff::dist may be used only from the thread that called init()).
/// Calling it again before finalize() does nothing.
void init(int& argc, char**& argv);
void init();
/// Ends ff::dist's use of MPI. MPI itself is finalised at process exit when init() started it
/// (MPI cannot start twice, so init() after finalize() keeps working), never when the program
/// started it.
void finalize();
/// True between init() and finalize().
bool initialized();
/// This process's rank in [0, size()), and the number of ranks. ff::Error before init().
/// Read inside a recording (ff::record, a frozen function's first call), the int pins the
/// recording to it: a guard `rank == r` (or `ranks == n`), so a replay on another rank raises
/// ff::GuardError and a frozen function records that rank's call anew. rank_expr() keeps the
/// rank an expression instead.
int rank();
int size();

/// This rank and the rank count as ff::Size: inside a recording, expressions that every replay
/// evaluates on its own process (so a recording that computes a row offset or a neighbour
/// from them replays correctly on every rank: ff::dist::share). Arithmetic keeps them
/// expressions; a comparison records a guard, and a conversion to an int pins them, like any
/// ff::Size. ff::from_size turns one into an array for kernels.
Size rank_expr();
Size size_expr();

/// A peer of sendrecv: a rank (or kNone), converted from an int, or a rank relative to the
/// calling one (relative(), cyclic()). A recording keeps a relative peer as an offset and
/// resolves it on the replaying rank, so a halo exchange recorded on one rank replays on all;
/// one with an absolute peer replays only on the rank that recorded it.
struct Peer {
  Peer(int rank) : spec{rank, ff::detail::PeerMode::Absolute} {}  // NOLINT: implicit by design

  ff::detail::PeerSpec spec;
};

/// The rank `offset` away from the calling one; kNone before rank 0 or past the last rank (the
/// edges of a domain split into bands). |offset| <= 2^20 - 1.
inline Peer relative(int offset) {
  Peer p(kNone);
  p.spec = {offset, ff::detail::PeerMode::Relative};
  return p;
}

/// The rank `offset` away from the calling one, wrapping around (a periodic domain, a ring).
inline Peer cyclic(int offset) {
  Peer p(kNone);
  p.spec = {offset, ff::detail::PeerMode::Cyclic};
  return p;
}

namespace detail {
[[noreturn]] void refuse_gradient(const char* what);

/// share()'s work, on every rank: the root saves through `save` (to a file of its own), every
/// rank receives the bytes, the others add them through `load`. Raises on every rank where any
/// rank failed.
void share_recordings(const std::function<void(const std::string&)>& save,
                      const std::function<void(const std::string&)>& load, int root);

template <class T>
Array<T> collective(ff::detail::CollectiveKind kind, ReduceOp op, Peer peer, Peer source,
                    const Array<T>& x, const char* what) {
  if constexpr (ff::detail::kDifferentiable<T>)
    if (x.ad_index()) [[unlikely]]
      refuse_gradient(what);
  return Array<T>::steal(ff::detail::var_collective(kind, op, peer.spec, source.spec, x.id()));
}
}  // namespace detail

/// Elementwise op over every rank's x (all the same size; FF_DEBUG checks it, and under FF_DEBUG
/// every collective checks that every rank makes the same call): each rank gets
/// the result. Integer Add and Mul wrap; float Min and Max ignore NaN where another value
/// exists; And and Or are for integer and Bool arrays, Add and Mul not for Bool.
template <class T>
Array<T> all_reduce(const Array<T>& x, ReduceOp op) {
  return detail::collective(ff::detail::CollectiveKind::AllReduce, op, 0, kNone, x, "all_reduce");
}

/// Every rank's x concatenated in rank order (sizes may differ between ranks).
template <class T>
Array<T> all_gather(const Array<T>& x) {
  return detail::collective(ff::detail::CollectiveKind::AllGather, ReduceOp::Add, 0, kNone, x,
                            "all_gather");
}

/// The root's x on every rank (the other ranks' x is not read; the result has the root's size).
template <class T>
Array<T> broadcast(const Array<T>& x, int root) {
  return detail::collective(ff::detail::CollectiveKind::Broadcast, ReduceOp::Add, root, kNone, x,
                            "broadcast");
}

/// Sends x to rank `dest` and returns what rank `source` sent this rank (its size is the size
/// source sent): one step of a halo exchange. kNone as dest sends nothing; as source, the
/// result is empty. Peers relative to this rank (relative(+1), cyclic(-1)) make a recording
/// that replays on every rank.
template <class T>
Array<T> sendrecv(const Array<T>& x, Peer dest, Peer source) {
  return detail::collective(ff::detail::CollectiveKind::SendRecv, ReduceOp::Add, dest, source, x,
                            "sendrecv");
}

/// Every recording the root's frozen function `f` holds now reaches `f` on every rank (the
/// file format of f.save, broadcast): a later call of a kind the root recorded replays there
/// without tracing; a call of another kind (another key: rank-specific C++ arguments are part of
/// it) records for itself, with an info line. Collective: every rank calls it with the same
/// root. A recording replays right on every rank when its rank-specific parts are expressions
/// (rank_expr(), relative() peers); an int read of rank() or a peer given as a rank pins a
/// recording to its rank (elsewhere ff::GuardError, and the call records for itself). Values a
/// body reads from its captures are baked in, as ever in ff::freeze: take rank-specific values
/// as arguments or read them inside the body. docs/dist.md, "Sharing".
template <class F>
void share(F& f, int root) {
  detail::share_recordings([&](const std::string& path) { f.save(path); },
                           [&](const std::string& path) { f.load(path); }, root);
}

}  // namespace ff::dist
