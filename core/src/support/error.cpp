#include "cujit/error.hpp"

namespace cujit {
namespace {

std::string compose_text(ErrorKind kind, const std::string& component, const std::string& message,
                    const std::string& log) {
  std::string text = "cujit ";
  text += to_string(kind);
  text += " error in ";
  text += component;
  text += ": ";
  text += message;
  if (!log.empty()) {
    text += "\n--- log ---\n";
    text += log;
    if (text.back() != '\n') text += '\n';
    text += "--- end of log ---";
  }
  return text;
}

}  // namespace

std::string_view to_string(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::compile: return "compile";
    case ErrorKind::link: return "link";
    case ErrorKind::format: return "format";
    case ErrorKind::unsupported: return "unsupported";
    case ErrorKind::cuda: return "cuda";
    case ErrorKind::nrt: return "nrt";
    case ErrorKind::cache: return "cache";
    case ErrorKind::usage: return "usage";
    case ErrorKind::io: return "io";
  }
  return "unknown";
}

Error::Error(ErrorKind kind, std::string component, std::string message, std::string log)
    : std::runtime_error(std::string(to_string(kind))),
      kind_(kind),
      component_(std::move(component)),
      message_(std::move(message)),
      log_(std::move(log)) {
  compose();
}

void Error::compose() { what_ = compose_text(kind_, component_, message_, log_); }

void Error::rethrow_with_context(const std::string& outer, const std::string& context) const {
  std::unique_ptr<Error> copy = clone();
  copy->component_ = outer + " (" + component_ + ")";
  copy->message_ = context + message_;
  copy->compose();
  copy->raise();
  throw Error(*copy);  // not reached: every raise() throws its own type
}

LinkError::LinkError(std::string component, std::string message, std::string log,
                     std::vector<std::string> unresolved_symbols,
                     std::vector<std::string> duplicate_symbols)
    : Error(ErrorKind::link, std::move(component), std::move(message), std::move(log)),
      unresolved_(std::move(unresolved_symbols)),
      duplicates_(std::move(duplicate_symbols)) {}

CudaError::CudaError(std::string api_call, int result, std::string message, std::string log)
    : Error(ErrorKind::cuda, std::move(api_call), std::move(message), std::move(log)),
      result_(result) {}

}  // namespace cujit
