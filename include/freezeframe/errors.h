// The exceptions freezeframe throws: every failure a user can cause is one of these.
#pragma once

#include <stdexcept>
#include <string>

namespace ff {

/// Base of every error freezeframe reports; the message names what was wrong and where.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// A function or recording cannot be frozen or replayed (host read, implicit input, ...).
class FreezeError : public Error {
 public:
  explicit FreezeError(const std::string& what) : Error(what) {}
};

/// A size guard recorded while tracing failed at replay: record that path anew.
class GuardError : public FreezeError {
 public:
  explicit GuardError(const std::string& what) : FreezeError(what) {}
};

/// A recording file is damaged or of an incompatible version.
class FormatError : public Error {
 public:
  explicit FormatError(const std::string& what) : Error(what) {}
};

/// A backend could not do what it was asked (compile failure, driver error, ...).
class BackendError : public Error {
 public:
  explicit BackendError(const std::string& what) : Error(what) {}
};

}  // namespace ff
