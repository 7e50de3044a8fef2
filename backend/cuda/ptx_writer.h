// Building PTX text: the target policy (ISA version per architecture), virtual registers,
// labels and instruction lines. Shared by the kernel code generator, the math routines and the
// built-in kernels (reduce, scan, compress, fill).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "backend/ir/types.h"

namespace ff::cuda_backend {

/// What generated PTX is written for.
struct PtxTarget {
  /// `.target sm_<sm>`. The default, 75, is the oldest architecture ptxas 13 accepts; one text
  /// for sm_75 loads on every newer GPU (the driver compiles it for the device).
  unsigned sm = 75;
  /// `.version <major>.<minor>` as 10 * major + minor (64 = 6.4); 0 = the policy: 6.4 (CUDA
  /// 10.1 drivers), raised to the first version that knows the target (7.0 for sm_80, 7.8 for
  /// sm_89/sm_90, 8.6 for sm_100, 8.7 for sm_120).
  unsigned version = 0;
};

/// The `.version` a target gets (PtxTarget::version, or the policy for its sm).
unsigned ptx_version_for(const PtxTarget& target);

/// ".version X.Y\n.target sm_NN\n.address_size 64\n".
std::string ptx_module_header(const PtxTarget& target);

/// Register classes: predicates, 32/64-bit integers, 32/64-bit floats.
enum class RegClass : uint8_t { Pred = 0, B32 = 1, B64 = 2, F32 = 3, F64 = 4 };

/// The class of the registers holding values of type t (Bool: predicates).
RegClass reg_class(ScalarType t);

/// The type suffix of a `mov` between two registers of class c ("pred", "b32", ... "f64").
const char* mov_type(RegClass c);

/// A function body under construction: fresh virtual registers and labels, one instruction per
/// line. `declarations()` gives the `.reg` lines for every register handed out.
class PtxWriter {
 public:
  /// A fresh register of class `c` ("%r12", "%rd3", "%f1", "%fd7", "%p2").
  std::string reg(RegClass c);

  /// A fresh label name ("$L__7").
  std::string label() { return "$L__" + std::to_string(n_labels_++); }

  /// Appends one instruction ("\t" + text + ";\n").
  template <class... Args>
  void op(fmt::format_string<Args...> f, Args&&... args) {
    body_ += '\t';
    fmt::format_to(std::back_inserter(body_), f, std::forward<Args>(args)...);
    body_ += ";\n";
  }

  /// Places `label` here.
  void place(const std::string& label) { body_ += label + ":\n"; }

  /// Appends a comment line.
  void comment(const std::string& text) { body_ += "\t// " + text + "\n"; }

  /// Appends text as it is (declarations of shared memory, nested blocks).
  void raw(const std::string& text) { body_ += text; }

  /// The `.reg` declarations for every register handed out so far.
  std::string declarations() const;

  const std::string& body() const { return body_; }

 private:
  uint32_t n_[5] = {0, 0, 0, 0, 0};
  uint32_t n_labels_ = 0;
  std::string body_;
};

/// A 32-bit float immediate in PTX's exact hex form ("0f3F800000").
std::string ptx_f32(float v);
/// A 64-bit float immediate in PTX's exact hex form ("0d3FF0000000000000").
std::string ptx_f64(double v);
/// Float immediates from their bit patterns.
std::string ptx_f32_bits(uint32_t bits);
std::string ptx_f64_bits(uint64_t bits);

}  // namespace ff::cuda_backend
