// Verify mode of frozen functions: see freeze_verify.h.
#include "frontend/freeze_verify.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "recorder/freeze_section.h"
#include "tracer/device.h"
#include "tracer/variable.h"

namespace ff::detail {

bool VerifySchedule::due() {
  if (!every_ || recording_open() || --countdown_ != 0)
    return false;
  countdown_ = every_;
  return true;
}

namespace {

/// An array's contents as raw bytes (outside recordings: a host read).
std::vector<uint8_t> read_bytes(const AnyArray& a, ScalarType* type) {
  Handle h = a.id();
  uint64_t n = var_size(h);
  *type = a.type();
  std::vector<uint8_t> out(n * size_of(a.type()));
  if (n)
    var_read(h, out.data());
  return out;
}

template <class T>
T element(const std::vector<uint8_t>& b, size_t i) {
  T v;
  std::memcpy(&v, b.data() + i * sizeof(T), sizeof(T));
  return v;
}

/// The first element where `a` and `b` differ, or -1.
int64_t first_difference(ScalarType t, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                         bool tolerant) {
  size_t n = a.size() / size_of(t);
  auto close = [&](double x, double y) {
    if (std::isnan(x) && std::isnan(y))
      return true;
    if (x == y)
      return true;
    return tolerant && std::fabs(x - y) <= 1e-5 * std::max(std::fabs(x), std::fabs(y)) + 1e-6;
  };
  for (size_t i = 0; i < n; ++i) {
    bool same;
    if (t == ScalarType::Float32)
      same = close(element<float>(a, i), element<float>(b, i));
    else if (t == ScalarType::Float64)
      same = close(element<double>(a, i), element<double>(b, i));
    else
      same = std::memcmp(a.data() + i * size_of(t), b.data() + i * size_of(t), size_of(t)) == 0;
    if (!same)
      return static_cast<int64_t>(i);
  }
  return -1;
}

std::string element_string(ScalarType t, const std::vector<uint8_t>& b, size_t i) {
  uint64_t bits = 0;
  std::memcpy(&bits, b.data() + i * size_of(t), size_of(t));
  return format::element_value(t, bits);
}

/// Compares output `path` of the replay (`replayed`) with the traced run's.
void compare_output(const AnyArray& replayed, const AnyArray& traced, const std::string& path,
                    bool tolerant, const std::string& prefix) {
  ScalarType ta, tb;
  std::vector<uint8_t> a = read_bytes(replayed, &ta);
  std::vector<uint8_t> b = read_bytes(traced, &tb);
  if (ta != tb || a.size() != b.size())
    throw FreezeError(prefix + "verify: output " + path + " has " +
                      std::to_string(a.size() / size_of(ta)) + " " + to_string(ta) +
                      " elements after the replay, " + std::to_string(b.size() / size_of(tb)) +
                      " " + to_string(tb) + " when traced");
  int64_t i = first_difference(ta, a, b, tolerant && is_float(ta));
  if (i >= 0)
    throw FreezeError(prefix + "verify: output " + path + " differs at index " + std::to_string(i) +
                      ": the replay gave " + element_string(ta, a, static_cast<size_t>(i)) +
                      ", the traced run " + element_string(ta, b, static_cast<size_t>(i)));
}

}  // namespace

void verify_replay(CallSite& site, const WrittenArgs& written, bool tolerant,
                   const std::string& prefix) {
  SinkVisitor traced, replayed;
  site.run_on_copies(traced, written);
  site.outputs(replayed, written);
  PathVisitor paths;
  site.describe_outputs(paths, written);
  auto path_of = [&](size_t leaf) -> std::string {
    for (const PathVisitor::Item& it : paths.items)
      if (it.leaf == static_cast<int64_t>(leaf))
        return it.path;
    return "output " + std::to_string(leaf);
  };
  if (traced.shape != replayed.shape || traced.arrays.size() != replayed.arrays.size())
    throw FreezeError(prefix +
                      "verify: the traced run's outputs have another structure or other "
                      "scalar values than the replay's (a scalar result or argument field "
                      "that depends on array contents cannot be frozen)");
  for (size_t k = 0; k < traced.arrays.size(); ++k)
    compare_output(replayed.arrays[k], traced.arrays[k], path_of(k), tolerant, prefix);
}

}  // namespace ff::detail
