#pragma once
// How parameter values of the conformance suites print: GoogleTest writes them into test
// listings and JUnit XML (value_param). A type without a printer comes out as a raw memory
// dump, pointers included, which changes every run and makes CI dashboards see new tests.
// Every parameter type gets a PrintTo next to its definition; the core's enums get theirs
// here (in namespace cujit, where argument-dependent lookup finds them).

#include <cctype>
#include <ostream>
#include <string>

#include "cujit/format.hpp"
#include "cujit/linker.hpp"
#include "cujit/reduce.hpp"

namespace cujit {

inline void PrintTo(LinkerBackend backend, std::ostream* out) { *out << to_string(backend); }
inline void PrintTo(Format format, std::ostream* out) { *out << to_string(format); }

namespace reduce {
inline void PrintTo(Builtin op, std::ostream* out) { *out << to_string(op); }
}  // namespace reduce

// A parameter's text as a test name suffix: GoogleTest takes only letters, digits and '_'.
inline std::string test_identifier(std::string text) {
  for (char& c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return text;
}

}  // namespace cujit
