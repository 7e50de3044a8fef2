// Starting the CUDA backend where it cannot run: each case names what is missing (no libcuda,
// the toolkit's stub library, a driver too old, no device, a bad FF_CUDA_DEVICE). The driver
// library is opened by path: the real toolkit stub where it is installed, a stand-in libcuda
// built by the tests (tests/cuda/fake_libcuda*.cpp, steered by FF_FAKE_* variables), libm for
// a library without the entry points; the simulated driver for device selection and memory.
#include "backend/cuda/cuda_driver.h"

#include <freezeframe/freezeframe.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_context.h"
#include "cuda/fake_driver.h"
#include "cuda/ptxas.h"
#include "runtime/environment.h"

using namespace ff::cuda_backend;
using Catch::Matchers::Contains;

namespace {

// The stand-in libcuda: $FF_TEST_FAKE_LIBCUDA (CTest sets it), else beside this executable.
std::string fake_libcuda() {
  if (const char* p = std::getenv("FF_TEST_FAKE_LIBCUDA"); p && *p)
    return p;
  char self[4096] = {};
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return "";
  std::string dir(self, static_cast<size_t>(n));
  std::string lib = dir.substr(0, dir.rfind('/')) + "/libff_test_fake_libcuda.so";
  return access(lib.c_str(), R_OK) == 0 ? lib : "";
}

// The CUDA toolkit's stub libcuda.so, next to the ptxas found, if installed.
std::string toolkit_stub() {
  std::string ptxas = ffcuda::find_ptxas();
  if (ptxas.empty())
    return "";
  std::string root = ptxas.substr(0, ptxas.rfind('/'));  // .../bin
  root = root.substr(0, root.rfind('/'));
  for (const char* rel : {"/lib64/stubs/libcuda.so", "/targets/x86_64-linux/lib/stubs/libcuda.so"})
    if (access((root + rel).c_str(), R_OK) == 0)
      return root + rel;
  return "";
}

Unavailable reason_of(const std::string& library) {
  try {
    Driver::open(library);
  } catch (const CudaUnavailableError& e) {
    return e.reason();
  }
  return Unavailable::None;
}

std::string message_of(const std::string& library) {
  try {
    Driver::open(library);
  } catch (const CudaUnavailableError& e) {
    return e.what();
  }
  return "";
}

struct EnvVar {
  std::string name;

  EnvVar(const char* n, const std::string& value) : name(n) { setenv(n, value.c_str(), 1); }

  ~EnvVar() { unsetenv(name.c_str()); }
};

}  // namespace

TEST_CASE("init(\"cuda\") without a usable driver raises BackendError saying what is missing",
          "[cuda_host][driver]") {
  CudaProbe probe = probe_cuda(ff::detail::environment_backend_options());
  if (probe.reason == Unavailable::None) {
    WARN("this machine has a usable CUDA device: nothing to check");
    return;
  }
  ff::shutdown();
  REQUIRE_THROWS_AS(ff::init("cuda"), ff::BackendError);
  REQUIRE_THROWS_WITH(ff::init("cuda"), Contains(probe.message));
  REQUIRE_THROWS_AS(ff::init("record:cuda"), ff::BackendError);
  // Nothing half-initialised: another backend starts.
  ff::init("llvm");
  CHECK(ff::backend_name() == "llvm");
  ff::shutdown();
}

TEST_CASE("no libcuda: the message says no CUDA driver and names the library",
          "[cuda_host][driver]") {
  CHECK(reason_of("libff-no-such-cuda-driver.so.1") == Unavailable::NoLibrary);
  CHECK_THAT(message_of("libff-no-such-cuda-driver.so.1"),
             Contains("no CUDA driver") && Contains("libff-no-such-cuda-driver.so.1"));
}

TEST_CASE("the CUDA toolkit's stub libcuda is reported as the stub, not as a driver",
          "[cuda_host][driver]") {
  std::string stub = toolkit_stub();
  if (stub.empty()) {
    WARN("skipped: the toolkit's stubs/libcuda.so was not found");
  } else {
    INFO(stub);
    CHECK(reason_of(stub) == Unavailable::StubLibrary);
    CHECK_THAT(message_of(stub), Contains("stub library") && Contains("CUDA_ERROR_STUB_LIBRARY"));
  }
  std::string fake = fake_libcuda();
  REQUIRE(!fake.empty());
  EnvVar v("FF_FAKE_CUINIT", "34");
  CHECK(reason_of(fake) == Unavailable::StubLibrary);
}

TEST_CASE(
    "a driver too old: CUDA_ERROR_INSUFFICIENT_DRIVER, a version below 10.1, missing entry "
    "points",
    "[cuda_host][driver]") {
  std::string fake = fake_libcuda();
  REQUIRE(!fake.empty());
  {
    EnvVar v("FF_FAKE_CUINIT", "35");
    CHECK(reason_of(fake) == Unavailable::DriverTooOld);
    CHECK_THAT(message_of(fake), Contains("too old"));
  }
  {
    EnvVar v("FF_FAKE_DRIVER_VERSION", "10000");
    CHECK(reason_of(fake) == Unavailable::DriverTooOld);
    CHECK_THAT(message_of(fake), Contains("CUDA 10.0") && Contains("10.1 or newer"));
  }
  // A library that has none of the entry points.
  CHECK(reason_of("libm.so.6") == Unavailable::MissingSymbol);
  CHECK_THAT(message_of("libm.so.6"), Contains("too old") && Contains("cuInit"));
  // Other cuInit failures are named with the driver's text.
  {
    EnvVar v("FF_FAKE_CUINIT", "999");
    CHECK(reason_of(fake) == Unavailable::InitFailed);
    CHECK_THAT(message_of(fake), Contains("CUDA_ERROR_FROM_THE_FAKE_LIBRARY"));
  }
  {
    EnvVar v("FF_FAKE_CUINIT", "100");
    CHECK(reason_of(fake) == Unavailable::NoDevice);
  }
  // A driver that loads fine.
  CHECK(reason_of(fake) == Unavailable::None);
}

TEST_CASE("no device, and FF_CUDA_DEVICE naming a device that does not exist",
          "[cuda_host][driver]") {
  std::string fake = fake_libcuda();
  REQUIRE(!fake.empty());
  EnvVar lib("FF_CUDA_DRIVER_LIBRARY", fake);
  {
    EnvVar count("FF_FAKE_DEVICE_COUNT", "0");
    CHECK(probe_cuda(ff::detail::environment_backend_options()).reason == Unavailable::NoDevice);
    REQUIRE_THROWS_AS(ff::init("cuda"), ff::BackendError);
    REQUIRE_THROWS_WITH(ff::init("cuda"), Contains("no CUDA device"));
  }
  {
    EnvVar count("FF_FAKE_DEVICE_COUNT", "2");
    EnvVar device("FF_CUDA_DEVICE", "5");
    CHECK(probe_cuda(ff::detail::environment_backend_options()).reason ==
          Unavailable::BadDeviceIndex);
    REQUIRE_THROWS_WITH(ff::init("cuda"), Contains("FF_CUDA_DEVICE=5") && Contains("only 2"));
  }
  {
    EnvVar device("FF_CUDA_DEVICE", "first");
    CHECK_THROWS_AS(cuda_options(ff::detail::environment_backend_options()), CudaUnavailableError);
    REQUIRE_THROWS_WITH(ff::init("cuda"), Contains("not a device number"));
  }
  ff::shutdown();
}

TEST_CASE("device selection and properties on the simulated driver", "[cuda_host][driver]") {
  ffcuda::fake_set_device_count(3);
  {
    CudaContext ctx(ffcuda::fake_driver(), 2);
    CHECK(ctx.ordinal() == 2);
    CHECK(ctx.properties().name == "freezeframe fake GPU");
    CHECK(ctx.properties().cc_major == 7);
    CHECK(ctx.properties().n_sms == 2);
  }
  try {
    CudaContext bad(ffcuda::fake_driver(), 3);
    FAIL("device 3 of 3 was accepted");
  } catch (const CudaUnavailableError& e) {
    CHECK(e.reason() == Unavailable::BadDeviceIndex);
  }
  ffcuda::fake_set_device_count(0);
  try {
    CudaContext none(ffcuda::fake_driver(), 0);
    FAIL("a machine without devices was accepted");
  } catch (const CudaUnavailableError& e) {
    CHECK(e.reason() == Unavailable::NoDevice);
  }
  ffcuda::fake_set_device_count(1);
  CudaOptions o;
  o.driver = ffcuda::fake_driver();
  o.device = 0;
  auto be = create_cuda_backend(o);
  CHECK(be->name() == "cuda");
}

TEST_CASE("the allocator gives its cache back and retries when the device runs out of memory",
          "[cuda_host][driver]") {
  CudaOptions o;
  o.driver = ffcuda::fake_driver();
  auto be = create_cuda_backend(o);
  uint64_t base = ffcuda::fake_counters().live_bytes;
  ffcuda::fake_set_memory_limit(base + (96u << 20));
  void* a = be->alloc(ff::ScalarType::Float32, 16u << 20, {});  // 64 MiB
  be->release(a);                                               // cached, still held
  CHECK(ffcuda::fake_counters().live_bytes >= base + (64u << 20));
  // 80 MiB does not fit next to the cached 64 MiB block: the cache is freed and it succeeds.
  void* b = be->alloc(ff::ScalarType::Float32, 20u << 20, {});
  CHECK(b != nullptr);
  CHECK(ffcuda::fake_counters().live_bytes < base + (96u << 20));
  // More than there is at all: a clean error naming the size.
  CHECK_THROWS_WITH(be->alloc(ff::ScalarType::Float32, 8u << 20, {}),
                    Contains("out of device memory") && Contains("33554432"));
  be->release(b);
  ffcuda::fake_set_memory_limit(0);
}
