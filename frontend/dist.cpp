// ff::dist's process-level calls: they hand over to dist/, the one module that calls MPI.
#include "freezeframe/dist.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "common/file_io.h"
#include "common/log.h"
#include "dist/mpi_world.h"
#include "freezeframe/detail/tracer_api.h"
#include "runtime/environment.h"

namespace ff::dist {

void init(int& argc, char**& argv) {
  dist_impl::init(&argc, &argv, ff::detail::dist_cuda_aware_from_environment());
}

void init() {
  dist_impl::init(nullptr, nullptr, ff::detail::dist_cuda_aware_from_environment());
}

void finalize() {
  dist_impl::finalize();
}

bool initialized() {
  return dist_impl::initialized();
}

Size rank_expr() {
  return ff::detail::dist_size_leaf(false, static_cast<uint64_t>(dist_impl::rank()));
}

Size size_expr() {
  return ff::detail::dist_size_leaf(true, static_cast<uint64_t>(dist_impl::size()));
}

// Inside a recording an int read pins the recording to its value (the guard that Size's
// conversion records), so a replay on another rank or rank count records anew instead of
// replaying a rank baked in.
int rank() {
  return static_cast<int>(rank_expr().value());
}

int size() {
  return static_cast<int>(size_expr().value());
}

namespace detail {

namespace {

/// A broadcast of host memory from `root` (every rank passes `count`; the root's counts).
void broadcast_host(ScalarType type, void* data, size_t count, int root) {
  dist_impl::Collective c;
  c.kind = dist_impl::CollectiveKind::Broadcast;
  c.type = type;
  c.root = root;
  c.in = data;
  c.count = count;
  c.out = data;
  c.out_count = count;
  dist_impl::run(c);
}

/// True on every rank when `ok` is true on every rank.
bool everyone(bool ok) {
  uint32_t mine = ok ? 1 : 0, all = 0;
  dist_impl::Collective c;
  c.kind = dist_impl::CollectiveKind::AllReduce;
  c.type = ScalarType::UInt32;
  c.op = ReduceOp::Min;
  c.in = &mine;
  c.count = 1;
  c.out = &all;
  c.out_count = 1;
  dist_impl::run(c);
  return all == 1;
}

std::string share_path() {
  static std::atomic<uint64_t> next{0};
  return (std::filesystem::temp_directory_path() /
          ("ff-share-" + std::to_string(::getpid()) + "-" + std::to_string(next++) + ".ffr"))
      .string();
}

}  // namespace

void share_recordings(const std::function<void(const std::string&)>& save,
                      const std::function<void(const std::string&)>& load, int root) {
  int ranks = dist_impl::size(), me = dist_impl::rank();
  if (root < 0 || root >= ranks)
    throw Error("ff::dist::share: root rank " + std::to_string(root) + " is not in [0, " +
                std::to_string(ranks) + ")");
  std::string path = share_path();
  std::vector<std::byte> bytes;
  std::string failure;
  if (me == root) {
    try {
      save(path);
      bytes = read_file(path);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    std::remove(path.c_str());
  }
  // The size first (all ones: the root failed), so that every rank raises together.
  uint64_t n = failure.empty() ? bytes.size() : ~uint64_t{0};
  broadcast_host(ScalarType::UInt64, &n, 1, root);
  if (n == ~uint64_t{0})
    throw Error("ff::dist::share: the root (rank " + std::to_string(root) +
                ") could not save the function's recordings" +
                (failure.empty() ? std::string() : ": " + failure));
  bytes.resize(n);
  broadcast_host(ScalarType::Bool, bytes.data(), n, root);
  if (me != root) {
    try {
      write_file_atomic(path, bytes, /*durable=*/false);
      load(path);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    std::remove(path.c_str());
  }
  if (!everyone(failure.empty()))
    throw Error("ff::dist::share: a rank could not load the root's recordings" +
                (failure.empty() ? std::string() : " (this rank: " + failure + ")"));
  logging::dist().info("share: {} bytes of recordings from rank {}", n, root);
}

void refuse_gradient(const char* what) {
  throw Error(std::string("ff::dist::") + what +
              ": collectives have no gradient rules yet, and this array has a gradient (pass "
              "ff::detach(x))");
}
}  // namespace detail

}  // namespace ff::dist
