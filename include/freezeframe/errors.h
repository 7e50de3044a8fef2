// The exceptions freezeframe throws: every failure a user can cause is one of these. Which one
// means what is the table in docs/errors.md; tests check the exact type.
#pragma once

#include <stdexcept>
#include <string>

namespace ff {

/// Base of every error freezeframe reports; the message names what was wrong and where. Thrown
/// as itself for a misuse of arrays or of the API (sizes that do not match, mixed element
/// types, an unknown backend name, ff::capture() on a stack that does not capture).
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// A recording cannot be made (a host read or an implicit input inside it), or cannot be
/// replayed with these inputs (their count, types or aliasing, a size out of range for them).
class FreezeError : public Error {
 public:
  explicit FreezeError(const std::string& what) : Error(what) {}
};

/// A size guard recorded while tracing failed at replay: record that path anew.
class GuardError : public FreezeError {
 public:
  explicit GuardError(const std::string& what) : FreezeError(what) {}
};

/// A recording file, a recording or kernel IR from outside is damaged or of an incompatible
/// version (validation failed).
class FormatError : public Error {
 public:
  explicit FormatError(const std::string& what) : Error(what) {}
};

/// A backend cannot compile, allocate, start or run what it was given (out of memory, a code
/// generator or driver error, no device).
class BackendError : public Error {
 public:
  explicit BackendError(const std::string& what) : Error(what) {}
};

}  // namespace ff
