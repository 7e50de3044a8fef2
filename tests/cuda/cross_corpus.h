// Functions recorded on one backend and replayed on another (LLVM -> CUDA): element-wise math
// of both float widths, integer arithmetic and casts, gathers and scatters sized by width,
// reductions, a prefix sum and a compress. Shared by the cross-backend test (in one process
// where both backends exist) and by the exporter that saves LLVM recordings and their outputs
// as files for the GPU machine (tests/gpu/), plus the small array file format they use.
#pragma once

#include <freezeframe/freezeframe.h>

#include <concepts>
#include <optional>
#include <string>
#include <vector>

#include "support/record_corpus.h"

namespace ffcuda {

struct CrossCase {
  std::string name;  // also the file stem: letters, digits and '_' only
  std::vector<ffr::InputSpec> inputs;
  ffr::Fn fn;
};

/// Every case.
std::vector<CrossCase> cross_corpus();

/// The size recordings are made at, and the sizes they are replayed at.
inline constexpr size_t kCrossRecordSize = 1000;

inline const std::vector<size_t>& cross_replay_sizes() {
  static const std::vector<size_t> sizes = {1000, 777, 4099};
  return sizes;
}

/// "" when `got` matches `want` within the bound: integers exactly; floats within
/// `ulp` ulp or |got - want| <= abs_tol * max(1, |want|) (cancellation in composite
/// expressions), NaN equal to NaN.
std::string compare_within(const ffr::HostArray& got, const ffr::HostArray& want, double ulp,
                           double abs_tol);

/// Arrays to and from a file: a u32 count, then per array its ScalarType (u8), element count
/// (u64) and the values (8 bytes each: integer bit patterns, doubles for floats).
void save_arrays(const std::string& path, const std::vector<ffr::HostArray>& arrays);
std::vector<ffr::HostArray> load_arrays(const std::string& path);
/// HostArrays back into arrays of the current backend.
ffr::Inputs to_inputs(const std::vector<ffr::HostArray>& arrays);

/// Recording files, when this build has them (ff::Recording::save / load of API.md); until
/// then save_recording returns false and load_recording nothing.
template <class R>
concept RecordingFiles = requires(const R& r, const std::string& p) {
  r.save(p);
  { R::load(p) } -> std::convertible_to<R>;
};

template <class R = ff::Recording>
bool save_recording(const R& r, const std::string& path) {
  if constexpr (RecordingFiles<R>) {
    r.save(path);
    return true;
  } else {
    (void)r, (void)path;
    return false;
  }
}

template <class R = ff::Recording>
std::optional<R> load_recording(const std::string& path) {
  if constexpr (RecordingFiles<R>)
    return R::load(path);
  else
    return (void)path, std::nullopt;
}

inline constexpr bool kHaveRecordingFiles = RecordingFiles<ff::Recording>;

}  // namespace ffcuda
