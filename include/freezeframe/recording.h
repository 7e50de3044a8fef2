// Recordings: what a stretch of array work did, replayable with new inputs of any size.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "freezeframe/array.h"
#include "freezeframe/errors.h"

namespace ff {

/// An array of any element type (a type-erased ff::Array). Copying shares the variable.
class AnyArray {
 public:
  AnyArray() = default;

  template <class T>
  AnyArray(const Array<T>& a) : id_(a.id()), type_(Array<T>::kType) {  // NOLINT: implicit
    detail::inc_ref(id_);
  }

  AnyArray(const AnyArray& o) noexcept : id_(o.id_), type_(o.type_) { detail::inc_ref(id_); }

  AnyArray(AnyArray&& o) noexcept : id_(o.id_), type_(o.type_) { o.id_ = 0; }

  AnyArray& operator=(AnyArray o) noexcept {
    std::swap(id_, o.id_);
    std::swap(type_, o.type_);
    return *this;
  }

  ~AnyArray() { detail::dec_ref(id_); }

  ScalarType type() const { return type_; }

  /// Size with provenance; 0 for an empty AnyArray.
  Size size() const { return id_ ? detail::var_width(id_) : Size(0); }

  bool valid() const { return id_ != 0; }

  /// The typed array. Throws ff::Error if the element type differs.
  template <ArrayType A>
  A as() const {
    if (!id_)
      throw Error("AnyArray::as: the AnyArray is empty");
    if (A::kType != type_)
      throw Error(std::string("AnyArray::as: the array holds ") + to_string(type_) +
                  " elements, not " + to_string(A::kType));
    detail::inc_ref(id_);
    return A::steal(id_);
  }

  detail::Handle id() const { return id_; }

  /// Wraps a variable whose reference the caller hands over.
  /// Gives up the variable without dropping its reference (the inverse of steal()).
  detail::Handle release() noexcept {
    detail::Handle h = id_;
    id_ = 0;
    return h;
  }

  static AnyArray steal(detail::Handle id, ScalarType type) {
    AnyArray a;
    a.id_ = id;
    a.type_ = type;
    return a;
  }

 private:
  detail::Handle id_ = 0;
  ScalarType type_ = ScalarType::Float32;
};

class Recording;

namespace detail {
struct RecordingState;
/// The internals of a Recording (frontend/recording_state.h), for the library and its tests.
const std::shared_ptr<RecordingState>& recording_state(const Recording& r);
}  // namespace detail

/// A recording of backend work: slots, ops, size expressions, guards, kernels, constants,
/// inputs and outputs (see docs/). Plain data: cheap to copy (shared, immutable).
class Recording {
 public:
  Recording();
  explicit Recording(std::shared_ptr<detail::RecordingState> state);

  size_t n_ops() const;
  size_t n_kernels() const;
  size_t n_inputs() const;
  size_t n_outputs() const;
  size_t n_slots() const;
  size_t n_guards() const;
  /// One line: counts of ops, kernels, slots, inputs, outputs, guards.
  std::string summary() const;
  /// A listing of every slot, op, guard and kernel (for debugging).
  std::string to_string() const;
  /// True for a whole-session capture (ff::capture, FF_CAPTURE): inspect only, replay refuses.
  bool is_capture() const;
  /// True when the recording optimiser ran on it (docs/optimizer.md); to_string() and
  /// recorder-dump list its passes.
  bool is_optimized() const;

  /// Writes the recording to `path` in the recording file format (docs/recording-format.md):
  /// its kernels as neutral IR, so any process can replay it. The file appears atomically
  /// (temporary file + rename). Throws ff::Error if it cannot be written.
  void save(const std::string& path) const;
  /// Reads a file written by save(), or recording `index` of a file that holds several.
  /// Loading is a validation: every index, count, size, type and kernel is checked, so a
  /// loaded recording is as safe to replay as a recorded one. Kernels are compiled on the
  /// first replay (or found in the kernel caches). Throws ff::FormatError (naming the
  /// section, item and byte offset) for a damaged or incompatible file, ff::Error if it
  /// cannot be read.
  static Recording load(const std::string& path, size_t index = 0);

  /// Re-issues the recorded work with new inputs (any sizes the recorded size expressions
  /// and guards allow) and returns the outputs. Compiles kernels only the first time (or
  /// after ff::flush_kernel_cache()), traces nothing. Throws ff::GuardError when a recorded
  /// size decision would come out differently for these inputs (record that path anew) and
  /// ff::FreezeError for inputs that do not match the recording; the inputs are unchanged
  /// after any error.
  std::vector<AnyArray> replay(const std::vector<AnyArray>& inputs) const;

 private:
  friend const std::shared_ptr<detail::RecordingState>& detail::recording_state(const Recording& r);

  std::shared_ptr<detail::RecordingState> state_;
};

/// How ff::record treats what it recorded.
struct RecordOptions {
  /// Run the recording optimiser when the recording closes (docs/optimizer.md): launches
  /// fused across evals, dead work removed, buffer lifetimes tightened. FF_OPTIMIZE=0 turns
  /// it off for the whole process.
  bool optimize = true;
};

/// Records what `fn` does with `inputs` (evaluated first) and returns the Recording; the
/// arrays `fn` returns are its outputs. Work on other threads is not recorded. Throws
/// ff::FreezeError for what cannot be replayed: reading array contents on the host inside
/// `fn`, using an array that is neither an input nor created inside (an implicit input).
Recording record(const std::vector<AnyArray>& inputs,
                 const std::function<std::vector<AnyArray>()>& fn,
                 const RecordOptions& options = {});

/// With a capturing stack (ff::init("record:llvm")): a snapshot of everything the session
/// has done so far, on every thread. Throws ff::Error on other stacks.
Recording capture();

}  // namespace ff
