// CacheKey: labelled, length-prefixed fields; the recipes built on it (compile_key,
// link_key) are tested field by field in test_compile_cache.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cache/content_digest.hpp"
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

// The digest memo (cache/content_digest.hpp) answers from a comparison of the whole bytes,
// never from where they are or what they start with: bytes changed in place, at the same
// address and size, anywhere (the fingerprint looks at a start, a middle and an end only),
// get the digest of what they hold now. Differential against SHA-256 taken each time.
TEST(ContentDigest, BytesChangedInPlaceGetTheirOwnDigest) {
  std::mt19937 random(7);
  std::string text(4096, 'x');
  for (char& c : text) c = static_cast<char>('a' + random() % 26);
  EXPECT_EQ(detail::content_digest(text), sha256_hex(text));
  for (int round = 0; round < 2000; ++round) {
    const char* before = text.data();
    text[random() % text.size()] = static_cast<char>('a' + random() % 26);
    ASSERT_EQ(text.data(), before);
    ASSERT_EQ(detail::content_digest(text), sha256_hex(text)) << "round " << round;
    ASSERT_EQ(detail::content_digest(text), sha256_hex(text)) << "round " << round << ", asked again";
  }
  // Below the memo's threshold, and at sizes around it, too.
  for (const std::size_t size : {std::size_t{0}, std::size_t{1}, detail::memo_min_bytes - 1, detail::memo_min_bytes,
                                 detail::memo_min_bytes + 1}) {
    const std::string bytes(size, 'q');
    EXPECT_EQ(detail::content_digest(bytes), sha256_hex(bytes)) << size;
  }
}

TEST(ContentDigest, RepeatsAreAnsweredFromTheMemoWithinItsBound) {
  const std::string text(8192, 'h');
  (void)detail::content_digest(text);
  const std::size_t hits = detail::content_digest_counts().hits;
  EXPECT_EQ(detail::content_digest(text), sha256_hex(text));
  EXPECT_EQ(detail::content_digest_counts().hits, hits + 1);
  // Distinct large items beyond the bound: the oldest go, the bytes held stay bounded, and
  // every answer is still the SHA-256 of its bytes.
  for (int i = 0; i < 12; ++i) {
    std::string big(detail::memo_max_item_bytes, static_cast<char>('A' + i));
    EXPECT_EQ(detail::content_digest(big), sha256_hex(big)) << i;
    EXPECT_LE(detail::content_digest_counts().bytes, detail::memo_max_bytes);
  }
  const std::string over(detail::memo_max_item_bytes + 1, 'z');
  EXPECT_EQ(detail::content_digest(over), sha256_hex(over));
  EXPECT_EQ(detail::content_digest(text), sha256_hex(text));
}

// Threads asking at once (a parallel build keys its sources on several threads), some the
// same texts, some texts of their own, while the bound evicts: every answer is the SHA-256
// of the bytes asked about (the TSan lane runs this too).
TEST(ContentDigest, ThreadsAskingAtOnceGetTheirOwnDigests) {
  std::vector<std::string> shared;
  for (int i = 0; i < 8; ++i) shared.emplace_back(2048 + i, static_cast<char>('a' + i));
  std::vector<std::string> expected;
  for (const std::string& text : shared) expected.push_back(sha256_hex(text));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::string own(detail::memo_max_item_bytes / 2, static_cast<char>('k' + t));
      for (int round = 0; round < 40; ++round) {
        const std::size_t which = static_cast<std::size_t>(round + t) % shared.size();
        if (detail::content_digest(shared[which]) != expected[which]) ++wrong;
        own[static_cast<std::size_t>(round) * 997 % own.size()] ^= 1;  // new bytes: a miss, a copy, evictions
        if (round % 8 == 0 && detail::content_digest(own) != sha256_hex(own)) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

// Texts of one size that differ only where the fingerprint does not look share a bucket: a
// new one past the bucket's bound is answered (by SHA-256) but not kept, so a lookup never
// compares more than the bound's candidates.
TEST(ContentDigest, TextsSharingAFingerprintAreBoundedPerBucket) {
  std::string text(4096, 'v');
  const std::size_t entries = detail::content_digest_counts().entries;
  for (int variant = 0; variant < 100; ++variant) {
    text.replace(100, 8, std::to_string(10000000 + variant));  // away from the sampled bytes
    ASSERT_EQ(detail::content_digest(text), sha256_hex(text)) << variant;
  }
  EXPECT_LE(detail::content_digest_counts().entries, entries + detail::memo_max_per_fingerprint);
}

}  // namespace
}  // namespace cujit
