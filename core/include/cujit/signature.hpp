#pragma once
// Types and signatures of device functions, in numba's spelling: "int32(int32, float64*)".

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cujit {

enum class Scalar {
  void_, boolean, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64
};

struct Type {
  Scalar scalar = Scalar::int32;
  int pointers = 0;  // "int32**" has 2

  // Parses "int32", "float64*", "bool", "void"; throws Error(usage) naming the text.
  static Type parse(std::string_view text);
  std::string str() const;         // numba spelling: "float64*"
  std::string cuda() const;        // CUDA C++ spelling: "double*"
  std::string itanium() const;     // Itanium mangling code as numba writes it: "Pd"
  std::size_t size() const noexcept;  // bytes of a value of this type (8 for pointers)
  bool is_void() const noexcept { return scalar == Scalar::void_ && pointers == 0; }
  friend bool operator==(const Type&, const Type&) = default;
  friend auto operator<=>(const Type&, const Type&) = default;
};

struct Signature {
  Type result;
  std::vector<Type> args;

  // Parses "int32(int32, int32)"; throws Error(usage) naming the text and what is wrong.
  static Signature parse(std::string_view text);
  std::string str() const;  // "int32(int32, int32)"
  friend bool operator==(const Signature&, const Signature&) = default;
  friend auto operator<=>(const Signature&, const Signature&) = default;
};

}  // namespace cujit
