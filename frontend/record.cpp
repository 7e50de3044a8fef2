// The front end that joins the tracer and the recorder: ff::record, Recording::replay (over
// freeze_replay.h's handle-level entry, which frozen calls use directly), ff::capture.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "common/log.h"
#include "dist/mpi_world.h"
#include "freezeframe/recording.h"
#include "frontend/freeze_replay.h"
#include "frontend/recording_state.h"
#include "recorder/optimize.h"
#include "recorder/recording_backend.h"
#include "recorder/recording_text.h"
#include "runtime/environment.h"
#include "tracer/variable.h"

namespace ff {
namespace detail {
namespace {

/// The recorder at the top of the stack, inserted on demand; it stays for the session.
rec::RecordingBackend& recorder() {
  Backend& top = current_device()->decorate(
      [](Backend& b) { return dynamic_cast<rec::RecordingBackend*>(&b) != nullptr; },
      [](std::unique_ptr<Backend> inner) -> std::unique_ptr<Backend> {
        logging::record().info("inserting a recorder above '{}'", inner->name());
        return std::make_unique<rec::RecordingBackend>(std::move(inner), false);
      });
  return static_cast<rec::RecordingBackend&>(top);
}

}  // namespace
}  // namespace detail

Recording::Recording() : state_(std::make_shared<detail::RecordingState>()) {
  state_->data = std::make_shared<rec::RecordingData>();
}

Recording::Recording(std::shared_ptr<detail::RecordingState> state) : state_(std::move(state)) {}

const std::shared_ptr<detail::RecordingState>& detail::recording_state(const Recording& r) {
  return r.state_;
}

size_t Recording::n_ops() const {
  return state_->data->ops.size();
}

size_t Recording::n_kernels() const {
  return state_->data->kernels.size();
}

size_t Recording::n_inputs() const {
  return state_->data->inputs.size();
}

size_t Recording::n_outputs() const {
  return state_->data->outputs.size();
}

size_t Recording::n_slots() const {
  return state_->data->slots.size();
}

size_t Recording::n_guards() const {
  return state_->data->guards.size();
}

std::string Recording::summary() const {
  return state_->data->summary();
}

std::string Recording::to_string() const {
  return rec::to_text(*state_->data);
}

Recording record(const std::vector<AnyArray>& inputs,
                 const std::function<std::vector<AnyArray>()>& fn, const RecordOptions& options) {
  try {
    return detail::record_scope(inputs, fn, options);
  } catch (const rec::Refusal& e) {
    throw FreezeError(e.what());  // the documented type, exactly
  }
}

namespace {

/// Inside a catch: the outermost recording failed. Where it had run a collective that exchanged
/// sizes, the other ranks' next exchange for this call is an agreement (before their next
/// collective, or at the end of a recording of the same kinds), so this rank reports the
/// failure there and every rank raises. Not after an error every rank raised at once, and not
/// where only all_reduces ran: whether the others wait then depends on collectives this rank
/// never reached. An error inside a collective (the others are still in it) ends every rank,
/// as a replay's does.
void tell_ranks_recording_failed(const rec::ScopeCollectives& collectives) {
  std::string what;
  try {
    throw;
  } catch (const dist_impl::EveryRankError&) {
    return;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  if (collectives.inside)
    dist_impl::abort_all("a recording failed inside a collective (" + what +
                         "); the other ranks would wait for this one forever");
  if (collectives.count == 0 || !collectives.sizes)
    return;
  try {
    (void)dist_impl::agree(dist_impl::Outcome::Failed);
  } catch (const std::exception& e) {
    dist_impl::abort_all(std::string("a recording failed after a collective and could not tell "
                                     "the other ranks (") +
                         e.what() + ")");
  }
}

}  // namespace

Recording detail::record_scope(const std::vector<AnyArray>& inputs,
                               const std::function<std::vector<AnyArray>()>& fn,
                               const RecordOptions& options, int* failed_rank) {
  using namespace detail;
  for (const AnyArray& a : inputs)
    if (!a.valid())
      throw FreezeError("record: an input AnyArray is empty");
  // Scatters still pending belong to the traced program before the scope, not to it.
  run_pending_scatters();
  std::vector<rec::InputBinding> bindings;
  bindings.reserve(inputs.size());
  for (const AnyArray& a : inputs) {
    std::shared_ptr<Buffer> b = evaluated_buffer(a.id());
    bindings.push_back({b->ptr, b->type, b->size});
  }
  rec::RecordingBackend& rb = recorder();
  // The outermost recording makes the ranks' agreements of ff::dist at its end and on its
  // failure (the recording backend the ones before its collectives).
  bool outermost = !rb.scope_open();
  rec::Scope* scope = rb.open_scope(bindings);
  std::vector<AnyArray> outputs;
  std::vector<const void*> out_ptrs;
  try {
    outputs = fn();
    run_pending_scatters();  // scatters belong to the recording even if their target is dropped
    for (const AnyArray& o : outputs) {
      if (!o.valid())
        throw FreezeError("record: the function returned an empty AnyArray");
      out_ptrs.push_back(evaluated_buffer(o.id())->ptr);
    }
  } catch (...) {
    // Work the scope queued but never ran (a scatter whose launch was refused, or pending
    // when the function threw) is dropped with it: refused work has no effect later.
    drop_pending_scatters();
    rec::ScopeCollectives collectives = rb.collectives_of(scope);
    rb.abort_scope(scope);
    if (outermost)
      tell_ranks_recording_failed(collectives);
    throw;
  }
  rec::ScopeCollectives collectives = rb.collectives_of(scope);
  std::optional<rec::ValidatedRecording> data;
  try {
    data = rb.close_scope(scope, out_ptrs);
    logging::record().debug("recorded {}", (*data)->summary());
    if (options.optimize && detail::optimizer_enabled_by_environment()) {
      data = rec::optimize(*data);
      logging::record().debug("optimised: {}", (*data)->summary());
    }
  } catch (...) {
    if (outermost)
      tell_ranks_recording_failed(collectives);
    throw;
  }
  // A recording that exchanged sizes: every rank agrees once more at its end, as its replays
  // do (replay::agrees_at_end: the optimiser keeps every collective, so the recording's kinds
  // are the scope's).
  if (outermost && collectives.sizes) {
    dist_impl::Agreement a = dist_impl::agree(dist_impl::Outcome::Recording);
    if (a.failed() && failed_rank)
      *failed_rank = a.failed_rank;
    else if (a.failed())
      throw dist_impl::EveryRankError(
          dist_impl::recorder_cannot_retry(a.failed_rank, "after its last collective"));
  }
  return Recording(std::make_shared<RecordingState>(std::move(*data)));
}

std::vector<AnyArray> Recording::replay(const std::vector<AnyArray>& inputs) const {
  using namespace detail;
  // This thread's buffers, reused: a replay runs no user code, so it never re-enters here.
  thread_local std::vector<TypedHandle> in;
  thread_local ReplayScratch s;
  in.clear();
  for (const AnyArray& a : inputs) {
    if (!a.valid())
      throw FreezeError("replay: an input AnyArray is empty");
    in.push_back({a.id(), a.type()});
  }
  replay_handles(*this, in, s);
  std::vector<AnyArray> result;
  try {
    result.reserve(s.outputs.size());
  } catch (...) {
    s.drop_outputs();
    throw;
  }
  for (TypedHandle& o : s.outputs)
    result.push_back(AnyArray::steal(std::exchange(o.handle, Handle{0}), o.type));
  return result;
}

Recording capture() {
  using namespace detail;
  auto* rb = dynamic_cast<rec::RecordingBackend*>(&current_device()->backend());
  if (!rb || !rb->is_capturing())
    throw Error(
        "ff::capture() needs a capturing backend stack, e.g. ff::init(\"record:llvm\") "
        "or FF_BACKEND=record:llvm; the current stack is '" +
        current_device()->backend().name() + "'");
  auto state = std::make_shared<RecordingState>();
  state->data = std::make_shared<rec::RecordingData>(rb->capture_snapshot());
  return Recording(std::move(state));
}

}  // namespace ff
