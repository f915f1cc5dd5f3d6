#include "presentation.hpp"

#include <iostream>
#include <ostream>
#include <streambuf>

namespace cujit::cli {
namespace {

Verbosity current_verbosity = Verbosity::normal;
bool current_color = false;

// A stream buffer that accepts and drops everything (--quiet's progress).
class NullBuffer : public std::streambuf {
 protected:
  int_type overflow(int_type c) override { return traits_type::not_eof(c); }
  std::streamsize xsputn(const char*, std::streamsize count) override { return count; }
};

}  // namespace

bool want_color(ColorChoice choice, bool stdout_is_terminal, const char* no_color) {
  switch (choice) {
    case ColorChoice::always: return true;
    case ColorChoice::never: return false;
    case ColorChoice::automatic: return stdout_is_terminal && (no_color == nullptr || *no_color == '\0');
  }
  return false;
}

void set_presentation(Verbosity verbosity, bool color) {
  current_verbosity = verbosity;
  current_color = color;
}

Verbosity verbosity() { return current_verbosity; }
bool verbose() { return current_verbosity == Verbosity::verbose; }

std::ostream& progress() {
  static NullBuffer buffer;
  static std::ostream dropped(&buffer);
  return current_verbosity == Verbosity::quiet ? dropped : std::cerr;
}

std::string paint(Tone tone, std::string_view text) {
  if (!current_color) return std::string(text);
  const char* start = tone == Tone::good ? "\x1b[32m" : tone == Tone::bad ? "\x1b[31m" : "\x1b[33m";
  return start + std::string(text) + "\x1b[0m";
}

}  // namespace cujit::cli
