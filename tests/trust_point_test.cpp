// One trust point for loaded data (issue 16, item 4): a recording read from a file is validated
// once, by the reader, and its kernels once each; replaying it validates nothing again. IR that
// did not come through a validator is still checked by every backend's compile. Validation
// problems carry their table and index, which the reader maps to a section of the file.
#include <freezeframe/freezeframe.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "backend/ir/kernel_ir.h"
#include "recorder/recording.h"
#include "support/temp_file.h"
#include "tracer/device.h"

namespace {

// Two kernels (a gather of x at i + 1 and the sum over it) and a reduction.
ff::Recording two_kernel_recording() {
  ff::Float x = ff::Float::from({1.f, 2.f, 3.f, 4.f, 5.f});
  return ff::record({ff::AnyArray(x)}, [&] {
    ff::UInt32 i = ff::arange<ff::UInt32>(ff::width(x) - 1);
    ff::Float d = ff::gather<ff::Float>(x, i + 1u) - ff::gather<ff::Float>(x, i);
    ff::eval(d);
    ff::Float s = ff::sum(d * 2.f);
    return std::vector<ff::AnyArray>{ff::AnyArray(d), ff::AnyArray(s)};
  });
}

}  // namespace

TEST_CASE("trust point: a loaded recording is validated once and its kernels once each",
          "[format]") {
  fft::TempFile file("trust-point.ffr");
  two_kernel_recording().save(file.str());

  uint64_t recordings_before = ff::rec::recording_validations();
  uint64_t kernels_before = ff::kernel_validations();
  ff::Recording loaded = ff::Recording::load(file.str());
  REQUIRE(loaded.n_kernels() >= 1);
  CHECK(ff::rec::recording_validations() - recordings_before == 1);
  CHECK(ff::kernel_validations() - kernels_before == loaded.n_kernels());

  // The first replay builds the plan and compiles (or finds) the kernels: no validation again,
  // and neither at the next sizes.
  recordings_before = ff::rec::recording_validations();
  kernels_before = ff::kernel_validations();
  for (size_t n : {7u, 2u, 13u}) {
    std::vector<float> v(n);
    for (size_t k = 0; k < n; ++k)
      v[k] = static_cast<float>(k * k);
    auto out = loaded.replay({ff::AnyArray(ff::Float::from(v))});
    std::vector<float> d = out[0].as<ff::Float>().to_vector();
    REQUIRE(d.size() == n - 1);
    float total = 0;
    for (size_t k = 0; k + 1 < n; ++k) {
      CHECK(d[k] == v[k + 1] - v[k]);
      total += d[k] * 2.f;
    }
    CHECK(out[1].as<ff::Float>().to_vector()[0] == Approx(total));
  }
  CHECK(ff::rec::recording_validations() == recordings_before);
  CHECK(ff::kernel_validations() == kernels_before);
}

TEST_CASE("trust point: IR that no validator has seen is still refused by Backend::compile",
          "[format]") {
  ff::Float warm = ff::Float::from({1.f});  // initialises the default backend
  ff::eval(warm);
  ff::Backend& backend = ff::detail::current_device()->backend();

  ff::KernelIR ir;
  ir.params.push_back({ff::ParamKind::BufferOut, ff::ScalarType::Float32});
  uint32_t v = ir.emit(ff::IrOp::Load, ff::ScalarType::Float32, {7});  // parameter 7 of 1
  ir.emit(ff::IrOp::Store, ff::ScalarType::Float32, {0, v});
  ir.finalize();
  uint64_t before = ff::kernel_validations();
  CHECK_THROWS_AS(backend.compile(ir), ff::FormatError);
  CHECK(ff::kernel_validations() > before);

  // A kernel that is valid but whose stored hash is not its IR's is refused too.
  ff::KernelIR good;
  good.params.push_back({ff::ParamKind::BufferIn, ff::ScalarType::Float32});
  good.params.push_back({ff::ParamKind::BufferOut, ff::ScalarType::Float32});
  uint32_t w = good.emit(ff::IrOp::Load, ff::ScalarType::Float32, {0});
  good.emit(ff::IrOp::Store, ff::ScalarType::Float32, {1, w});
  good.finalize();
  CHECK_NOTHROW(backend.compile(good));
  good.hash.lo ^= 1;
  CHECK_THROWS_AS(backend.compile(good), ff::Error);
}

TEST_CASE("trust point: a validation problem names its table and item", "[format]") {
  ff::rec::RecordingData d;  // empty: valid
  auto valid = ff::rec::ValidatedRecording::try_check(d);
  REQUIRE(std::holds_alternative<ff::rec::ValidatedRecording>(valid));

  d.inputs.push_back(3);  // slot 3 of none
  auto issue = ff::rec::ValidatedRecording::try_check(d);
  REQUIRE(std::holds_alternative<ff::rec::ValidationIssue>(issue));
  const auto& i = std::get<ff::rec::ValidationIssue>(issue);
  CHECK(i.table == ff::rec::Table::Inputs);
  CHECK(i.index == 0);
  CHECK(i.message().find("invalid recording: ") == 0);
  CHECK_THROWS_WITH(ff::rec::ValidatedRecording::check(d), i.message());
}
