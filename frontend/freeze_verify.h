// Verify mode of frozen functions (FreezeOptions::verify, FF_FREEZE_VERIFY): every Nth replay
// also runs the body traced on copies of the arguments and compares every output. Internal.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "freezeframe/freeze.h"

namespace ff::detail {

/// Which replays are checked: every Nth (0: none), never inside an open recording scope (the
/// outer recording would record the traced run).
class VerifySchedule {
 public:
  void set_every(uint32_t n) {
    every_ = n;
    countdown_ = n;
  }

  uint32_t every() const { return every_; }

  /// Whether this replay is checked (counts it).
  bool due();

  /// The replay that was due did not fit (a guard failed): the next one that fits is checked.
  void retry_next() { countdown_ = 1; }

 private:
  uint32_t every_ = 0;
  std::atomic<uint64_t> countdown_{0};
};

/// After a replay that rebuilt the call's outputs (CallSite::keep_copies before it): runs the
/// body traced on the copies and compares each output with the replay's, floats within a
/// tolerance where `tolerant` (order-dependent float work). Throws ff::FreezeError naming the
/// first output and element that differ; `prefix` starts the message.
void verify_replay(CallSite& site, const WrittenArgs& written, bool tolerant,
                   const std::string& prefix);

}  // namespace ff::detail
