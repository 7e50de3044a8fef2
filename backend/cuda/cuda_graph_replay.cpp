// Command lists as CUDA graphs (see cuda_graph_replay.h), and CudaBackend::submit.
#include "backend/cuda/cuda_graph_replay.h"

#include <algorithm>

#include "backend/command_list.h"
#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/ptx_builtins.h"
#include "common/log.h"
#include "freezeframe/errors.h"

namespace ff::cuda_backend {

void GraphSink::kernel(CUfunction fn, unsigned grid, unsigned block, std::span<const uint64_t> p) {
  nodes.push_back(
      {fn, grid, block, static_cast<uint32_t>(params.size()), static_cast<uint32_t>(p.size())});
  params.insert(params.end(), p.begin(), p.end());
}

namespace {

// Kernel node parameters pointing into `words` (which must outlive the call that uses them).
CUDA_KERNEL_NODE_PARAMS node_params(const GraphSink::Node& n, const uint64_t* words,
                                    std::vector<void*>& ptrs) {
  ptrs.resize(n.n_params);
  for (uint32_t i = 0; i < n.n_params; ++i)
    ptrs[i] = const_cast<uint64_t*>(words + n.param_begin + i);
  CUDA_KERNEL_NODE_PARAMS p;
  p.func = n.fn;
  p.gridDimX = n.grid;
  p.blockDimX = n.block;
  p.kernelParams = ptrs.data();
  return p;
}

bool same_structure(const GraphSink& a, const GraphSink& b) {
  if (a.nodes.size() != b.nodes.size())
    return false;
  for (size_t i = 0; i < a.nodes.size(); ++i)
    if (a.nodes[i].fn != b.nodes[i].fn || a.nodes[i].n_params != b.nodes[i].n_params ||
        a.nodes[i].block != b.nodes[i].block)
      return false;
  return true;
}

}  // namespace

GraphCache::~GraphCache() {
  clear();
}

void GraphCache::clear() noexcept {
  for (auto& [key, g] : graphs_)
    destroy(g);
  graphs_.clear();
}

void GraphCache::destroy(Graph& g) noexcept {
  const DriverApi& api = ctx_->api();
  if (g.exec)
    api.cuGraphExecDestroy(g.exec);
  if (g.graph)
    api.cuGraphDestroy(g.graph);
  g.exec = nullptr;
  g.graph = nullptr;
}

void GraphCache::build(Graph& g, const GraphSink& sink) {
  const DriverApi& api = ctx_->api();
  destroy(g);
  g.handles.clear();
  ctx_->check(api.cuGraphCreate(&g.graph, 0), "cuGraphCreate");
  std::vector<void*> ptrs;
  for (const GraphSink::Node& n : sink.nodes) {
    CUDA_KERNEL_NODE_PARAMS p = node_params(n, sink.params.data(), ptrs);
    CUgraphNode h = nullptr;
    const CUgraphNode* dep = g.handles.empty() ? nullptr : &g.handles.back();
    ctx_->check(api.cuGraphAddKernelNode(&h, g.graph, dep, dep ? 1 : 0, &p),
                "cuGraphAddKernelNode");
    g.handles.push_back(h);
  }
  ctx_->check(api.cuGraphInstantiateWithFlags(&g.exec, g.graph, 0), "cuGraphInstantiateWithFlags");
  g.bound = sink;
}

void GraphCache::run(uint64_t key, const GraphSink& sink, CUstream stream) {
  if (sink.nodes.empty())
    return;
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    if (graphs_.size() >= capacity_) {
      auto oldest = std::min_element(graphs_.begin(), graphs_.end(), [](auto& a, auto& b) {
        return a.second.last_use < b.second.last_use;
      });
      destroy(oldest->second);
      graphs_.erase(oldest);
    }
    it = graphs_.emplace(key, Graph{}).first;
  }
  Graph& g = it->second;
  g.last_use = ++clock_;
  try {
    if (!g.exec || !same_structure(g.bound, sink)) {
      build(g, sink);
    } else {
      // Re-bind only the nodes whose grid or parameters changed.
      std::vector<void*> ptrs;
      for (size_t i = 0; i < sink.nodes.size(); ++i) {
        const GraphSink::Node& now = sink.nodes[i];
        const GraphSink::Node& was = g.bound.nodes[i];
        bool changed = now.grid != was.grid ||
                       !std::equal(sink.params.begin() + now.param_begin,
                                   sink.params.begin() + now.param_begin + now.n_params,
                                   g.bound.params.begin() + was.param_begin);
        if (!changed)
          continue;
        CUDA_KERNEL_NODE_PARAMS p = node_params(now, sink.params.data(), ptrs);
        ctx_->check(ctx_->api().cuGraphExecKernelNodeSetParams(g.exec, g.handles[i], &p),
                    "cuGraphExecKernelNodeSetParams");
        g.bound.nodes[i].grid = now.grid;
        std::copy(sink.params.begin() + now.param_begin,
                  sink.params.begin() + now.param_begin + now.n_params,
                  g.bound.params.begin() + was.param_begin);
      }
    }
    ctx_->check(ctx_->api().cuGraphLaunch(g.exec, stream), "cuGraphLaunch");
  } catch (...) {
    destroy(g);  // rebuilt on the next submission
    graphs_.erase(it);
    throw;
  }
}

// ---------------------------------------------------------------------------------------

bool CudaBackend::prefers_command_lists() const {
  return graphs_enabled_.load(std::memory_order_relaxed);
}

size_t CudaBackend::submit(const CommandList& list) {
  if (!graphs_enabled_.load(std::memory_order_relaxed) || list.empty())
    return Backend::submit(list);
  bool released = false;
  auto release_all = [&] {  // the list's releases happen once, on every path
    if (released)
      return;
    released = true;
    // In order: the allocator reuses blocks first in, first out, so the next submission's
    // temporaries get the same blocks in the same order and their nodes need no re-binding.
    for (const Command& c : list.commands)
      if (c.kind == CommandKind::Release)
        alloc_->release(c.dst);
  };
  try {
    ctx_->bind();
    std::unique_lock lock(scratch_mutex_);
    if (!graphs_) {  // switched off by another thread meanwhile
      lock.unlock();
      released = true;  // Backend::submit disposes of the releases, also when it throws
      return Backend::submit(list);
    }
    GraphSink& sink = graph_sink_;
    sink.clear();
    bool compress = false;
    uint64_t n_launches = 0, n_reductions = 0;
    for (size_t k = 0; k < list.commands.size(); ++k) {
      const Command& c = list.commands[k];
      switch (c.kind) {
        case CommandKind::Launch: {
          const CudaKernel& kernel = kernel_of(*c.kernel);
          if (c.n_args != kernel.n_params())
            throw BackendError("cuda backend: kernel " + kernel.hash().to_hex() + " takes " +
                               std::to_string(kernel.n_params()) + " arguments, submit passed " +
                               std::to_string(c.n_args));
          thread_local std::vector<uint64_t> bits;
          bits.resize(c.n_args);
          for (uint32_t a = 0; a < c.n_args; ++a)
            bits[a] = list.args[c.args_begin + a].bits;
          issue_launch(sink, kernel, c.size, bits);
          ++n_launches;
          break;
        }
        case CommandKind::Copy:
          if (c.copy_kind != CopyKind::DeviceToDevice)
            throw BackendError("cuda backend: submit of a copy from or to host memory");
          if (c.size && (!c.dst || !c.src))
            throw BackendError("cuda backend: copy with a null pointer");
          issue_copy(sink, c.dst, c.src, c.size);
          break;
        case CommandKind::Fill:
          if (c.elem_size != 1 && c.elem_size != 2 && c.elem_size != 4 && c.elem_size != 8)
            throw BackendError("cuda backend: fill element size " + std::to_string(c.elem_size) +
                               " is not 1, 2, 4 or 8");
          issue_fill(sink, c.dst, c.size, c.elem_size, c.value);
          break;
        case CommandKind::Reduce:
          issue_reduce(sink, c.reduce_op, c.type, c.src, c.size, c.dst);
          ++n_reductions;
          break;
        case CommandKind::PrefixSum:
          issue_prefix_sum(sink, c.type, c.exclusive, c.src, c.size, c.dst);
          ++n_reductions;
          break;
        case CommandKind::Compress:
          if (k + 1 != list.commands.size())
            throw BackendError("cuda backend: a compress must be the last command of its list");
          issue_compress(sink, c.src, c.size, c.dst, total_);
          ++n_reductions;
          compress = true;
          break;
        case CommandKind::Release:
          break;  // after the graph is queued
      }
    }
    try {
      graphs_->run(list.key, sink, stream_->get());
    } catch (const BackendError& e) {
      // The driver refused a graph operation (nothing was queued): run op by op from now on.
      logging::cuda().warn(
          "cuda backend: graph replay failed, replays run op by op from now on: {}", e.what());
      graphs_.reset();
      graphs_enabled_.store(false);
      lock.unlock();
      released = true;  // Backend::submit disposes of the releases, also when it throws
      return Backend::submit(list);
    }
    launches_.fetch_add(n_launches, std::memory_order_relaxed);
    reductions_.fetch_add(n_reductions, std::memory_order_relaxed);
    // The graph is queued: released buffers may be handed out again (stream order).
    release_all();
    if (!compress)
      return 0;
    host_reads_.fetch_add(1, std::memory_order_relaxed);
    return read_u64(total_);
  } catch (...) {
    release_all();
    throw;
  }
}

}  // namespace ff::cuda_backend
