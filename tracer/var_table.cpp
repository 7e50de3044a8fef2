// Tables of variables per thread, the handshake that lets other threads reach them, imports of
// foreign variables, and orphaned tables. See var_table.h for the protocol.
#include "tracer/var_table.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <unordered_map>

#include "common/log.h"
#include "freezeframe/errors.h"
#include "tracer/variable.h"

namespace ff::detail {

__thread TracerState* t_state = nullptr;
__thread int t_window_depth = 0;

namespace {

thread_local bool t_state_dead = false;

/// membarrier(2) with the private expedited command: a full fence on every CPU running a thread
/// of this process, a few microseconds. Registered once; unavailable on old kernels and in some
/// sandboxes, and invisible to ThreadSanitizer.
bool register_membarrier() {
#if defined(__SANITIZE_THREAD__)
  return false;
#else
  if (!asymmetric_fences_allowed())
    return false;
  long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
    return false;
  return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
}

void heavy_barrier() {
  if (g_asymmetric_fences) {
    if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
      return;
    // Cannot fail once registered; if it ever does, a plain fence is not enough against a
    // compiler-fenced owner, so stop rather than race.
    std::abort();
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

/// Every table that other threads may reach: the live threads' own and orphaned ones. Never
/// destroyed (handles in static arrays are released during static destruction).
struct Registry {
  std::mutex mutex;
  std::unordered_map<uint32_t, std::shared_ptr<TracerState>> tables;
  uint32_t next_id = 1;
};

Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

std::shared_ptr<TracerState> find_table(uint32_t id) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.tables.find(id);
  if (it == r.tables.end())
    throw Error("an array handle names variable table " + std::to_string(id) +
                ", which no longer exists (a handle used after its array was destroyed?)");
  return it->second;
}

/// Orphans the calling thread's table when the thread exits; a table without variables goes.
struct StateHolder {
  std::shared_ptr<TracerState> table;

  ~StateHolder() {
    if (!table)
      return;
    bool empty;
    {
      std::lock_guard lock(table->foreign_mutex);
      table->orphaned = true;
      empty = table->live == 0 && table->side_effects.empty();
    }
    if (empty) {
      Registry& r = registry();
      std::lock_guard lock(r.mutex);
      r.tables.erase(table->id);
    }
    t_state = nullptr;
    t_state_dead = true;
  }
};

}  // namespace

// Decided when the first thread table is made (create_thread_table), before any thread can
// enter a window or take another's table: both need a table, and every table is made after it.
bool g_asymmetric_fences = false;

TracerState& create_thread_table() {
  if (t_state_dead)
    throw Error("freezeframe used on a thread after its tracing state was destroyed");
  static const bool fences_decided = (g_asymmetric_fences = register_membarrier(), true);
  (void)fences_decided;
  thread_local StateHolder holder;
  watch_for_process_exit();
  auto table = std::make_shared<TracerState>();
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    table->id = r.next_id++;
    r.tables.emplace(table->id, table);
  }
  holder.table = table;
  t_state = table.get();
  return *table;
}

void window_enter_slow(TracerState& s) {
  // Another thread holds (or is about to take) the table: step back, wait for it to finish,
  // and enter under the mutex, where no other thread can start an access.
  s.busy.store(0, std::memory_order_release);
  std::lock_guard lock(s.foreign_mutex);
  s.busy.store(1, std::memory_order_relaxed);
}

ForeignAccess::ForeignAccess(uint32_t table)
    : table_(find_table(table)), saved_state_(t_state), saved_depth_(t_window_depth) {
  if (saved_depth_ > 0 && saved_state_)
    saved_state_->busy.store(0, std::memory_order_release);  // never wait while holding ours
  table_->foreign_mutex.lock();
  if (!table_->orphaned) {
    table_->request.store(1, std::memory_order_seq_cst);
    heavy_barrier();
    for (int spins = 0; table_->busy.load(std::memory_order_acquire); ++spins) {
      if (spins < 64)
        continue;
      if (spins < 256)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  t_state = table_.get();
  t_window_depth = 1;  // windows inside are the impersonated owner's, already held
}

ForeignAccess::~ForeignAccess() {
  bool gone = table_->orphaned && table_->live == 0 && table_->side_effects.empty();
  t_state = saved_state_;
  t_window_depth = saved_depth_;
  if (!table_->orphaned)
    table_->request.store(0, std::memory_order_release);
  table_->foreign_mutex.unlock();
  if (gone) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    r.tables.erase(table_->id);
  }
  if (saved_depth_ > 0 && saved_state_) {  // re-enter the window released above
    TracerState& s = *saved_state_;
    s.busy.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (s.request.load(std::memory_order_acquire))
      window_enter_slow(s);
  }
}

uint32_t localize(Handle h, bool* fresh) {
  TracerState& own = state();
  if (table_of(h) == own.id) {
    *fresh = false;
    return index_of(h);
  }
  // Read what is needed out of the other table, evaluating there if the variable is lazy or
  // has a scatter pending, then make the local variable in our own table.
  VarKind kind;
  ScalarType type;
  uint64_t size, imm;
  SizeExprPtr prov;
  std::shared_ptr<Buffer> buffer;
  {
    ForeignAccess access(table_of(h));
    TracerState& s = state();
    VarId v = index_of(h);
    if (v >= s.vars.size() || s[v].kind == VarKind::Empty || s[v].refs == 0)
      throw Error("an array handle names a variable that no longer exists");
    if (s[v].dirty)
      flush_side_effects();
    if (s[v].kind == VarKind::Op || s[v].kind == VarKind::Scalar)
      materialize(v);
    Variable& var = s[v];
    kind = var.kind;
    type = var.type;
    size = var.size;
    imm = var.imm;
    prov = var.prov;
    buffer = var.buffer;
    if (kind == VarKind::Evaluated)
      var.shared = true;  // from now on a scatter into either side copies first
  }
  Window w;
  VarId local = 0;
  if (kind == VarKind::Literal) {
    local = new_var(VarKind::Literal, type, size, std::move(prov));
    own[local].imm = imm;
  } else {
    local = new_var(VarKind::Evaluated, type, size, std::move(prov));
    own[local].buffer = std::move(buffer);
    own[local].shared = true;
  }
  --own.n_traced_ops;  // an import traces nothing
  *fresh = true;
  return local;
}

size_t n_tables() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.tables.size();
}

}  // namespace ff::detail
