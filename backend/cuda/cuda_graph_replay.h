// Command lists (backend/command_list.h) run as CUDA graphs. A list's commands go through the
// same launch code as op-by-op work, into a GraphSink that collects kernel nodes (fills and
// device copies become kernels too, so every node is a kernel node). The first submission of
// a list builds a graph (a chain of kernel nodes) and instantiates it; later submissions with
// the same key and the same kernels re-bind what changed (pointers, sizes, grid) with
// cuGraphExecKernelNodeSetParams, node by node, and launch the graph: a replay at unchanged
// sizes whose temporaries come back from the caching allocator at the same addresses updates
// nothing at all. A list whose structure differs (another kernel, another node count)
// replaces the graph. A compress ends its list (the count is read after the graph).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_context.h"

namespace ff::cuda_backend {

/// Kernel launches collected for a graph: nodes with their parameter words in one array.
class GraphSink final : public LaunchSink {
 public:
  struct Node {
    CUfunction fn;
    unsigned grid, block;
    uint32_t param_begin, n_params;
  };

  void kernel(CUfunction fn, unsigned grid, unsigned block,
              std::span<const uint64_t> params) override;

  void clear() {
    nodes.clear();
    params.clear();
  }

  std::vector<Node> nodes;
  std::vector<uint64_t> params;
};

/// Instantiated graphs by command-list key (at most `capacity`, least recently used dropped).
/// Not thread-safe: the backend serialises submissions.
class GraphCache {
 public:
  GraphCache(std::shared_ptr<const CudaContext> ctx, size_t capacity = 64)
      : ctx_(std::move(ctx)), capacity_(capacity) {}

  ~GraphCache();
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;

  /// Builds or re-binds the graph for `key` to the nodes in `sink`, and launches it on
  /// `stream`. Throws ff::BackendError when the driver refuses.
  void run(uint64_t key, const GraphSink& sink, CUstream stream);

  /// Drops every graph (their kernels may be flushed).
  void clear() noexcept;

  size_t size() const { return graphs_.size(); }

 private:
  struct Graph {
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    std::vector<CUgraphNode> handles;
    GraphSink bound;  // what the nodes hold now
    uint64_t last_use = 0;
  };

  void build(Graph& g, const GraphSink& sink);
  void destroy(Graph& g) noexcept;

  std::shared_ptr<const CudaContext> ctx_;
  size_t capacity_;
  uint64_t clock_ = 0;
  std::unordered_map<uint64_t, Graph> graphs_;
};

}  // namespace ff::cuda_backend
