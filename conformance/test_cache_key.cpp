// CacheKey: labelled, length-prefixed fields; the recipes built on it (compile_key,
// link_key) are tested field by field in test_compile_cache.cpp.
#include <gtest/gtest.h>

#include "cujit/cache_key.hpp"

namespace cujit {
namespace {

TEST(CacheKey, LabelledLengthPrefixedFieldsDoNotRunTogether) {
  EXPECT_NE(CacheKey("k").add("ab", "c").digest(), CacheKey("k").add("a", "bc").digest());
  EXPECT_NE(CacheKey("k").add("a", "1").add("b", "2").digest(),
            CacheKey("k").add("b", "2").add("a", "1").digest());
  EXPECT_NE(CacheKey("link").digest(), CacheKey("nvrtc-compile").digest());
  EXPECT_EQ(CacheKey("k").add("a", "1").digest(), CacheKey("k").add("a", "1").digest());
  EXPECT_EQ(CacheKey("k").digest().size(), 64u);
}

TEST(CacheKey, ListsKeepOrderAndBoundaries) {
  EXPECT_NE(CacheKey("k").add_list("l", {"a", "b"}).digest(), CacheKey("k").add_list("l", {"b", "a"}).digest());
  EXPECT_NE(CacheKey("k").add_list("l", {"ab"}).digest(), CacheKey("k").add_list("l", {"a", "b"}).digest());
  EXPECT_NE(CacheKey("k").add_list("l", {}).add("l", "x").digest(),
            CacheKey("k").add_list("l", {"x"}).digest());
}

TEST(CacheKey, CarriesSchemaAndCujitVersionButNoToolOfItsOwn) {
  const std::string text = CacheKey("k").description();
  for (const char* field : {"key-schema=", "cujit="}) {
    EXPECT_NE(text.find(field), std::string::npos) << field << " in\n" << text;
  }
  // Tool identities belong to the recipes that run the tools.
  EXPECT_EQ(text.find("nvrtc="), std::string::npos) << text;
}

TEST(Sha256, KnownDigest) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace cujit
