// Loading the CUDA driver with dlopen/dlsym and classifying why it cannot be used.
#include "backend/cuda/cuda_driver.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "common/log.h"

namespace ff::cuda_backend {

const char* to_string(Unavailable u) {
  switch (u) {
    case Unavailable::None:
      return "available";
    case Unavailable::NoLibrary:
      return "no CUDA driver library";
    case Unavailable::MissingSymbol:
      return "CUDA driver lacks an entry point";
    case Unavailable::StubLibrary:
      return "CUDA stub library instead of a driver";
    case Unavailable::DriverTooOld:
      return "CUDA driver too old";
    case Unavailable::NoDevice:
      return "no CUDA device";
    case Unavailable::BadDeviceIndex:
      return "no such CUDA device";
    case Unavailable::InitFailed:
      return "CUDA driver failed to initialise";
  }
  return "invalid";
}

bool DriverApi::has_graphs() const {
  return cuGraphCreate && cuGraphDestroy && cuGraphAddKernelNode && cuGraphInstantiateWithFlags &&
         cuGraphExecDestroy && cuGraphLaunch && cuGraphExecKernelNodeSetParams;
}

namespace {

std::string version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// The file a dlopen handle was loaded from (what the user should look at in messages).
std::string loaded_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name)
    return map->l_name;
  return fallback;
}

}  // namespace

Driver::Driver(const DriverApi& api, int version, std::string origin)
    : api_(api), version_(version), origin_(std::move(origin)) {}

Driver::~Driver() {
  if (handle_)
    dlclose(handle_);
}

std::shared_ptr<const Driver> Driver::open(const std::string& library) {
  // dlerror() is per thread; clear what an earlier call left.
  dlerror();
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw CudaUnavailableError(
        Unavailable::NoLibrary,
        "cuda backend: no CUDA driver: cannot load " + library + " (" +
            (why ? why : "unknown dlopen error") +
            "); install the NVIDIA driver, or use another backend such as 'llvm'");
  }
  std::shared_ptr<Driver> d(new Driver());
  d->handle_ = handle;  // closed by ~Driver on every path below
  d->origin_ = loaded_path(handle, library);
  DriverApi& api = d->api_;
  std::string missing;
#define FF_CUDA_FN(member, required, symbol, fallback, ...)         \
  {                                                                 \
    void* p = dlsym(handle, symbol);                                \
    const char* fb = fallback;                                      \
    if (!p && fb)                                                   \
      p = dlsym(handle, fb);                                        \
    api.member = reinterpret_cast<decltype(api.member)>(p);         \
    if (!p && (required))                                           \
      missing += std::string(missing.empty() ? "" : ", ") + symbol; \
  }
#include "backend/cuda/cuda_symbols.inc"
#undef FF_CUDA_FN
  if (!missing.empty())
    throw CudaUnavailableError(Unavailable::MissingSymbol,
                               "cuda backend: CUDA driver too old: " + d->origin_ +
                                   " lacks the entry points " + missing +
                                   " (freezeframe needs a driver for CUDA 10.1 or newer)");

  CUresult r = api.cuInit(0);
  if (r == CUDA_ERROR_STUB_LIBRARY)
    throw CudaUnavailableError(
        Unavailable::StubLibrary,
        "cuda backend: " + d->origin_ +
            " is the CUDA toolkit's stub library (cuInit answered CUDA_ERROR_STUB_LIBRARY), not "
            "a driver: remove its folder from LD_LIBRARY_PATH or install the NVIDIA driver");
  if (r == CUDA_ERROR_INSUFFICIENT_DRIVER || r == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH ||
      r == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)
    throw CudaUnavailableError(Unavailable::DriverTooOld,
                               "cuda backend: CUDA driver too old: cuInit answered " +
                                   d->error_text(r) + " (" + d->origin_ + ")");
  if (r == CUDA_ERROR_NO_DEVICE)
    throw CudaUnavailableError(Unavailable::NoDevice,
                               "cuda backend: no CUDA device: cuInit answered " + d->error_text(r));
  if (r != CUDA_SUCCESS)
    throw CudaUnavailableError(
        Unavailable::InitFailed,
        "cuda backend: cuInit failed with " + d->error_text(r) + " (" + d->origin_ + ")");
  int version = 0;
  if (api.cuDriverGetVersion(&version) != CUDA_SUCCESS || version < kMinDriverVersion)
    throw CudaUnavailableError(Unavailable::DriverTooOld,
                               "cuda backend: CUDA driver too old: it supports CUDA " +
                                   version_text(version) + ", freezeframe needs " +
                                   version_text(kMinDriverVersion) + " or newer");
  d->version_ = version;
  return d;
}

std::shared_ptr<const Driver> Driver::shared(const std::string& library) {
  static std::mutex mutex;
  // Never destroyed: the driver stays loaded until the process ends.
  static auto* loaded = new std::shared_ptr<const Driver>();
  std::lock_guard lock(mutex);
  if (!*loaded) {
    *loaded = open(library.empty() ? "libcuda.so.1" : library);
    logging::cuda().info("cuda backend: driver {} (CUDA {})", (*loaded)->origin(),
                         version_text((*loaded)->version()));
  }
  return *loaded;
}

std::string Driver::error_text(CUresult code) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (!api_.cuGetErrorName || api_.cuGetErrorName(code, &name) != CUDA_SUCCESS || !name)
    name = nullptr;
  if (!api_.cuGetErrorString || api_.cuGetErrorString(code, &text) != CUDA_SUCCESS || !text)
    text = nullptr;
  std::string s = name ? name : "CUresult " + std::to_string(code);
  if (text)
    s += std::string(" (") + text + ")";
  return s;
}

void Driver::fail(CUresult code, const char* call, CallerLine where) const {
  std::string file = where.file;
  if (size_t slash = file.rfind('/'); slash != std::string::npos)
    file = file.substr(slash + 1);
  throw BackendError("cuda backend: " + std::string(call) + " failed: " + error_text(code) +
                     " at " + file + ":" + std::to_string(where.line));
}

void Driver::log_failure(CUresult code, const char* call) const noexcept {
  if (code == CUDA_SUCCESS || code == CUDA_ERROR_DEINITIALIZED)
    return;
  try {
    logging::cuda().error("cuda backend: {} failed: {}", call, error_text(code));
  } catch (...) {
  }
}

int cuda_device_ordinal(const std::string& spec) {
  if (spec.empty())
    return 0;
  char* end = nullptr;
  long n = std::strtol(spec.c_str(), &end, 10);
  if (*end != '\0' || n < 0 || n > 1 << 20)
    throw CudaUnavailableError(
        Unavailable::BadDeviceIndex,
        "cuda backend: FF_CUDA_DEVICE='" + spec + "' is not a device number (0, 1, ...)");
  return static_cast<int>(n);
}

CudaProbe probe_cuda(const BackendOptions& options) {
  try {
    auto driver = Driver::shared(options.cuda_driver_library);
    int ordinal = cuda_device_ordinal(options.cuda_device);
    int count = 0;
    CUresult r = driver->api().cuDeviceGetCount(&count);
    if (r == CUDA_ERROR_NO_DEVICE || (r == CUDA_SUCCESS && count == 0))
      return {Unavailable::NoDevice, "cuda backend: no CUDA device (the driver counts none)"};
    driver->check(r, "cuDeviceGetCount");
    if (ordinal >= count)
      return {Unavailable::BadDeviceIndex,
              "cuda backend: FF_CUDA_DEVICE=" + std::to_string(ordinal) + " but only " +
                  std::to_string(count) + " CUDA device(s) exist"};
    return {Unavailable::None, ""};
  } catch (const CudaUnavailableError& e) {
    return {e.reason(), e.what()};
  }
}

}  // namespace ff::cuda_backend
