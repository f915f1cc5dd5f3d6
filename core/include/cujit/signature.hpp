#pragma once
// Types and signatures of device functions, in numba's spelling: "int32(int32, float64*)".

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cujit {

/// The scalar types a signature can name, in numba's terms ("void_" is void).
enum class Scalar {
  void_, boolean, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64
};

/// A scalar type with a number of pointer levels: "int32", "float64*".
struct Type {
  Scalar scalar = Scalar::int32;  ///< the type pointed to, or the type itself
  int pointers = 0;               ///< pointer levels: "int32**" has 2

  /// Parses "int32", "float64*", "bool", "void"; throws Error(usage) naming the text.
  static Type parse(std::string_view text);
  /// numba spelling: "float64*". Never throws except std::bad_alloc.
  std::string str() const;
  /// CUDA C++ spelling: "double*". Never throws except std::bad_alloc.
  std::string cuda() const;
  /// Itanium mangling code as numba-cuda writes it: "d" for float64; a pointer, for which
  /// numba has no code, as its name mangled as an identifier: "10float64_2a" for float64*.
  /// Never throws except std::bad_alloc.
  std::string itanium() const;
  /// Bytes of a value of this type (8 for pointers).
  std::size_t size() const noexcept;
  /// Whether this is void (not a pointer to void).
  bool is_void() const noexcept { return scalar == Scalar::void_ && pointers == 0; }
  /// Field-wise equality.
  friend bool operator==(const Type&, const Type&) = default;
  /// Field-wise order (for maps of overloads).
  friend auto operator<=>(const Type&, const Type&) = default;
};

/// A function's signature: result and argument types, "int32(int32, float64*)".
struct Signature {
  Type result;             ///< the result type (void for none)
  std::vector<Type> args;  ///< the argument types, in order

  /// Parses "int32(int32, int32)"; throws Error(usage) naming the text and what is wrong.
  static Signature parse(std::string_view text);
  /// "int32(int32, int32)". Never throws except std::bad_alloc.
  std::string str() const;
  /// Field-wise equality.
  friend bool operator==(const Signature&, const Signature&) = default;
  /// Field-wise order (for maps of overloads).
  friend auto operator<=>(const Signature&, const Signature&) = default;
};

}  // namespace cujit
