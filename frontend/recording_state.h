// What a public ff::Recording holds: the immutable data plus its cached replay plan.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "freezeframe/recording.h"
#include "recorder/recording.h"
#include "replay/replay_plan.h"

namespace ff::detail {

struct RecordingState {
  RecordingState() = default;

  /// A recording validated by its maker (the recorder, the file reader): never validated again.
  explicit RecordingState(rec::ValidatedRecording validated)
      : data(validated.shared()), validated_(std::move(validated)) {}

  /// The recording. One set here rather than through the constructor (a session capture, a
  /// recording built by hand) is validated when it is first replayed.
  std::shared_ptr<const rec::RecordingData> data;

  /// The plan for `backend`, built on first use and rebuilt for another backend object or
  /// after a kernel flush.
  std::shared_ptr<const replay::ReplayPlan> plan_for(Backend& backend) const {
    uint64_t generation = backend.kernel_generation();
    std::lock_guard lock(mutex_);
    if (!plan_ || plan_->backend_id() != backend.instance_id() ||
        plan_->generation() != generation) {
      if (!validated_ || validated_->get() != data.get())
        validated_ = rec::ValidatedRecording::check(data);
      plan_ = std::make_shared<replay::ReplayPlan>(*validated_, backend);
    }
    return plan_;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::optional<rec::ValidatedRecording> validated_;  // `data`, once validated
  mutable std::shared_ptr<const replay::ReplayPlan> plan_;
};

/// ff::record, except that what the recorder refuses leaves as rec::Refusal (the frozen
/// functions' front end names the function in it); ff::record turns it into the plain
/// ff::FreezeError its callers are promised.
/// `failed_rank`: where another rank's replay of the call failed after the last collective
/// (the end agreement, docs/dist.md), the rank is stored there and the finished recording
/// returned; without it (null), that raises dist_impl::EveryRankError.
Recording record_scope(const std::vector<AnyArray>& inputs,
                       const std::function<std::vector<AnyArray>()>& fn,
                       const RecordOptions& options, int* failed_rank = nullptr);

}  // namespace ff::detail
