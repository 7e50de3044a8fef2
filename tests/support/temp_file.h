// Temporary files and directories for tests, named after the process (two test runs of one
// build tree never share one) and removed at the end of the test.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace fft {

/// A path under the temporary directory; the file is removed when this goes out of scope.
struct TempFile {
  std::filesystem::path path;

  explicit TempFile(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("ff-test-" + std::to_string(::getpid()) + "-" + name)) {}

  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }

  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  std::string str() const { return path.string(); }
};

/// A fresh directory under the temporary directory, removed with its contents at the end.
struct TempDir {
  std::filesystem::path path;

  TempDir() {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("ff-test-" + std::to_string(::getpid()) + "-dir-" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }

  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }

  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace fft
