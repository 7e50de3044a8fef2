// The replay entry at the level of tracer handles: see freeze_replay.h.
#include "frontend/freeze_replay.h"

#include "frontend/recording_state.h"
#include "recorder/recording_backend.h"
#include "tracer/device.h"
#include "tracer/variable.h"

namespace ff::detail {

void ReplayScratch::drop_outputs() noexcept {
  for (TypedHandle& o : outputs)
    if (o.handle)
      dec_ref(o.handle);
  outputs.clear();
}

namespace {

/// The inputs' buffers (evaluated, with the scatters pending on them run); the arrays keep
/// them alive. Inside the caller's window.
void bind_inputs(std::span<const TypedHandle> inputs, std::vector<replay::ReplayInput>& bound) {
  bound.clear();
  for (const TypedHandle& in : inputs) {
    std::shared_ptr<Buffer> b = evaluated_buffer(in.handle);
    bound.push_back({b->ptr, b->type, b->size});
  }
}

/// The replay's outputs as arrays of this thread (`out`: one reference each). Inside the
/// caller's window. On an error, frees every buffer not yet owned by an array.
void wrap_outputs(std::span<const replay::ReplayOutput> outs, std::span<const TypedHandle> inputs,
                  const std::shared_ptr<Device>& device, std::vector<TypedHandle>& out) {
  out.reserve(outs.size());
  size_t k = 0;
  try {
    for (; k < outs.size(); ++k) {
      const replay::ReplayOutput& o = outs[k];
      if (o.input >= 0 || o.same_as >= 0) {  // another reference to an input or earlier output
        TypedHandle same = o.input >= 0 ? inputs[static_cast<size_t>(o.input)]
                                        : out[static_cast<size_t>(o.same_as)];
        inc_ref(same.handle);
        out.push_back(same);
        continue;
      }
      std::shared_ptr<Buffer> buffer;
      try {
        buffer = std::make_shared<Buffer>(o.ptr, o.size, o.type, device);
      } catch (...) {
        device->backend().release(o.ptr);
        throw;
      }
      out.push_back({handle_for_buffer(std::move(buffer), /*traced=*/false), o.type});
    }
  } catch (...) {
    for (size_t j = k + 1; j < outs.size(); ++j)  // not yet owned by a Buffer
      if (outs[j].input < 0 && outs[j].same_as < 0)
        device->backend().release(outs[j].ptr);
    throw;
  }
}

}  // namespace

void replay_handles(const Recording& r, std::span<const TypedHandle> inputs, ReplayScratch& s) {
  const RecordingState& state_of_r = *recording_state(r);
  const std::shared_ptr<Device>& device = current_device();
  Backend& backend = device->backend();
  auto* rb = dynamic_cast<rec::RecordingBackend*>(&backend);
  if (rb && rb->innermost() == state_of_r.data.get())
    throw FreezeError("replay: a recording cannot be replayed into itself");
  replay::ReplayOptions options;
  options.provenance = rb && (rb->scope_open() || rb->is_capturing());
  // Inside an open scope its recording backend makes the ranks' agreements (a session capture
  // alone makes none: it holds no collectives).
  options.agreements = !(rb && rb->scope_open());
  options.check_collectives = debug_checks();
  std::shared_ptr<const replay::ReplayPlan> plan = state_of_r.plan_for(backend);
  s.drop_outputs();
  state();   // this thread's table exists before its window opens
  Window w;  // the evaluated_buffer and handle_for_buffer calls inside nest in it
  bind_inputs(inputs, s.bound);
  replay::run(*plan, backend, s.bound, options, s.outs);
  try {
    wrap_outputs(s.outs, inputs, device, s.outputs);
  } catch (...) {
    s.drop_outputs();
    throw;
  }
}

}  // namespace ff::detail
