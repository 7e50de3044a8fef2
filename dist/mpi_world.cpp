// ff::dist's MPI calls: initialisation, the communicator, and the four collectives on host
// memory. An all_reduce combines as ff::sum and scatter_reduce do: integer Add and Mul wrap
// (MPI's ops on unsigned types), float Min and Max ignore a NaN where another value exists (ops
// of our own); the rest are MPI's.
#include "dist/mpi_world.h"

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's extensions: MPIX_Query_cuda_support
#endif

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "common/log.h"
#include "freezeframe/errors.h"

namespace ff::dist_impl {
namespace {

struct World {
  std::mutex mutex;  // serialises init and finalize
  // Set last by init, cleared first by finalize: the fields below are read without the lock
  // once it is seen set (a collective's hot path takes no lock).
  std::atomic<bool> initialized{false};
  bool we_started_mpi = false;
  int thread_level = MPI_THREAD_SINGLE;
  std::thread::id init_thread;
  MPI_Comm comm = MPI_COMM_NULL;
  // The agreements' own communicator: an agreement one rank makes and another does not then
  // waits (a hang the CTest timeouts catch) instead of pairing with a collective's data.
  MPI_Comm agree_comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  MPI_Op float_min = MPI_OP_NULL, float_max = MPI_OP_NULL;  // NaN-ignoring (float_extreme)
  bool cuda_aware = false;                                  // takes_device_pointers()
};

World& world() {
  static World w;
  return w;
}

std::string mpi_message(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(len));
}

void check(int code, const std::string& what) {
  if (code != MPI_SUCCESS)
    throw BackendError("ff::dist: " + what + " failed: " + mpi_message(code));
}

/// The communicator, after checking that this thread may use it.
MPI_Comm comm_for(const char* what) {
  World& w = world();
  if (!w.initialized.load(std::memory_order_acquire))
    throw Error(std::string("ff::dist::") + what + ": ff::dist::init() has not been called");
  if (w.thread_level < MPI_THREAD_MULTIPLE && std::this_thread::get_id() != w.init_thread)
    throw Error(std::string("ff::dist::") + what +
                ": called from a second thread, but MPI was initialised by the program below "
                "MPI_THREAD_MULTIPLE (initialise it with MPI_THREAD_MULTIPLE, or call from the "
                "thread that called ff::dist::init)");
  return w.comm;
}

MPI_Datatype datatype(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return MPI_UINT8_T;
    case ScalarType::Int32:
      return MPI_INT32_T;
    case ScalarType::UInt32:
      return MPI_UINT32_T;
    case ScalarType::Int64:
      return MPI_INT64_T;
    case ScalarType::UInt64:
      return MPI_UINT64_T;
    case ScalarType::Float32:
      return MPI_FLOAT;
    case ScalarType::Float64:
      return MPI_DOUBLE;
  }
  throw Error("ff::dist: invalid element type");
}

/// Float Min and Max as freezeframe combines them: a NaN is ignored where another value exists
/// (MPI_MIN and MPI_MAX leave NaN open).
template <class T, bool kMax>
void nan_ignoring(const void* in, void* inout, int len) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < len; ++i) {
    T x = a[i], y = b[i];
    b[i] = std::isnan(x) ? y : std::isnan(y) ? x : kMax ? (x > y ? x : y) : (x < y ? x : y);
  }
}

template <bool kMax>
void float_extreme(void* in, void* inout, int* len, MPI_Datatype* dt) {
  if (*dt == MPI_FLOAT)
    nan_ignoring<float, kMax>(in, inout, *len);
  else if (*dt == MPI_DOUBLE)
    nan_ignoring<double, kMax>(in, inout, *len);
}

/// The MPI op and datatype of an all_reduce: MPI's own where they combine as freezeframe does
/// (signed Add and Mul as unsigned, which wraps by definition), ours for float Min and Max
/// (MPI's leave NaN handling open).
std::pair<MPI_Op, MPI_Datatype> reduction(const World& w, ReduceOp op, ScalarType t) {
  bool is_float = t == ScalarType::Float32 || t == ScalarType::Float64;
  if (is_float && (op == ReduceOp::Min || op == ReduceOp::Max))
    return {op == ReduceOp::Min ? w.float_min : w.float_max, datatype(t)};
  MPI_Datatype dt = datatype(t);
  if (op == ReduceOp::Add || op == ReduceOp::Mul) {
    if (t == ScalarType::Int32)
      dt = MPI_UINT32_T;
    else if (t == ScalarType::Int64)
      dt = MPI_UINT64_T;
  }
  switch (op) {
    case ReduceOp::Add:
      return {MPI_SUM, dt};
    case ReduceOp::Mul:
      return {MPI_PROD, dt};
    case ReduceOp::Min:
      return {MPI_MIN, dt};
    case ReduceOp::Max:
      return {MPI_MAX, dt};
    case ReduceOp::And:
      return {MPI_BAND, dt};
    case ReduceOp::Or:
      return {MPI_BOR, dt};
  }
  throw Error("ff::dist::all_reduce: invalid ReduceOp");
}

void create_ops(World& w) {
  check(MPI_Op_create(float_extreme<false>, /*commute=*/1, &w.float_min), "MPI_Op_create");
  check(MPI_Op_create(float_extreme<true>, /*commute=*/1, &w.float_max), "MPI_Op_create");
}

/// MPI counts are int: larger transfers are refused with a message instead of truncated.
int mpi_count(size_t n, const Collective& c) {
  if (n > static_cast<size_t>(INT32_MAX))
    throw Error(std::string("ff::dist::") + to_string(c.kind) + ": " + std::to_string(n) +
                " elements exceed MPI's int count");
  return static_cast<int>(n);
}

void check_peer(int peer, const char* which, const Collective& c, int nranks) {
  if (peer != kNoPeer && (peer < 0 || peer >= nranks))
    throw Error(std::string("ff::dist::") + to_string(c.kind) + ": " + which + " rank " +
                std::to_string(peer) + " is not in [0, " + std::to_string(nranks) + ")");
}

std::vector<uint64_t> gather_counts(MPI_Comm comm, uint64_t mine, const Collective& c) {
  std::vector<uint64_t> all(static_cast<size_t>(world().size));
  check(MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm),
        std::string(to_string(c.kind)) + " (exchanging counts)");
  return all;
}

/// What a rank's call must agree on: kind, reduction, element type, root, and for an
/// all_reduce the count (the other kinds exchange counts anyway).
struct CallSignature {
  uint64_t kind, op, type, root, count;

  friend bool operator==(const CallSignature&, const CallSignature&) = default;

  std::string describe() const {
    auto k = static_cast<CollectiveKind>(kind);
    std::string s = std::string(to_string(k));
    if (k == CollectiveKind::AllReduce)
      s += std::string(" (") + ff::to_string(static_cast<ReduceOp>(op)) + ") of " +
           std::to_string(count);
    s += std::string(" ") + ff::to_string(static_cast<ScalarType>(type));
    if (k == CollectiveKind::Broadcast)
      s += " from root " + std::to_string(static_cast<int64_t>(root));
    return s;
  }
};

/// FF_DEBUG: every rank's call against every other's (MPI checks none of it: a mismatch would
/// hang or mix data). Every rank sees every signature, so every rank raises the same error.
void check_same_call(MPI_Comm comm, const Collective& c) {
  bool all_reduce = c.kind == CollectiveKind::AllReduce;
  CallSignature mine{static_cast<uint64_t>(c.kind), all_reduce ? static_cast<uint64_t>(c.op) : 0,
                     static_cast<uint64_t>(c.type),
                     c.kind == CollectiveKind::Broadcast ? static_cast<uint64_t>(c.root) : 0,
                     all_reduce ? c.count : 0};
  std::vector<CallSignature> all(static_cast<size_t>(world().size));
  check(MPI_Allgather(&mine, 5, MPI_UINT64_T, all.data(), 5, MPI_UINT64_T, comm),
        std::string(to_string(c.kind)) + " (comparing the ranks' calls)");
  for (size_t r = 1; r < all.size(); ++r)
    if (!(all[r] == all[0]))
      throw EveryRankError("ff::dist::" + std::string(to_string(c.kind)) +
                           ": the ranks make different calls (rank 0: " + all[0].describe() +
                           "; rank " + std::to_string(r) + ": " + all[r].describe() +
                           "); checked because FF_DEBUG is set");
}

/// Whether this MPI library takes CUDA device pointers, as it answers at run time (the same
/// header serves builds with and without CUDA support); false where it cannot say.
bool library_is_cuda_aware() {
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

}  // namespace

void init(int* argc, char*** argv, std::optional<bool> forced) {
  World& w = world();
  std::lock_guard lock(w.mutex);
  if (w.initialized.load(std::memory_order_acquire))
    return;
  int already = 0, finalized = 0;
  check(MPI_Initialized(&already), "MPI_Initialized");
  check(MPI_Finalized(&finalized), "MPI_Finalized");
  if (finalized)
    throw Error(
        "ff::dist::init: MPI has already been finalised in this process (it cannot start "
        "twice)");
  if (already) {
    check(MPI_Query_thread(&w.thread_level), "MPI_Query_thread");
    w.we_started_mpi = false;
  } else {
    check(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &w.thread_level), "MPI_Init_thread");
    w.we_started_mpi = true;
  }
  w.init_thread = std::this_thread::get_id();
  check(MPI_Comm_dup(MPI_COMM_WORLD, &w.comm), "MPI_Comm_dup");
  check(MPI_Comm_set_errhandler(w.comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check(MPI_Comm_dup(w.comm, &w.agree_comm), "MPI_Comm_dup");
  check(MPI_Comm_rank(w.comm, &w.rank), "MPI_Comm_rank");
  check(MPI_Comm_size(w.comm, &w.size), "MPI_Comm_size");
  create_ops(w);
  bool cuda_aware = forced ? *forced : library_is_cuda_aware();
  w.cuda_aware = cuda_aware;
  w.initialized.store(true, std::memory_order_release);
  logging::dist().info("rank {} of {} (MPI thread level {}{}); device buffers {}", w.rank, w.size,
                       w.thread_level, w.we_started_mpi ? "" : ", initialised by the program",
                       !cuda_aware ? "go through host memory (MPI is not CUDA-aware)"
                       : forced    ? "go to MPI directly (FF_DIST_CUDA_AWARE)"
                                   : "go to MPI directly (MPI is CUDA-aware)");
}

void finalize() noexcept {
  World& w = world();
  std::lock_guard lock(w.mutex);
  if (!w.initialized.load(std::memory_order_acquire))
    return;
  w.initialized.store(false, std::memory_order_release);
  for (MPI_Op* op : {&w.float_min, &w.float_max})
    if (*op != MPI_OP_NULL)
      MPI_Op_free(op);
  MPI_Comm_free(&w.agree_comm);
  MPI_Comm_free(&w.comm);
  w.comm = MPI_COMM_NULL;
  w.agree_comm = MPI_COMM_NULL;
  w.rank = 0;
  w.size = 1;
  // MPI itself stays up until process exit when the program started it (it cannot restart, so
  // an init/finalize/init cycle must keep it); ours is finalised at exit.
  if (w.we_started_mpi) {
    static std::once_flag registered;
    std::call_once(registered, [] {
      std::atexit([] {
        int up = 0, down = 0;
        MPI_Initialized(&up);
        MPI_Finalized(&down);
        if (up && !down)
          MPI_Finalize();
      });
    });
  }
}

Agreement agree(Outcome mine) {
  comm_for("agreement");
  World& w = world();
  // MAX of each: the worst outcome with the highest rank that has it, and whether any rank
  // records.
  int in[2] = {(static_cast<int>(mine) << 24) | (is_failure(mine) ? w.rank : 0),
               mine == Outcome::Recording ? 1 : 0};
  int out[2] = {0, 0};
  check(MPI_Allreduce(in, out, 2, MPI_INT, MPI_MAX, w.agree_comm),
        "the agreement between a replay's collectives");
  Agreement a;
  a.worst = static_cast<Outcome>(out[0] >> 24);
  a.failed_rank = a.failed() ? out[0] & 0xFFFFFF : -1;
  a.recording = out[1] != 0;
  return a;
}

void abort_all(const std::string& why) noexcept {
  World& w = world();
  if (!w.initialized.load(std::memory_order_acquire))
    return;
  logging::dist().error("rank {} of {}: {}: aborting every rank", w.rank, w.size, why);
  logging::dist().flush();
  MPI_Abort(w.comm, 1);
}

bool initialized() {
  return world().initialized.load(std::memory_order_acquire);
}

bool takes_device_pointers() {
  World& w = world();
  return w.initialized.load(std::memory_order_acquire) && w.cuda_aware;
}

int rank(const char* what) {
  comm_for(what);
  return world().rank;
}

int size(const char* what) {
  comm_for(what);
  return world().size;
}

size_t exchange_count(const Collective& c) {
  MPI_Comm comm = comm_for(to_string(c.kind));
  int nranks = world().size;
  if (c.check)
    check_same_call(comm, c);
  switch (c.kind) {
    case CollectiveKind::AllReduce:
      return c.count;
    case CollectiveKind::AllGather: {
      c.counts = gather_counts(comm, c.count, c);  // kept for run(): one exchange, not two
      uint64_t total = 0;
      for (uint64_t n : c.counts)
        total += n;
      return total;
    }
    case CollectiveKind::Broadcast: {
      if (c.root < 0 || c.root >= nranks)
        throw Error("ff::dist::broadcast: root rank " + std::to_string(c.root) + " is not in [0, " +
                    std::to_string(nranks) + ")");
      uint64_t n = c.count;
      check(MPI_Bcast(&n, 1, MPI_UINT64_T, c.root, comm), "broadcast (sending the count)");
      return n;
    }
    case CollectiveKind::SendRecv: {
      check_peer(c.dest, "dest", c, nranks);
      check_peer(c.source, "source", c, nranks);
      uint64_t mine = c.count, theirs = 0;
      check(
          MPI_Sendrecv(&mine, c.dest == kNoPeer ? 0 : 1, MPI_UINT64_T,
                       c.dest == kNoPeer ? MPI_PROC_NULL : c.dest, 1, &theirs,
                       c.source == kNoPeer ? 0 : 1, MPI_UINT64_T,
                       c.source == kNoPeer ? MPI_PROC_NULL : c.source, 1, comm, MPI_STATUS_IGNORE),
          "sendrecv (exchanging counts)");
      return c.source == kNoPeer ? 0 : theirs;
    }
  }
  throw Error("ff::dist: invalid collective kind");
}

void run(const Collective& c) {
  MPI_Comm comm = comm_for(to_string(c.kind));
  World& w = world();
  MPI_Datatype dt = datatype(c.type);
  size_t elem = size_of(c.type);
  switch (c.kind) {
    case CollectiveKind::AllReduce: {
      auto [op, op_type] = reduction(w, c.op, c.type);
      check(MPI_Allreduce(c.in, c.out, mpi_count(c.count, c), op_type, op, comm), "all_reduce");
      return;
    }
    case CollectiveKind::AllGather: {
      // Every rank counted first (exchange_count), or none did (a Collective built by hand).
      std::vector<uint64_t> counts = c.counts.size() == static_cast<size_t>(w.size)
                                         ? c.counts
                                         : gather_counts(comm, c.count, c);
      std::vector<int> n(counts.size()), displ(counts.size());
      size_t at = 0;
      for (size_t r = 0; r < counts.size(); ++r) {
        n[r] = mpi_count(counts[r], c);
        displ[r] = mpi_count(at, c);
        at += counts[r];
      }
      if (at != c.out_count)
        throw Error("ff::dist::all_gather: the ranks now send " + std::to_string(at) +
                    " elements in all, not the " + std::to_string(c.out_count) + " counted before");
      check(MPI_Allgatherv(c.count ? c.in : c.out, n[static_cast<size_t>(w.rank)], dt, c.out,
                           n.data(), displ.data(), dt, comm),
            "all_gather");
      return;
    }
    case CollectiveKind::Broadcast: {
      if (w.rank == c.root && c.out != c.in && c.count)
        std::memcpy(c.out, c.in, c.count * elem);
      if (c.out_count == 0)
        return;
      check(MPI_Bcast(c.out, mpi_count(c.out_count, c), dt, c.root, comm), "broadcast");
      return;
    }
    case CollectiveKind::SendRecv: {
      check_peer(c.dest, "dest", c, w.size);
      check_peer(c.source, "source", c, w.size);
      check(
          MPI_Sendrecv(c.in, c.dest == kNoPeer ? 0 : mpi_count(c.count, c), dt,
                       c.dest == kNoPeer ? MPI_PROC_NULL : c.dest, 2, c.out,
                       c.source == kNoPeer ? 0 : mpi_count(c.out_count, c), dt,
                       c.source == kNoPeer ? MPI_PROC_NULL : c.source, 2, comm, MPI_STATUS_IGNORE),
          "sendrecv");
      return;
    }
  }
}

}  // namespace ff::dist_impl
