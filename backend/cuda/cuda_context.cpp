// The device context and RAII handles (see cuda_context.h).
#include "backend/cuda/cuda_context.h"

#include <vector>

#include "common/log.h"

namespace ff::cuda_backend {

CudaContext::CudaContext(std::shared_ptr<const Driver> driver, int ordinal)
    : driver_(std::move(driver)), ordinal_(ordinal) {
  const DriverApi& api = driver_->api();
  int count = 0;
  CUresult r = api.cuDeviceGetCount(&count);
  if (r == CUDA_ERROR_NO_DEVICE || (r == CUDA_SUCCESS && count == 0))
    throw CudaUnavailableError(Unavailable::NoDevice,
                               "cuda backend: no CUDA device (the driver counts none)");
  check(r, "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count)
    throw CudaUnavailableError(Unavailable::BadDeviceIndex,
                               "cuda backend: FF_CUDA_DEVICE=" + std::to_string(ordinal) +
                                   " but only " + std::to_string(count) + " CUDA device(s) exist");
  check(api.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
  char name[256] = {};
  check(api.cuDeviceGetName(name, sizeof name - 1, device_), "cuDeviceGetName");
  props_.name = name;
  auto attr = [&](CUdevice_attribute a, int& out) {
    check(api.cuDeviceGetAttribute(&out, a, device_), "cuDeviceGetAttribute");
  };
  attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, props_.cc_major);
  attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, props_.cc_minor);
  attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, props_.n_sms);
  attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, props_.max_threads_per_sm);
  attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, props_.max_threads_per_block);
  attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, props_.max_grid_x);
  check(api.cuDeviceTotalMem(&props_.total_memory, device_), "cuDeviceTotalMem");
  if (props_.cc_major * 10 + props_.cc_minor < 75)
    throw CudaUnavailableError(Unavailable::NoDevice,
                               "cuda backend: device " + std::to_string(ordinal) + " (" +
                                   props_.name + ", sm_" + std::to_string(props_.cc_major) +
                                   std::to_string(props_.cc_minor) +
                                   ") is older than sm_75, the oldest architecture supported");
  check(api.cuDevicePrimaryCtxRetain(&ctx_, device_), "cuDevicePrimaryCtxRetain");
  logging::cuda().info("cuda backend: device {} {} (sm_{}{}, {} SMs, {} MiB)", ordinal, props_.name,
                       props_.cc_major, props_.cc_minor, props_.n_sms, props_.total_memory >> 20);
}

CudaContext::~CudaContext() {
  if (ctx_)
    driver_->log_failure(api().cuDevicePrimaryCtxRelease(device_), "cuDevicePrimaryCtxRelease");
}

void CudaContext::bind() const {
  CUcontext current = nullptr;
  if (api().cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == ctx_)
    return;
  check(api().cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
}

Stream::Stream(std::shared_ptr<const CudaContext> ctx) : ctx_(std::move(ctx)) {
  ctx_->bind();
  ctx_->check(ctx_->api().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

Stream::~Stream() {
  if (!stream_)
    return;
  try {
    ctx_->bind();
  } catch (...) {
  }
  ctx_->driver().log_failure(ctx_->api().cuStreamDestroy(stream_), "cuStreamDestroy");
}

void Stream::synchronize() const {
  ctx_->check(ctx_->api().cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

Event::Event(std::shared_ptr<const CudaContext> ctx, bool timing) : ctx_(std::move(ctx)) {
  ctx_->bind();
  ctx_->check(
      ctx_->api().cuEventCreate(&event_, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING),
      "cuEventCreate");
}

Event::~Event() {
  if (event_)
    ctx_->driver().log_failure(ctx_->api().cuEventDestroy(event_), "cuEventDestroy");
}

void Event::record(CUstream stream) const {
  ctx_->check(ctx_->api().cuEventRecord(event_, stream), "cuEventRecord");
}

void Event::synchronize() const {
  ctx_->check(ctx_->api().cuEventSynchronize(event_), "cuEventSynchronize");
}

float Event::elapsed_since(const Event& start) const {
  float ms = 0;
  ctx_->check(ctx_->api().cuEventElapsedTime(&ms, start.event_, event_), "cuEventElapsedTime");
  return ms;
}

Module::Module(std::shared_ptr<const CudaContext> ctx, const std::string& ptx)
    : ctx_(std::move(ctx)) {
  ctx_->bind();
  std::vector<char> log(16384, '\0');
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* vals[] = {log.data(), reinterpret_cast<void*>(log.size() - 1)};
  CUresult r = ctx_->api().cuModuleLoadDataEx(&module_, ptx.c_str(), 2, opts, vals);
  if (r != CUDA_SUCCESS) {
    module_ = nullptr;
    std::string text(log.data());
    throw BackendError("cuda backend: cuModuleLoadDataEx failed: " + ctx_->driver().error_text(r) +
                       (text.empty() ? std::string() : "; JIT log: " + text));
  }
}

Module::~Module() {
  if (!module_)
    return;
  try {
    ctx_->bind();
  } catch (...) {
  }
  ctx_->driver().log_failure(ctx_->api().cuModuleUnload(module_), "cuModuleUnload");
}

CUfunction Module::function(const char* name) const {
  CUfunction f = nullptr;
  ctx_->check(ctx_->api().cuModuleGetFunction(&f, module_, name), "cuModuleGetFunction");
  return f;
}

PinnedBuffer::PinnedBuffer(std::shared_ptr<const CudaContext> ctx, size_t bytes)
    : ctx_(std::move(ctx)), bytes_(bytes) {
  ctx_->bind();
  ctx_->check(ctx_->api().cuMemAllocHost(&data_, bytes), "cuMemAllocHost");
}

PinnedBuffer::~PinnedBuffer() {
  if (data_)
    ctx_->driver().log_failure(ctx_->api().cuMemFreeHost(data_), "cuMemFreeHost");
}

}  // namespace ff::cuda_backend
