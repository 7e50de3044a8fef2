// Whole-file reads and atomic writes with POSIX calls (errno gives the reason in messages).
#include "common/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "freezeframe/errors.h"

namespace ff {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw Error(what + " '" + path + "': " + std::strerror(err));
}

/// Closes a descriptor on every path out of a function.
struct Fd {
  int fd = -1;

  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

}  // namespace

std::vector<std::byte> read_file(const std::string& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0)
    fail("cannot open", path, errno);

  struct stat st {};

  if (::fstat(f.fd, &st) != 0)
    fail("cannot read", path, errno);
  if (!S_ISREG(st.st_mode))
    fail("cannot read", path, S_ISDIR(st.st_mode) ? EISDIR : EINVAL);
  std::vector<std::byte> bytes(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(f.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      fail("cannot read", path, errno);
    if (n == 0) {  // the file shrank meanwhile: keep what is there
      bytes.resize(done);
      break;
    }
    done += static_cast<size_t>(n);
  }
  return bytes;
}

MappedFile::MappedFile(const std::string& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0)
    fail("cannot open", path, errno);

  struct stat st {};

  if (::fstat(f.fd, &st) != 0)
    fail("cannot read", path, errno);
  if (!S_ISREG(st.st_mode))
    fail("cannot read", path, S_ISDIR(st.st_mode) ? EISDIR : EINVAL);
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0)
    return;
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, f.fd, 0);
  if (p == MAP_FAILED)
    fail("cannot map", path, errno);
  data_ = static_cast<const std::byte*>(p);
}

MappedFile::~MappedFile() {
  if (data_)
    ::munmap(const_cast<std::byte*>(data_), size_);
}

void write_file_atomic(const std::string& path, std::span<const std::byte> bytes, bool durable) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" +
                    std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
  // Messages name the file the caller asked for; the temporary beside it is an implementation
  // detail (it is removed on every error path).
  Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)};
  if (f.fd < 0)
    fail("cannot write", path, errno);
  auto give_up = [&](const char* what, int err) {
    ::unlink(tmp.c_str());
    fail(what, path, err);
  };
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(f.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      give_up("cannot write", errno);
    done += static_cast<size_t>(n);
  }
  if (durable && ::fsync(f.fd) != 0)
    give_up("cannot sync", errno);
  int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0)
    give_up("cannot close", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot write", path, err);
  }
}

}  // namespace ff
