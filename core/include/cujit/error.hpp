#pragma once
// Typed errors. Every cujit failure is an Error whose kind callers can match on and whose
// message names the input(s), the component (backend or API call) and carries the log.
// The kind follows from the type (LinkError is a link error, CudaError a cuda error);
// context added on the way up keeps the type and every field.

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

/// cujit: a C++20 CUDA JIT core. Every public type and function is in this namespace (or
/// one nested in it); every failure is a cujit::Error.
namespace cujit {

/// What kind of failure an Error is; it follows from the error's type.
enum class ErrorKind {
  compile,      ///< NVRTC rejected a source
  link,         ///< a linker backend rejected the inputs (unresolved, duplicate, bad arch...)
  format,       ///< bytes are not what their format or extension claims
  unsupported,  ///< a valid request this backend / build cannot do
  cuda,         ///< a Driver API call failed
  nrt,          ///< device runtime policy or linking
  cache,        ///< build cache
  usage,        ///< the caller broke an API contract (wrong argument count, bad option)
  io,           ///< a file could not be read or written
};

/// "compile", "link", ... (the enumerator's name).
std::string_view to_string(ErrorKind kind) noexcept;

/// A cujit failure: its kind, the component that failed, a message naming the input(s) and
/// the vendor log. what() holds all of them.
class Error : public std::runtime_error {
 public:
  /// An error of `kind`; component: who failed, e.g. "nvJitLink (nvJitLinkComplete)" or "LinkableCode::from_path".
  Error(ErrorKind kind, std::string component, std::string message, std::string log = {});

  /// What kind of failure this is.
  ErrorKind kind() const noexcept { return kind_; }
  /// Who failed: a backend and its API call, or a cujit function.
  const std::string& component() const noexcept { return component_; }
  /// The message without kind, component and log.
  const std::string& message() const noexcept { return message_; }
  /// NVRTC / nvJitLink / driver log, empty when the failing call has none.
  const std::string& log() const noexcept { return log_; }
  /// Kind, component, message and log in one text.
  const char* what() const noexcept override { return what_.c_str(); }

  /// Throws a copy of this error, of its own dynamic type with all its fields, whose
  /// component is "`outer` (original component)" and whose message starts with `context`.
  [[noreturn]] void rethrow_with_context(const std::string& outer, const std::string& context) const;

  /// Copies every field.
  Error(const Error&) = default;
  /// Copies every field.
  Error& operator=(const Error&) = default;
  /// Never throws.
  ~Error() override = default;

 protected:
  /// A copy of the dynamic type (for rethrow_with_context); overridden by each subclass.
  virtual std::unique_ptr<Error> clone() const { return std::unique_ptr<Error>(new Error(*this)); }
  /// Throws *this as its dynamic type; overridden by each subclass.
  [[noreturn]] virtual void raise() const { throw *this; }

 private:
  void compose();
  ErrorKind kind_;
  std::string component_;
  std::string message_;
  std::string log_;
  std::string what_;
};

/// A link failure with the symbols the log named, so callers (and the NRT policy) can act
/// on them without parsing text.
class LinkError : public Error {
 public:
  /// A link error (ErrorKind::link) with the unresolved and duplicate symbols the log named.
  LinkError(std::string component, std::string message, std::string log,
            std::vector<std::string> unresolved_symbols,
            std::vector<std::string> duplicate_symbols);

  /// The symbols the log reported undefined, in its order.
  const std::vector<std::string>& unresolved_symbols() const noexcept { return unresolved_; }
  /// The symbols the log reported defined more than once.
  const std::vector<std::string>& duplicate_symbols() const noexcept { return duplicates_; }

 protected:
  /// A copy as a LinkError.
  std::unique_ptr<Error> clone() const override { return std::unique_ptr<Error>(new LinkError(*this)); }
  /// Throws *this as a LinkError.
  [[noreturn]] void raise() const override { throw *this; }

 private:
  std::vector<std::string> unresolved_;
  std::vector<std::string> duplicates_;
};

/// A failed Driver API call, with its CUresult.
class CudaError : public Error {
 public:
  /// A cuda error (ErrorKind::cuda) from the Driver API call `api_call`, which returned
  /// `result`.
  CudaError(std::string api_call, int result, std::string message, std::string log = {});
  /// The CUresult the call returned.
  int result() const noexcept { return result_; }

 protected:
  /// A copy as a CudaError.
  std::unique_ptr<Error> clone() const override { return std::unique_ptr<Error>(new CudaError(*this)); }
  /// Throws *this as a CudaError.
  [[noreturn]] void raise() const override { throw *this; }

 private:
  int result_;
};

}  // namespace cujit
