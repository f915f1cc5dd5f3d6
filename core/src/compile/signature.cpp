#include "cujit/signature.hpp"

#include <array>
#include <cctype>

#include "cujit/error.hpp"

namespace cujit {
namespace {

struct ScalarInfo {
  Scalar scalar;
  std::string_view numba;
  std::string_view cuda;
  std::string_view itanium;  // numba's codes (int64 is 'x', long long)
  std::size_t size;
};

constexpr std::array<ScalarInfo, 12> scalars{{
    {Scalar::void_, "void", "void", "v", 0},
    {Scalar::boolean, "bool", "bool", "b", 1},
    {Scalar::int8, "int8", "signed char", "a", 1},
    {Scalar::int16, "int16", "short", "s", 2},
    {Scalar::int32, "int32", "int", "i", 4},
    {Scalar::int64, "int64", "long long", "x", 8},
    {Scalar::uint8, "uint8", "unsigned char", "h", 1},
    {Scalar::uint16, "uint16", "unsigned short", "t", 2},
    {Scalar::uint32, "uint32", "unsigned int", "j", 4},
    {Scalar::uint64, "uint64", "unsigned long long", "y", 8},
    {Scalar::float32, "float32", "float", "f", 4},
    {Scalar::float64, "float64", "double", "d", 8},
}};

const ScalarInfo& info(Scalar scalar) { return scalars[static_cast<std::size_t>(scalar)]; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

[[noreturn]] void bad(std::string_view component, std::string_view text, const std::string& why) {
  throw Error(ErrorKind::usage, std::string(component), "'" + std::string(text) + "': " + why);
}

}  // namespace

Type Type::parse(std::string_view text) {
  std::string_view rest = trim(text);
  Type type;
  while (!rest.empty() && rest.back() == '*') {
    ++type.pointers;
    rest = trim(rest.substr(0, rest.size() - 1));
  }
  // Aliases numba accepts too.
  if (rest == "boolean" || rest == "b1") rest = "bool";
  if (rest == "float") rest = "float32";
  if (rest == "double") rest = "float64";
  for (const ScalarInfo& candidate : scalars) {
    if (candidate.numba == rest) {
      type.scalar = candidate.scalar;
      return type;
    }
  }
  bad("Type::parse", text,
      "not a type; expected bool, int8..int64, uint8..uint64, float32, float64, void, or a "
      "pointer to one (int32*)");
}

std::string Type::str() const { return std::string(info(scalar).numba) + std::string(pointers, '*'); }
std::string Type::cuda() const { return std::string(info(scalar).cuda) + std::string(pointers, '*'); }

std::string Type::itanium() const {
  if (pointers == 0) return std::string(info(scalar).itanium);
  // numba has no code for a pointer (types.CPointer): it mangles the type's name as an
  // identifier, '*' escaped as _2a: "int32*" is "8int32_2a", not C++'s "Pi".
  std::string name(info(scalar).numba);
  for (int i = 0; i < pointers; ++i) name += "_2a";
  return std::to_string(name.size()) + name;
}

std::size_t Type::size() const noexcept { return pointers > 0 ? 8 : info(scalar).size; }

Signature Signature::parse(std::string_view text) {
  const std::string_view whole = trim(text);
  const auto open = whole.find('(');
  if (open == std::string_view::npos || whole.back() != ')') {
    bad("Signature::parse", text, "expected 'result(arg, ...)', e.g. 'int32(int32, int32)'");
  }
  Signature signature;
  signature.result = Type::parse(whole.substr(0, open));
  std::string_view args = trim(whole.substr(open + 1, whole.size() - open - 2));
  while (!args.empty()) {
    const auto comma = args.find(',');
    const std::string_view arg = trim(args.substr(0, comma));
    if (arg.empty()) bad("Signature::parse", text, "an empty argument type");
    const Type type = Type::parse(arg);
    if (type.is_void()) bad("Signature::parse", text, "void is not an argument type");
    signature.args.push_back(type);
    if (comma == std::string_view::npos) break;
    args = trim(args.substr(comma + 1));
    if (args.empty()) bad("Signature::parse", text, "a trailing comma");
  }
  return signature;
}

std::string Signature::str() const {
  std::string out = result.str() + "(";
  for (std::size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + args[i].str();
  return out + ")";
}

}  // namespace cujit
