// The simulated CUDA driver (see fake_driver.h).
#include "cuda/fake_driver.h"

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <vector>

#include "cuda/ptx_interpreter.h"

namespace ffcuda {

using namespace ff::cuda_backend;

namespace {

constexpr CUresult kLaunchFailed = 719;   // CUDA_ERROR_LAUNCH_FAILED
constexpr CUresult kInvalidHandle = 400;  // CUDA_ERROR_INVALID_HANDLE

struct FakeFunction {
  PtxModule* module;
  std::string name;
  size_t n_params;
};

struct FakeModule {
  PtxModule ptx;
  std::vector<std::unique_ptr<FakeFunction>> functions;
};

struct FakeNode {
  FakeFunction* fn;
  unsigned grid, block;
  std::vector<uint64_t> params;
};

struct FakeGraph {
  std::vector<FakeNode> nodes;
};

struct State {
  std::mutex mutex;
  int devices = 1;
  uint64_t memory_limit = 0;
  bool graph_failure = false;
  std::map<uint64_t, uint64_t> device_memory;  // begin -> bytes
  std::map<uint64_t, uint64_t> host_memory;    // pinned: begin -> bytes
  std::map<FakeModule*, std::unique_ptr<FakeModule>> modules;
  std::map<FakeGraph*, std::unique_ptr<FakeGraph>> graphs, execs;
  FakeDriverCounters counters;
  int next_handle = 1;
};

State& state() {
  static auto* s = new State;  // lives for the whole process, like a driver
  return *s;
}

thread_local CUcontext t_current = nullptr;

// A dummy, non-null handle of type H.
template <class H>
H handle() {
  return reinterpret_cast<H>(static_cast<uintptr_t>(0x1000 * state().next_handle++));
}

bool device_range(uint64_t p, uint64_t bytes) {
  auto& mem = state().device_memory;
  auto it = mem.upper_bound(p);
  if (it == mem.begin())
    return false;
  --it;
  return p >= it->first && p + bytes <= it->first + it->second;
}

CUresult fail(CUresult code, const std::string& what) {
  state().counters.last_error = what;
  std::cerr << "fake CUDA driver: " << what << "\n";
  return code;
}

CUresult run(FakeFunction& f, unsigned grid, unsigned block, const std::vector<uint64_t>& params) {
  PtxModule& m = *f.module;
  m.clear_allowed();
  for (auto& [p, n] : state().device_memory)
    m.allow(reinterpret_cast<void*>(p), n);
  try {
    m.launch(f.name, grid, block, params, 20'000'000'000ull);
  } catch (const std::exception& e) {
    return fail(kLaunchFailed, f.name + ": " + e.what());
  }
  return CUDA_SUCCESS;
}

std::vector<uint64_t> param_words(const FakeFunction& f, void** kernel_params) {
  std::vector<uint64_t> words(f.n_params);
  for (size_t i = 0; i < f.n_params; ++i)
    std::memcpy(&words[i], kernel_params[i], 8);  // every parameter freezeframe passes is .u64
  return words;
}

#define LOCK std::lock_guard lock(state().mutex)

CUresult f_init(unsigned) {
  return CUDA_SUCCESS;
}

CUresult f_version(int* v) {
  *v = 12000;
  return CUDA_SUCCESS;
}

CUresult f_error_name(CUresult, const char** s) {
  *s = "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}

CUresult f_error_string(CUresult, const char** s) {
  *s = "an error of the fake driver";
  return CUDA_SUCCESS;
}

CUresult f_count(int* n) {
  LOCK;
  *n = state().devices;
  return state().devices ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult f_device_get(CUdevice* d, int i) {
  *d = i;
  return CUDA_SUCCESS;
}

CUresult f_name(char* name, int len, CUdevice) {
  std::strncpy(name, "freezeframe fake GPU", static_cast<size_t>(len));
  return CUDA_SUCCESS;
}

CUresult f_attribute(int* v, CUdevice_attribute a, CUdevice) {
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *v = 7;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *v = 5;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *v = 2;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *v = 512;  // 2 SMs x 2 blocks: small grids, so the interpreter stays quick
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *v = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      *v = 0x7FFFFFFF;
      break;
    default:
      *v = 0;
  }
  return CUDA_SUCCESS;
}

CUresult f_total_mem(size_t* bytes, CUdevice) {
  *bytes = size_t{1} << 30;
  return CUDA_SUCCESS;
}

CUresult f_ctx_retain(CUcontext* c, CUdevice d) {
  *c = reinterpret_cast<CUcontext>(static_cast<uintptr_t>(0xC0DE0000 + d));
  return CUDA_SUCCESS;
}

CUresult f_ctx_release(CUdevice) {
  return CUDA_SUCCESS;
}

CUresult f_ctx_set(CUcontext c) {
  t_current = c;
  return CUDA_SUCCESS;
}

CUresult f_ctx_get(CUcontext* c) {
  *c = t_current;
  return CUDA_SUCCESS;
}

CUresult f_stream_create(CUstream* s, unsigned) {
  LOCK;
  *s = handle<CUstream>();
  return CUDA_SUCCESS;
}

CUresult f_ok_stream(CUstream) {
  return CUDA_SUCCESS;
}

CUresult f_event_create(CUevent* e, unsigned) {
  LOCK;
  *e = handle<CUevent>();
  return CUDA_SUCCESS;
}

CUresult f_ok_event(CUevent) {
  return CUDA_SUCCESS;
}

CUresult f_event_record(CUevent, CUstream) {
  return CUDA_SUCCESS;
}

CUresult f_elapsed(float* ms, CUevent, CUevent) {
  *ms = 0;
  return CUDA_SUCCESS;
}

CUresult f_mem_alloc(CUdeviceptr* p, size_t bytes) {
  LOCK;
  State& s = state();
  uint64_t limit = s.memory_limit ? s.memory_limit : uint64_t{1} << 30;  // the "device" size
  if (s.counters.live_bytes + bytes > limit)
    return CUDA_ERROR_OUT_OF_MEMORY;
  void* m = std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) / 256 * 256);
  if (!m)
    return CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(m, 0xEE, bytes);  // device memory starts as garbage
  *p = reinterpret_cast<CUdeviceptr>(m);
  s.device_memory[*p] = bytes;
  s.counters.live_bytes += bytes;
  ++s.counters.mem_allocs;
  return CUDA_SUCCESS;
}

CUresult f_mem_free(CUdeviceptr p) {
  LOCK;
  State& s = state();
  auto it = s.device_memory.find(p);
  if (it == s.device_memory.end())
    return fail(CUDA_ERROR_INVALID_VALUE, "cuMemFree of an unknown pointer");
  s.counters.live_bytes -= it->second;
  s.device_memory.erase(it);
  std::free(reinterpret_cast<void*>(p));
  ++s.counters.mem_frees;
  return CUDA_SUCCESS;
}

CUresult f_host_alloc(void** p, size_t bytes) {
  LOCK;
  *p = std::malloc(bytes);
  state().host_memory[reinterpret_cast<uint64_t>(*p)] = bytes;
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult f_host_free(void* p) {
  LOCK;
  state().host_memory.erase(reinterpret_cast<uint64_t>(p));
  std::free(p);
  return CUDA_SUCCESS;
}

CUresult f_mem_info(size_t* free_bytes, size_t* total) {
  LOCK;
  *total = size_t{1} << 30;
  *free_bytes = *total - state().counters.live_bytes;
  return CUDA_SUCCESS;
}

CUresult f_htod(CUdeviceptr dst, const void* src, size_t n, CUstream) {
  LOCK;
  if (!device_range(dst, n))
    return fail(CUDA_ERROR_INVALID_VALUE, "host-to-device copy outside device memory");
  std::memcpy(reinterpret_cast<void*>(dst), src, n);
  return CUDA_SUCCESS;
}

CUresult f_dtoh(void* dst, CUdeviceptr src, size_t n, CUstream) {
  LOCK;
  if (!device_range(src, n))
    return fail(CUDA_ERROR_INVALID_VALUE, "device-to-host copy outside device memory");
  std::memcpy(dst, reinterpret_cast<void*>(src), n);
  return CUDA_SUCCESS;
}

CUresult f_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream) {
  LOCK;
  if (!device_range(dst, n) || !device_range(src, n))
    return fail(CUDA_ERROR_INVALID_VALUE, "device-to-device copy outside device memory");
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), n);
  return CUDA_SUCCESS;
}

template <class T>
CUresult memset_n(CUdeviceptr p, T v, size_t n) {
  LOCK;
  if (!device_range(p, n * sizeof(T)))
    return fail(CUDA_ERROR_INVALID_VALUE, "memset outside device memory");
  for (size_t i = 0; i < n; ++i)
    std::memcpy(reinterpret_cast<char*>(p) + i * sizeof(T), &v, sizeof(T));
  return CUDA_SUCCESS;
}

CUresult f_memset8(CUdeviceptr p, unsigned char v, size_t n, CUstream) {
  return memset_n(p, v, n);
}

CUresult f_memset16(CUdeviceptr p, unsigned short v, size_t n, CUstream) {
  return memset_n(p, v, n);
}

CUresult f_memset32(CUdeviceptr p, unsigned v, size_t n, CUstream) {
  return memset_n(p, v, n);
}

CUresult f_module_load(CUmodule* m, const void* image, unsigned n_options, CUjit_option* options,
                       void** values) {
  LOCK;
  try {
    auto fm =
        std::make_unique<FakeModule>(FakeModule{PtxModule(static_cast<const char*>(image)), {}});
    *m = reinterpret_cast<CUmodule>(fm.get());
    state().modules[fm.get()] = std::move(fm);
    ++state().counters.modules;
    return CUDA_SUCCESS;
  } catch (const std::exception& e) {
    for (unsigned i = 0; i + 1 < n_options; ++i)
      if (options[i] == CU_JIT_ERROR_LOG_BUFFER) {
        auto size = reinterpret_cast<size_t>(values[i + 1]);
        std::strncpy(static_cast<char*>(values[i]), e.what(), size);
      }
    return fail(CUDA_ERROR_INVALID_PTX, e.what());
  }
}

CUresult f_module_unload(CUmodule m) {
  LOCK;
  return state().modules.erase(reinterpret_cast<FakeModule*>(m)) ? CUDA_SUCCESS : kInvalidHandle;
}

CUresult f_module_function(CUfunction* f, CUmodule m, const char* name) {
  LOCK;
  auto* fm = reinterpret_cast<FakeModule*>(m);
  try {
    size_t n = fm->ptx.param_count(name);
    fm->functions.push_back(std::make_unique<FakeFunction>(FakeFunction{&fm->ptx, name, n}));
    *f = reinterpret_cast<CUfunction>(fm->functions.back().get());
    return CUDA_SUCCESS;
  } catch (const std::exception& e) {
    return fail(CUDA_ERROR_NOT_FOUND, e.what());
  }
}

CUresult f_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                  unsigned bz, unsigned shared, CUstream, void** params, void** extra) {
  LOCK;
  auto* fn = reinterpret_cast<FakeFunction*>(f);
  if (gy != 1 || gz != 1 || by != 1 || bz != 1 || shared != 0 || extra || gx == 0 || bx == 0)
    return fail(CUDA_ERROR_INVALID_VALUE, "unexpected launch configuration");
  ++state().counters.launches;
  return run(*fn, gx, bx, param_words(*fn, params));
}

CUresult f_graph_create(CUgraph* g, unsigned) {
  LOCK;
  auto fg = std::make_unique<FakeGraph>();
  *g = reinterpret_cast<CUgraph>(fg.get());
  state().graphs[fg.get()] = std::move(fg);
  return CUDA_SUCCESS;
}

CUresult f_graph_destroy(CUgraph g) {
  LOCK;
  return state().graphs.erase(reinterpret_cast<FakeGraph*>(g)) ? CUDA_SUCCESS : kInvalidHandle;
}

FakeNode node_of(const CUDA_KERNEL_NODE_PARAMS* p) {
  auto* fn = reinterpret_cast<FakeFunction*>(p->func);
  return FakeNode{fn, p->gridDimX, p->blockDimX, param_words(*fn, p->kernelParams)};
}

CUresult f_graph_add_kernel(CUgraphNode* node, CUgraph g, const CUgraphNode* deps, size_t n_deps,
                            const CUDA_KERNEL_NODE_PARAMS* p) {
  LOCK;
  auto* fg = reinterpret_cast<FakeGraph*>(g);
  if (!state().graphs.count(fg))
    return kInvalidHandle;
  // Nodes run in the order added; each must depend on the one before (a chain).
  if (!fg->nodes.empty() &&
      (n_deps != 1 || reinterpret_cast<uintptr_t>(deps[0]) != fg->nodes.size()))
    return fail(CUDA_ERROR_INVALID_VALUE, "graph node does not depend on the previous node");
  if (p->gridDimX == 0 || p->blockDimX == 0)
    return fail(CUDA_ERROR_INVALID_VALUE, "kernel node with an empty grid");
  fg->nodes.push_back(node_of(p));
  *node = reinterpret_cast<CUgraphNode>(static_cast<uintptr_t>(fg->nodes.size()));
  ++state().counters.nodes_added;
  return CUDA_SUCCESS;
}

CUresult f_graph_instantiate(CUgraphExec* e, CUgraph g, unsigned long long) {
  LOCK;
  auto* fg = reinterpret_cast<FakeGraph*>(g);
  if (!state().graphs.count(fg))
    return kInvalidHandle;
  if (state().graph_failure)
    return fail(CUDA_ERROR_NOT_SUPPORTED, "graph instantiation refused (simulated)");
  auto copy = std::make_unique<FakeGraph>(*fg);
  *e = reinterpret_cast<CUgraphExec>(copy.get());
  state().execs[copy.get()] = std::move(copy);
  ++state().counters.instantiations;
  return CUDA_SUCCESS;
}

CUresult f_exec_destroy(CUgraphExec e) {
  LOCK;
  return state().execs.erase(reinterpret_cast<FakeGraph*>(e)) ? CUDA_SUCCESS : kInvalidHandle;
}

CUresult f_graph_launch(CUgraphExec e, CUstream) {
  LOCK;
  auto* fe = reinterpret_cast<FakeGraph*>(e);
  if (!state().execs.count(fe))
    return kInvalidHandle;
  ++state().counters.graph_launches;
  for (FakeNode& n : fe->nodes)
    if (CUresult r = run(*n.fn, n.grid, n.block, n.params); r != CUDA_SUCCESS)
      return r;
  return CUDA_SUCCESS;
}

CUresult f_exec_set_params(CUgraphExec e, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p) {
  LOCK;
  auto* fe = reinterpret_cast<FakeGraph*>(e);
  auto k = reinterpret_cast<uintptr_t>(node);
  if (!state().execs.count(fe) || k == 0 || k > fe->nodes.size())
    return kInvalidHandle;
  FakeNode n = node_of(p);
  if (n.fn != fe->nodes[k - 1].fn)  // CUDA refuses to change a node's function as well
    return fail(CUDA_ERROR_INVALID_VALUE, "kernel node update changes the function");
  if (std::getenv("FF_FAKE_DEBUG")) {
    std::cerr << "update node " << k << " grid " << fe->nodes[k - 1].grid << "->" << n.grid << ":";
    for (size_t i = 0; i < n.params.size(); ++i)
      if (n.params[i] != fe->nodes[k - 1].params[i])
        std::cerr << " p" << i << " " << std::hex << fe->nodes[k - 1].params[i] << "->"
                  << n.params[i] << std::dec;
    std::cerr << "\n";
  }
  fe->nodes[k - 1] = n;
  ++state().counters.node_updates;
  return CUDA_SUCCESS;
}

DriverApi fake_api(bool graphs) {
  DriverApi a;
  a.cuInit = f_init;
  a.cuDriverGetVersion = f_version;
  a.cuGetErrorName = f_error_name;
  a.cuGetErrorString = f_error_string;
  a.cuDeviceGetCount = f_count;
  a.cuDeviceGet = f_device_get;
  a.cuDeviceGetName = f_name;
  a.cuDeviceGetAttribute = f_attribute;
  a.cuDeviceTotalMem = f_total_mem;
  a.cuDevicePrimaryCtxRetain = f_ctx_retain;
  a.cuDevicePrimaryCtxRelease = f_ctx_release;
  a.cuCtxSetCurrent = f_ctx_set;
  a.cuCtxGetCurrent = f_ctx_get;
  a.cuStreamCreate = f_stream_create;
  a.cuStreamDestroy = f_ok_stream;
  a.cuStreamSynchronize = f_ok_stream;
  a.cuEventCreate = f_event_create;
  a.cuEventDestroy = f_ok_event;
  a.cuEventRecord = f_event_record;
  a.cuEventSynchronize = f_ok_event;
  a.cuEventElapsedTime = f_elapsed;
  a.cuMemAlloc = f_mem_alloc;
  a.cuMemFree = f_mem_free;
  a.cuMemAllocHost = f_host_alloc;
  a.cuMemFreeHost = f_host_free;
  a.cuMemGetInfo = f_mem_info;
  a.cuMemcpyHtoDAsync = f_htod;
  a.cuMemcpyDtoHAsync = f_dtoh;
  a.cuMemcpyDtoDAsync = f_dtod;
  a.cuMemsetD8Async = f_memset8;
  a.cuMemsetD16Async = f_memset16;
  a.cuMemsetD32Async = f_memset32;
  a.cuModuleLoadDataEx = f_module_load;
  a.cuModuleUnload = f_module_unload;
  a.cuModuleGetFunction = f_module_function;
  a.cuLaunchKernel = f_launch;
  if (graphs) {
    a.cuGraphCreate = f_graph_create;
    a.cuGraphDestroy = f_graph_destroy;
    a.cuGraphAddKernelNode = f_graph_add_kernel;
    a.cuGraphInstantiateWithFlags = f_graph_instantiate;
    a.cuGraphExecDestroy = f_exec_destroy;
    a.cuGraphLaunch = f_graph_launch;
    a.cuGraphExecKernelNodeSetParams = f_exec_set_params;
  }
  return a;
}

}  // namespace

const DriverApi& fake_driver_api(bool graphs) {
  static const DriverApi with = fake_api(true), without = fake_api(false);
  return graphs ? with : without;
}

FakeDriverCounters fake_counters() {
  LOCK;
  return state().counters;
}

void fake_set_device_count(int n) {
  LOCK;
  state().devices = n;
}

void fake_set_graph_failure(bool fail) {
  LOCK;
  state().graph_failure = fail;
}

void fake_set_memory_limit(uint64_t bytes) {
  LOCK;
  state().memory_limit = bytes;
}

}  // namespace ffcuda
