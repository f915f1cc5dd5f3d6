// Signatures in numba's spelling: parsed, printed, and bad text refused.
#include <gtest/gtest.h>

#include "cujit/signature.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

TEST(Signature, ParsesNumbaSpelling) {
  const Signature sig = Signature::parse(" int32 ( int32 , float64* ) ");
  EXPECT_EQ(sig.str(), "int32(int32, float64*)");
  EXPECT_EQ(sig.args[1].cuda(), "double*");
  // numba-cuda has no code for pointers: their names, mangled as identifiers.
  EXPECT_EQ(sig.args[1].itanium(), "10float64_2a");
  EXPECT_EQ(Type::parse("int32*").itanium(), "8int32_2a");
  EXPECT_EQ(Type::parse("bool**").itanium(), "10bool_2a_2a");
  EXPECT_EQ(Type::parse("int32").itanium(), "i");
  EXPECT_EQ(Signature::parse("void()").str(), "void()");
  for (const char* text : {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                           "uint64", "float32", "float64"}) {
    EXPECT_EQ(Type::parse(text).str(), text);
  }
}

TEST(Signature, RejectsBadText) {
  for (const char* text : {"int32", "int32(int33)", "int32(int32,)", "(int32)", "int32(void)",
                           "complex(int32)"}) {
    CUJIT_EXPECT_ERROR(Signature::parse(text), ErrorKind::usage, error,
                       EXPECT_NE(std::string(error.what()).find("'"), std::string::npos););
  }
}

}  // namespace
}  // namespace cujit
