// Default behaviour of the Backend interface.
#include "backend/backend.h"

#include <atomic>
#include <cstdio>
#include <vector>

#include "backend/command_list.h"
#include "dist/mpi_world.h"
#include "freezeframe/errors.h"

namespace ff {

namespace {
std::atomic<uint64_t> g_next_instance_id{1};
}  // namespace

std::shared_ptr<const KernelIR> kernel_to_compile(const KernelIR& ir, const char* backend) {
  std::shared_ptr<const KernelIR> checked = KernelIR::validated(ir);  // its hash from contents
  if (checked->hash != ir.hash)
    throw BackendError(std::string(backend) + ": kernel IR hash " + ir.hash.to_hex() +
                       " does not match its contents (call KernelIR::finalize() after editing)");
  return checked;
}

Backend::Backend() : instance_id_(g_next_instance_id.fetch_add(1, std::memory_order_relaxed)) {}

std::string Backend::describe_buffer(const void* ptr) const {
  return address_of(ptr);
}

std::string Backend::address_of(const void* ptr) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", ptr);
  return buf;
}

size_t Backend::collective_count(const dist_impl::Collective& c) {
  return dist_impl::exchange_count(c);
}

void Backend::collective(const dist_impl::Collective& c) {
  if (dist_impl::takes_device_pointers()) {
    // A CUDA-aware MPI reads and writes device memory itself, once the device work that
    // produces the input has run (sync() below); it is done with both buffers when it returns.
    dist_impl::Collective direct = c;
    if (c.kind == dist_impl::CollectiveKind::Broadcast && c.count && c.out != c.in &&
        c.root == dist_impl::rank("broadcast")) {
      // The root's own copy, queued before the sync: MPI_Bcast sends from its output buffer
      // (a host memcpy in dist_impl::run would touch device memory).
      copy(c.out, c.in, c.count * size_of(c.type), CopyKind::DeviceToDevice);
      direct.in = c.out;
    }
    sync();
    dist_impl::run(direct);
    return;
  }
  // Otherwise device buffers reach MPI through host memory.
  size_t elem = size_of(c.type);
  std::vector<unsigned char> in(c.count * elem), out(c.out_count * elem);
  if (c.count)
    copy(in.data(), c.in, c.count * elem, CopyKind::DeviceToHost);
  dist_impl::Collective host = c;
  host.in = in.data();
  host.out = out.data();
  dist_impl::run(host);
  if (c.out_count)
    copy(c.out, out.data(), c.out_count * elem, CopyKind::HostToDevice);
}

size_t Backend::submit(const CommandList& list) {
  size_t count = 0;
  size_t k = 0;
  try {
    for (; k < list.commands.size(); ++k) {
      const Command& c = list.commands[k];
      switch (c.kind) {
        case CommandKind::Launch:
          launch(*c.kernel, c.size, {},
                 std::span<const KernelArg>(list.args.data() + c.args_begin, c.n_args));
          break;
        case CommandKind::Copy:
          copy(c.dst, c.src, c.size, c.copy_kind);
          break;
        case CommandKind::Fill:
          fill(c.dst, c.size, c.elem_size, c.value);
          break;
        case CommandKind::Reduce:
          reduce(c.reduce_op, c.type, c.src, c.size, c.dst);
          break;
        case CommandKind::PrefixSum:
          prefix_sum(c.type, c.exclusive, c.src, c.size, c.dst);
          break;
        case CommandKind::Compress:
          if (k + 1 != list.commands.size())
            throw BackendError("submit: a compress must be the last command of its list");
          count = compress(c.src, c.size, c.dst);
          break;
        case CommandKind::Release:
          release(c.dst);
          break;
      }
    }
  } catch (...) {
    // The Release commands not reached are disposed of all the same: the submitter is done
    // with those buffers either way.
    for (++k; k < list.commands.size(); ++k)
      if (list.commands[k].kind == CommandKind::Release)
        release(list.commands[k].dst);
    throw;
  }
  return count;
}

}  // namespace ff
