// The remote tier (Redis) against a real redis-server that each test starts on a loopback
// port in a temporary directory and stops: hits across caches with separate disk
// directories, one build per key across a fleet of processes, a builder killed mid-build,
// and Redis failing in each way it can (killed, stopped, full, refusing the password,
// holding garbage). The remote tier never fails a build and never serves what it was not
// given. Without redis-server installed these tests skip saying so (ci/setup.sh installs it).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cache/disk_cache.hpp"
#include "cache/remote_cache.hpp"
#include "cache/remote_compression.hpp"
#include "cache/remote_signature.hpp"
#include "cache/remote_url.hpp"
#include "cujit/build_cache.hpp"
#include "cujit/error.hpp"
#include "support/cache_helpers.hpp"
#include "support/child_process.hpp"
#include "support/fixtures.hpp"
#include "support/redis_server.hpp"
#include "support/signing_keys.hpp"

namespace cujit {
namespace {
namespace fs = std::filesystem;
using test::has_warning;

// Skips only when redis-server is not installed; one that does not start is a failure.
#define CUJIT_REQUIRE_REDIS(server)                                                              \
  do {                                                                                           \
    if (!BuildCache::remote_built_in()) GTEST_SKIP() << "this cujit was built without hiredis";  \
    if (test::redis_server_program().empty()) GTEST_SKIP() << (server).problem();                \
    ASSERT_EQ((server).problem(), "");                                                           \
  } while (false)

CacheKey key_of(const std::string& name) { return CacheKey("remote-test").add("name", name); }

std::function<std::string()> constant(std::string payload) {
  return [payload] { return payload; };
}
std::function<std::string()> never() {
  return [] {
    ADD_FAILURE() << "built although the remote tier holds the entry";
    return std::string("never");
  };
}

// A trusted writer of the fleet: it signs what it stores with the suite's key and verifies
// what it reads with that key's public half.
CacheConfig remote_at(const fs::path& dir, const std::string& url) {
  CacheConfig config = test::disk_cache_at(dir);
  config.remote = url;
  config.remote_signing_key = test::fleet_signing_key().private_key;
  return config;
}

// The same as a process configured from the environment.
std::string signing_key_variable() {
  return "CUJIT_CACHE_REMOTE_SIGNING_KEY=" + test::fleet_signing_key().private_key.string();
}

// ---- the URL ------------------------------------------------------------------------------

TEST(RemoteUrl, ReadsEveryPart) {
  std::string problem;
  auto url = detail::parse_remote_url("redis://:s%40cret@cache.example:6380/2", problem);
  ASSERT_TRUE(url) << problem;
  EXPECT_EQ(url->host, "cache.example");
  EXPECT_EQ(url->port, 6380);
  EXPECT_EQ(url->db, 2);
  EXPECT_EQ(url->password, "s@cret");
  EXPECT_EQ(url->user, "");
  EXPECT_EQ(url->redacted(), "redis://:***@cache.example:6380/2");
  url = detail::parse_remote_url("redis://builder:pw@[::1]", problem);
  ASSERT_TRUE(url) << problem;
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->port, 6379);
  EXPECT_EQ(url->user, "builder");
  EXPECT_EQ(url->redacted(), "redis://builder:***@[::1]:6379");
  url = detail::parse_remote_url("redis://localhost", problem);
  ASSERT_TRUE(url) << problem;
  EXPECT_EQ(url->redacted(), "redis://localhost:6379");
}

TEST(RemoteUrl, RefusesWhatItCannotUse) {
  for (const char* bad : {"", "http://host:1", "rediss://host:6379", "redis://", "redis://host:0", "redis://host:65536",
                          "redis://host:port", "redis://host/db", "redis://[::1", "redis://:pw%zz@host"}) {
    std::string problem;
    EXPECT_FALSE(detail::parse_remote_url(bad, problem)) << bad;
    EXPECT_NE(problem, "") << bad;
  }
}

TEST(RemoteUrl, AnUnusableValueIsAUsageErrorThatNeverEchoesThePassword) {
  ASSERT_EQ(::setenv("CUJIT_CACHE_REMOTE", "redis://:hunter2@host:notaport", 1), 0);
  try {
    (void)CacheConfig::from_environment();
    ADD_FAILURE() << "accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(error.what()).find("CUJIT_CACHE_REMOTE"), std::string::npos) << error.what();
    EXPECT_EQ(std::string(error.what()).find("hunter2"), std::string::npos) << error.what();
  }
  ::unsetenv("CUJIT_CACHE_REMOTE");
}

TEST(RemoteCacheKeys, TheNamespaceNamesTheEntryFormatAndTheToolkit) {
  const std::string prefix = detail::remote_key_prefix();
  EXPECT_EQ(prefix.rfind("cujit:" + std::to_string(detail::entry_format_version) + ":", 0), 0u) << prefix;
  EXPECT_EQ(prefix.back(), ':');
  EXPECT_EQ(prefix.size(), std::string("cujit:1:").size() + 16 + 1) << prefix;
}

// ---- hits, and what a hit costs ------------------------------------------------------------

TEST(RemoteCache, HitsAcrossTwoCachesWithSeparateDiskDirectories) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  BuildCache first(remote_at(temp.path() / "a", server.url()));
  EXPECT_EQ(first.get_or_build(key_of("k"), constant("payload")), "payload");
  EXPECT_EQ(first.stats().remote_writes, 1u);
  BuildCache second(remote_at(temp.path() / "b", server.url()));
  CacheSource source{};
  EXPECT_EQ(second.get_or_build(key_of("k"), never(), &source), "payload");
  EXPECT_EQ(source, CacheSource::remote);
  EXPECT_EQ(second.stats().remote_hits, 1u);
  EXPECT_EQ(second.stats().builds, 0u);
  // The hit filled the second disk tier: a cache there without Redis hits on disk.
  BuildCache local(test::disk_cache_at(temp.path() / "b"));
  EXPECT_EQ(local.get_or_build(key_of("k"), never(), &source), "payload");
  EXPECT_EQ(source, CacheSource::disk);
}

TEST(RemoteCache, AHitIsOneGet) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  BuildCache(remote_at(temp.path() / "a", server.url())).put(key_of("k"), std::string(136 << 10, 'x'));
  ASSERT_EQ(server.command({"CONFIG", "RESETSTAT"}), "+OK");
  BuildCache other(remote_at(temp.path() / "b", server.url()));
  EXPECT_EQ(other.find(key_of("k")), std::string(136 << 10, 'x'));
  const std::string stats = server.command({"INFO", "commandstats"});
  EXPECT_NE(stats.find("cmdstat_get:calls=1,"), std::string::npos) << stats;
  // Nothing else: no STRLEN, EXISTS or second GET before the value comes.
  for (const char* other_command : {"cmdstat_strlen", "cmdstat_exists", "cmdstat_getrange", "cmdstat_set"}) {
    EXPECT_EQ(stats.find(other_command), std::string::npos) << stats;
  }
}

TEST(RemoteCache, AnEntryTtlIsSetOnlyWhenConfigured) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  CacheConfig with_ttl = remote_at(temp.path() / "a", server.url());
  with_ttl.remote_ttl = std::chrono::seconds(600);
  BuildCache(with_ttl).put(key_of("expiring"), "e");
  BuildCache(remote_at(temp.path() / "b", server.url())).put(key_of("kept"), "k");
  const std::string prefix = detail::remote_key_prefix();
  const std::string expiring = server.command({"PTTL", prefix + key_of("expiring").digest()});
  ASSERT_EQ(expiring.substr(0, 1), ":");
  EXPECT_GT(std::stoll(expiring.substr(1)), 0) << expiring;
  EXPECT_EQ(server.command({"PTTL", prefix + key_of("kept").digest()}), ":-1");
}

// ---- the remote is not trusted --------------------------------------------------------------

struct Garbage {
  const char* name;
  std::function<std::vector<std::string>(const std::string& value_key, const std::string& digest)> write;
};

void PrintTo(const Garbage& garbage, std::ostream* out) { *out << garbage.name; }

// Each garbage value for a reader that verifies signatures (a trusted fleet: every value
// that is not a signed one is refused as unverified; a reply that is not a string at all is
// unsound) and for one that opted into an unauthenticated tier (checked for damage only).
class HostileRemoteValue : public ::testing::TestWithParam<std::tuple<Garbage, bool>> {};

TEST_P(HostileRemoteValue, IsAMissCountedAndReplacedByTheBuild) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  const auto& [garbage, verifying] = GetParam();
  const std::string digest = key_of("victim").digest();
  const std::string value_key = detail::remote_key_prefix() + digest;
  const std::string reply = server.command(garbage.write(value_key, digest));
  ASSERT_FALSE(reply.empty() || reply[0] == '-') << reply;
  const auto config_at = [&](const fs::path& dir) {
    CacheConfig config = remote_at(dir, server.url());
    if (!verifying) {
      config.remote_signing_key.clear();
      config.remote_unauthenticated = true;
    }
    return config;
  };
  BuildCache cache(config_at(temp.path() / "a"));
  CacheSource source{};
  EXPECT_EQ(cache.get_or_build(key_of("victim"), constant("the real one"), &source), "the real one");
  EXPECT_EQ(source, CacheSource::built);
  const bool unsound_reply = std::string(garbage.name) == "a_list";
  if (verifying && !unsound_reply) {
    EXPECT_GE(cache.stats().remote_unverified, 1u);
    EXPECT_EQ(cache.stats().remote_corrupt, 0u);
  } else {
    EXPECT_GE(cache.stats().remote_corrupt, 1u);
    EXPECT_EQ(cache.stats().remote_unverified, 0u);
  }
  EXPECT_TRUE(has_warning(cache, "remote entry not used"));
  // A miss and a build, never a hit; its write replaced the bad value: a repair.
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_EQ(cache.stats().builds, 1u);
  EXPECT_EQ(cache.stats().remote_hits, 0u);
  EXPECT_EQ(cache.stats().remote_repairs, 1u);
  // The build wrote through: the next machine gets the sound entry.
  BuildCache next(config_at(temp.path() / "b"));
  EXPECT_EQ(next.get_or_build(key_of("victim"), never(), &source), "the real one");
  EXPECT_EQ(source, CacheSource::remote);
}

std::string entry_with_a_flipped_payload_byte(const std::string& digest) {
  std::string bytes = detail::encode_entry(digest, "forged payload");
  bytes.back() ^= 1;
  return bytes;
}

INSTANTIATE_TEST_SUITE_P(
    Values, HostileRemoteValue,
    ::testing::Combine(::testing::Values(
        Garbage{"text", [](const std::string& k, const std::string&) { return std::vector<std::string>{"SET", k, "garbage"}; }},
        Garbage{"empty", [](const std::string& k, const std::string&) { return std::vector<std::string>{"SET", k, ""}; }},
        Garbage{"another_keys_entry",
                [](const std::string& k, const std::string&) {
                  return std::vector<std::string>{"SET", k, detail::encode_entry(std::string(64, 'e'), "other")};
                }},
        Garbage{"checksum_mismatch",
                [](const std::string& k, const std::string& digest) {
                  return std::vector<std::string>{"SET", k, entry_with_a_flipped_payload_byte(digest)};
                }},
        Garbage{"truncated",
                [](const std::string& k, const std::string& digest) {
                  const std::string bytes = detail::encode_entry(digest, "a payload cut short");
                  return std::vector<std::string>{"SET", k, bytes.substr(0, bytes.size() - 3)};
                }},
        Garbage{"a_list", [](const std::string& k, const std::string&) { return std::vector<std::string>{"RPUSH", k, "x"}; }}),
        ::testing::Bool()),
    [](const auto& test_case) {
      return std::string(std::get<0>(test_case.param).name) +
             (std::get<1>(test_case.param) ? "_verifying" : "_unauthenticated");
    });

// ---- compression -----------------------------------------------------------------------------

// A payload of `size` bytes, compressible or not: random letters from an alphabet of
// `letters` (1: one letter repeated; 256: incompressible).
std::string payload_of(std::mt19937& random, std::size_t size, unsigned letters) {
  std::string out(size, '\0');
  for (char& byte : out) byte = static_cast<char>(random() % letters);
  return out;
}

// Every entry, of any size and compressibility, comes back from compress_value and
// inflate_value as it went in; compression is used only when it makes the value smaller.
TEST(RemoteCompression, EveryEntryRoundTripsAndIsCompressedOnlyWhenSmaller) {
  ASSERT_EQ(detail::compression_unavailable(), "") << "zlib1g-dev and libz.so.1 (ci/setup.sh)";
  std::mt19937 random(std::random_device{}());
  for (int round = 0; round < 200; ++round) {
    const unsigned letters = std::vector<unsigned>{1, 4, 26, 256}[random() % 4];
    const std::string entry = detail::encode_entry(std::string(64, 'a'), payload_of(random, random() % 70000, letters));
    const std::string value = detail::compress_value(entry);
    if (!detail::is_compressed_value(value)) {
      EXPECT_EQ(value, entry);
      EXPECT_EQ(letters, 256u) << "only incompressible entries are stored as they are";
      continue;
    }
    EXPECT_LT(value.size(), entry.size());
    std::string problem;
    EXPECT_EQ(detail::inflate_value(value, problem), entry) << problem;
  }
}

// A compressed value damaged anywhere (a byte changed, cut at any length, a declared size
// changed) inflates to exactly its entry or is refused with a reason; never more than the
// declared size, never a crash.
TEST(RemoteCompression, ADamagedValueIsRefusedNeverInflatedPastItsBounds) {
  std::mt19937 random(std::random_device{}());
  const std::string entry = detail::encode_entry(std::string(64, 'b'), payload_of(random, 50000, 8));
  const std::string value = detail::compress_value(entry);
  ASSERT_TRUE(detail::is_compressed_value(value));
  for (int round = 0; round < 2000; ++round) {
    std::string damaged = value;
    switch (round % 3) {
      case 0: damaged[random() % damaged.size()] ^= static_cast<char>(1 + random() % 255); break;
      case 1: damaged.resize(random() % damaged.size()); break;
      default: damaged[8 + random() % 8] = static_cast<char>(random()); break;  // the declared size
    }
    std::string problem;
    const std::optional<std::string> inflated = detail::inflate_value(damaged, problem);
    if (inflated) {
      EXPECT_EQ(detail::decode_entry(std::string(64, 'b'), *inflated).payload.has_value(), *inflated == entry);
    } else {
      EXPECT_FALSE(problem.empty());
    }
  }
  std::string huge = value.substr(0, 16);  // the header alone, declaring 2^63 bytes
  huge[15] = '\x80';
  std::string problem;
  EXPECT_FALSE(detail::inflate_value(huge + "x", problem));
  EXPECT_NE(problem.find("more than zlib can expand to"), std::string::npos) << problem;
}

// Through Redis: a compressible payload is stored compressed (inside the signature, which
// covers the compressed bytes), the bytes saved are counted, another machine reads it; an
// entry a cujit before compression wrote (signed, uncompressed) is still read as a hit.
TEST(RemoteCompression, ValuesAreStoredCompressedAndOldUncompressedOnesAreStillRead) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  std::mt19937 random(std::random_device{}());
  const std::string payload = payload_of(random, 100000, 4);
  BuildCache writer(remote_at(temp.path() / "w", server.url()));
  writer.put(key_of("compressible"), payload);
  const std::string stored = server.command({"GET", detail::remote_key_prefix() + key_of("compressible").digest()});
  const std::size_t entry_at = sizeof detail::signed_value_magic + 4 + detail::ed25519_signature_size;
  ASSERT_GT(stored.size(), entry_at);
  EXPECT_TRUE(detail::is_compressed_value(std::string_view(stored).substr(entry_at)));
  const std::size_t entry_size = detail::encode_entry(key_of("compressible").digest(), payload).size();
  EXPECT_EQ(writer.stats().remote_bytes_saved, entry_size - (stored.size() - entry_at));
  EXPECT_LT(stored.size(), payload.size() / 2);
  CacheSource source{};
  BuildCache reader(remote_at(temp.path() / "r", server.url()));
  EXPECT_EQ(reader.get_or_build(key_of("compressible"), never(), &source), payload);
  EXPECT_EQ(source, CacheSource::remote);

  std::string problem;
  const std::optional<detail::SigningKey> signer =
      detail::SigningKey::load(test::fleet_signing_key().private_key, problem);
  ASSERT_TRUE(signer) << problem;
  const std::string old_key = detail::remote_key_prefix() + key_of("old").digest();
  ASSERT_EQ(server.command({"SET", old_key,
                            detail::sign_value(*signer, old_key, detail::encode_entry(key_of("old").digest(), "old one"))}),
            "+OK");
  EXPECT_EQ(reader.get_or_build(key_of("old"), never(), &source), "old one");
  EXPECT_EQ(source, CacheSource::remote);
  EXPECT_EQ(reader.stats().remote_corrupt + reader.stats().remote_unverified, 0u);
}

// ---- Redis failing ---------------------------------------------------------------------------

TEST(RemoteCache, AWrongPasswordNeverFailsABuild) {
  test::RedisServer server({"--requirepass", "right"});
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  BuildCache cache(remote_at(temp.path() / "a", server.url("wrong")));
  EXPECT_EQ(cache.get_or_build(key_of("a"), constant("a")), "a");
  EXPECT_EQ(cache.get_or_build(key_of("b"), constant("b")), "b");
  const CacheStats stats = cache.stats();
  EXPECT_EQ(stats.builds, 2u);
  EXPECT_EQ(stats.remote_errors, 1u);  // then left alone for the back-off
  EXPECT_GE(stats.remote_skipped, 1u);
  EXPECT_TRUE(has_warning(cache, "authentication refused"));
  for (const std::string& warning : cache.warnings()) EXPECT_EQ(warning.find("wrong"), std::string::npos) << warning;
  // No password at all: NOAUTH, the same.
  BuildCache anonymous(remote_at(temp.path() / "b", server.url()));
  EXPECT_EQ(anonymous.get_or_build(key_of("c"), constant("c")), "c");
  EXPECT_TRUE(has_warning(anonymous, "NOAUTH"));
}

TEST(RemoteCache, TheRightPasswordAndADatabaseAreUsed) {
  test::RedisServer server({"--requirepass", "right"});
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  const std::string url = server.url("right") + "/3";
  BuildCache(remote_at(temp.path() / "a", url)).put(key_of("k"), "in db 3");
  CacheSource source{};
  BuildCache other(remote_at(temp.path() / "b", url));
  EXPECT_EQ(other.get_or_build(key_of("k"), never(), &source), "in db 3");
  EXPECT_EQ(source, CacheSource::remote);
  // The value and its recipe index (docs/cache.md, "Explaining misses").
  EXPECT_NE(server.command({"INFO", "keyspace"}, "right").find("db3:keys=2"), std::string::npos);
  EXPECT_EQ(other.remote_url(), "redis://:***@127.0.0.1:" + std::to_string(server.port()) + "/3");
}

TEST(RemoteCache, RedisKilledMidRunIsAMissWithAWarningAndTheBuildsGoOn) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  BuildCache cache(remote_at(temp.path() / "a", server.url()));
  EXPECT_EQ(cache.get_or_build(key_of("before"), constant("before")), "before");
  server.kill(SIGKILL);
  for (const char* name : {"after-1", "after-2", "after-3"}) {
    EXPECT_EQ(cache.get_or_build(key_of(name), constant(name)), name);
  }
  const CacheStats stats = cache.stats();
  EXPECT_EQ(stats.builds, 4u);
  EXPECT_EQ(stats.remote_errors, 1u);  // the first call after the kill; the rest skipped
  EXPECT_GE(stats.remote_skipped, 2u);
  EXPECT_TRUE(has_warning(cache, "left alone for 5000 ms"));
  std::string why;
  EXPECT_FALSE(cache.remote_reachable(&why));
  EXPECT_NE(why, "");
}

TEST(RemoteCache, AStoppedRedisCostsOneTimeoutThenIsLeftAlone) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  CacheConfig config = remote_at(temp.path() / "a", server.url());
  config.remote_timeout = std::chrono::milliseconds(30);
  BuildCache cache(config);
  ASSERT_TRUE(cache.remote_reachable());
  server.kill(SIGSTOP);  // accepts connections (the kernel does), never answers
  for (const char* name : {"a", "b", "c"}) EXPECT_EQ(cache.get_or_build(key_of(name), constant(name)), name);
  server.kill(SIGCONT);
  const CacheStats stats = cache.stats();
  EXPECT_EQ(stats.builds, 3u);
  EXPECT_EQ(stats.remote_errors, 1u);
  EXPECT_GE(stats.remote_skipped, 2u);
}

// A deadline of 0 (or less) ends every call before its reply: the tier is refused with a
// warning naming the setting, and nothing is sent to Redis.
TEST(RemoteCache, ATimeoutBelowOneMillisecondIsRefusedWithAWarning) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  for (const long long timeout : {0LL, -5LL}) {
    CacheConfig config = remote_at(temp.path() / std::to_string(timeout), server.url());
    config.remote_timeout = std::chrono::milliseconds(timeout);
    BuildCache cache(config);
    EXPECT_EQ(cache.remote_url(), "") << timeout;
    EXPECT_TRUE(has_warning(cache, "remote_timeout is " + std::to_string(timeout) + " ms")) << timeout;
    EXPECT_EQ(cache.get_or_build(key_of("t"), constant("t")), "t");
    EXPECT_EQ(server.command({"DBSIZE"}), ":0") << timeout;
  }
}

// A host name is resolved by cujit within the timeout, then connected to by address: a
// name that resolves (localhost) is used like its address; one that never resolves (.invalid,
// RFC 6761) is one failed call with a warning naming it, resolved or timed out, and the
// builds go on.
TEST(RemoteCache, AHostNameIsResolvedWithinTheTimeout) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  const std::string by_name = "redis://localhost:" + std::to_string(server.port());
  CacheConfig config = remote_at(temp.path() / "a", by_name);
  config.remote_timeout = std::chrono::milliseconds(1000);
  BuildCache(config).put(key_of("named"), "by name");
  CacheConfig other = remote_at(temp.path() / "b", by_name);
  other.remote_timeout = std::chrono::milliseconds(1000);
  CacheSource source{};
  EXPECT_EQ(BuildCache(other).get_or_build(key_of("named"), never(), &source), "by name");
  EXPECT_EQ(source, CacheSource::remote);
  BuildCache nowhere(remote_at(temp.path() / "c", "redis://cujit-test-host.invalid:6379"));
  for (const char* name : {"x", "y"}) EXPECT_EQ(nowhere.get_or_build(key_of(name), constant(name)), name);
  EXPECT_EQ(nowhere.stats().remote_errors, 1u);
  EXPECT_TRUE(has_warning(nowhere, "cujit-test-host.invalid"));
}

// A server that answers the connection's first command (INFO) at once, then trickles its
// reply to the next one a byte every 20 ms: every read gets a byte well within the socket
// timeout, so only a deadline on the call as a whole ends the lookup (issue 32: such a
// server held a lookup 9.7 s). It trickles for at most 20 s, so a client without the
// deadline gets a whole (unsigned) value late instead of hanging the test.
std::string all_warnings(const BuildCache& cache) {
  std::string text;
  for (const std::string& warning : cache.warnings()) text += warning + "\n";
  return text;
}

// A fake server's loopback side, shared by the fakes below: a listener on a free port, one
// thread that serves it, and the stop (the flag, the listener shut so that accept returns,
// the thread joined). A derived fake calls stop_serving() first in its own destructor, so
// the thread never runs on its members once they are gone.
class LoopbackServer {
 public:
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  const std::string& problem() const { return problem_; }

 protected:
  LoopbackServer() = default;
  ~LoopbackServer() {
    stop_serving();
    ::close(listener_);
  }
  // Listens, then runs `serve` on the thread; problem() says why not.
  void start(std::function<void()> serve) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
        ::listen(listener_, 8) != 0 || ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
      problem_ = std::string("cannot listen on loopback: ") + std::strerror(errno);
      return;
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread(std::move(serve));
  }
  void stop_serving() {
    stop_ = true;
    if (listener_ >= 0) ::shutdown(listener_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
  }

  int listener_ = -1;
  std::atomic<bool> stop_{false};

 private:
  int port_ = 0;
  std::string problem_;
  std::thread thread_;
};

class TricklingServer : public LoopbackServer {
 public:
  TricklingServer() { start([this] { serve(); }); }
  ~TricklingServer() { stop_serving(); }
  TricklingServer(const TricklingServer&) = delete;
  TricklingServer& operator=(const TricklingServer&) = delete;

 private:
  void serve() {
    const int client = ::accept(listener_, nullptr, nullptr);
    if (client < 0) return;
    char buffer[4096];
    auto reply = [&](std::string_view text) { return ::send(client, text.data(), text.size(), MSG_NOSIGNAL) >= 0; };
    if (::recv(client, buffer, sizeof buffer, 0) > 0 && reply("$0\r\n\r\n") && ::recv(client, buffer, sizeof buffer, 0) > 0) {
      constexpr int bytes = 1000;
      bool sent = reply("$" + std::to_string(bytes) + "\r\n");
      for (int i = 0; sent && i < bytes && !stop_; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        sent = reply("x");
      }
      if (sent) reply("\r\n");
    }
    ::close(client);
  }

};

TEST(RemoteCache, AReplyThatTricklesInEndsAtTheCallsDeadline) {
  if (!BuildCache::remote_built_in()) GTEST_SKIP() << "this cujit was built without hiredis";
  TricklingServer server;
  ASSERT_EQ(server.problem(), "");
  test::TempDir temp;
  CacheConfig config = remote_at(temp.path() / "a", server.url());
  config.remote_timeout = std::chrono::milliseconds(200);
  BuildCache cache(config);
  CacheSource source{};
  EXPECT_EQ(cache.get_or_build(key_of("trickled"), constant("built"), &source), "built");
  EXPECT_EQ(source, CacheSource::built);
  EXPECT_EQ(cache.stats().remote_errors, 1u);
  EXPECT_EQ(cache.stats().remote_unverified, 0u);
  EXPECT_TRUE(has_warning(cache, "GET")) << all_warnings(cache);
  EXPECT_TRUE(has_warning(cache, "no whole answer within 200 ms")) << all_warnings(cache);
}

TEST(RemoteCache, AFullRedisRefusesWritesAndTheBuildsGoOn) {
  test::RedisServer server({"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"});
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  BuildCache cache(remote_at(temp.path() / "a", server.url()));
  // Incompressible: compressed, 3 MiB of one letter would fit in 2 MB.
  std::mt19937 random(std::random_device{}());
  const std::string big = payload_of(random, 3 << 20, 256);
  for (const char* name : {"first", "second", "third"}) {
    EXPECT_EQ(cache.get_or_build(key_of(name), constant(big + name)), big + name);
  }
  EXPECT_GE(cache.stats().remote_write_failures, 1u);
  EXPECT_TRUE(has_warning(cache, "OOM"));
  EXPECT_EQ(cache.stats().builds, 3u);
}

// The lock's own calls, on a RemoteCache over a fresh redis-server.
class RemoteCacheLock : public ::testing::Test {
 protected:
  void SetUp() override {
    CUJIT_REQUIRE_REDIS(server_);
    std::string problem;
    const auto url = detail::parse_remote_url(server_.url(), problem);
    ASSERT_TRUE(url) << problem;
    remote_.emplace(detail::RemoteSettings{*url});
  }

  test::RedisServer server_;
  std::optional<detail::RemoteCache> remote_;
};

TEST_F(RemoteCacheLock, IsDeletedOnlyByItsHolder) {
  detail::RemoteCache& remote = *remote_;
  const std::string flight(64, 'f');
  std::string token, other, problem;
  ASSERT_EQ(remote.lock(flight, std::chrono::milliseconds(10000), token, problem), detail::RemoteOutcome::done) << problem;
  EXPECT_EQ(remote.lock(flight, std::chrono::milliseconds(10000), other, problem), detail::RemoteOutcome::missing);
  // It expired and another machine took it: the first holder's release leaves it.
  ASSERT_EQ(server_.command({"SET", remote.lock_key(flight), "another machine"}), "+OK");
  EXPECT_EQ(remote.unlock(flight, token, std::chrono::steady_clock::now() + std::chrono::seconds(10)), detail::RemoteOutcome::missing);
  EXPECT_EQ(server_.command({"GET", remote.lock_key(flight)}), "another machine");
  ASSERT_EQ(server_.command({"SET", remote.lock_key(flight), token}), "+OK");
  EXPECT_EQ(remote.unlock(flight, token, std::chrono::steady_clock::now() + std::chrono::seconds(10)), detail::RemoteOutcome::done);
  EXPECT_EQ(server_.command({"EXISTS", remote.lock_key(flight)}), ":0");
}

TEST_F(RemoteCacheLock, IsExtendedOnlyByItsHolder) {
  detail::RemoteCache& remote = *remote_;
  const std::string flight(64, 'e');
  std::string token, problem;
  ASSERT_EQ(remote.lock(flight, std::chrono::milliseconds(1000), token, problem), detail::RemoteOutcome::done) << problem;
  // Extended to a TTL far above the one it was taken with (PTTL: milliseconds left).
  ASSERT_EQ(remote.renew(flight, token, std::chrono::milliseconds(600000), problem), detail::RemoteOutcome::done)
      << problem;
  const std::string left = server_.command({"PTTL", remote.lock_key(flight)});
  ASSERT_EQ(left.substr(0, 1), ":") << left;
  EXPECT_GT(std::stoll(left.substr(1)), 1000) << left;
  // Another machine's lock (ours expired and it took it) is neither extended nor touched.
  ASSERT_EQ(server_.command({"SET", remote.lock_key(flight), "another machine", "PX", "5000"}), "+OK");
  EXPECT_EQ(remote.renew(flight, token, std::chrono::milliseconds(600000), problem), detail::RemoteOutcome::missing);
  const std::string theirs = server_.command({"PTTL", remote.lock_key(flight)});
  ASSERT_EQ(theirs.substr(0, 1), ":") << theirs;
  EXPECT_LE(std::stoll(theirs.substr(1)), 5000) << theirs;
  // A lock that is gone is not brought back.
  ASSERT_EQ(server_.command({"DEL", remote.lock_key(flight)}), ":1");
  EXPECT_EQ(remote.renew(flight, token, std::chrono::milliseconds(600000), problem), detail::RemoteOutcome::missing);
  EXPECT_EQ(server_.command({"EXISTS", remote.lock_key(flight)}), ":0");
}

// ---- the lock when Redis is in trouble (issue 32) ---------------------------------------------

// Waits (bounded) until `flag` is set.
bool until_true(const std::atomic<bool>& flag) {
  for (int i = 0; i < 4000 && !flag; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return flag;
}

// Waits (bounded) until `cache` counts a wait for another machine's build.
bool waits_for_a_machine(const BuildCache& cache) {
  for (int i = 0; i < 4000; ++i) {
    if (cache.stats().remote_waits > 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

// The builder's write to Redis times out (CLIENT PAUSE WRITE while it stores): its value
// connection goes into the back-off, but its release does not wait that out, nor the
// lock's TTL (10 minutes here): it is retried until Redis answers, and the waiter, whose
// own bound is 30 s, takes over then instead of timing out.
TEST(RemoteCacheFleetLock, AWriteThatTimesOutStillReleasesTheLockWhenRedisAnswers) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  CacheConfig builder_config = remote_at(temp.path() / "builder", server.url());
  builder_config.remote_lock_ttl = std::chrono::minutes(10);
  CacheConfig waiter_config = remote_at(temp.path() / "waiter", server.url());
  waiter_config.remote_lock_ttl = std::chrono::minutes(10);
  waiter_config.lock_timeout = std::chrono::seconds(30);
  waiter_config.remote_timeout = std::chrono::milliseconds(1000);  // its polls never time out under load
  BuildCache builder(builder_config), waiter(waiter_config);
  std::atomic<bool> holding{false};
  std::thread building([&] {
    (void)builder.get_or_build(key_of("paused"), [&] {
      holding = true;  // the builder holds the fleet lock now
      EXPECT_TRUE(waits_for_a_machine(waiter));
      // Writes wait 1.5 s in Redis, the builder's calls 500 ms (the default): its SET and
      // its first release time out.
      EXPECT_EQ(server.command({"CLIENT", "PAUSE", "1500", "WRITE"}), "+OK");
      return std::string("built");
    });
  });
  EXPECT_TRUE(until_true(holding));
  CacheSource source{};
  EXPECT_EQ(waiter.get_or_build(key_of("paused"), constant("built"), &source), "built");
  building.join();
  // The value whose SET timed out is written before the lock is released: the waiter
  // reads it, never builds the key again.
  EXPECT_EQ(source, CacheSource::remote);
  EXPECT_EQ(waiter.stats().builds, 0u);
  EXPECT_GE(builder.stats().remote_errors, 1u);  // the write that timed out
  EXPECT_EQ(waiter.stats().remote_lock_timeouts, 0u);
  EXPECT_EQ(waiter.stats().remote_waits, 1u);
  EXPECT_FALSE(has_warning(waiter, "held its lock for more than"));
}

// Waits (bounded, 5 s) until `key` is gone from `server`.
bool gone_soon(const test::RedisServer& server, const std::string& key) {
  for (int i = 0; i < 1000; ++i) {
    if (server.command({"EXISTS", key}) == ":0") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

// A lock request that gets no answer in time (Redis stopped) is not "not taken": Redis runs
// the SET NX when it goes on, and the lock would be held by nobody for its TTL (a minute
// here), every machine waiting for it. The requester releases it with its token once Redis
// answers.
TEST_F(RemoteCacheLock, ARequestWithoutAnAnswerIsReleasedWhenRedisAnswers) {
  detail::RemoteCache& remote = *remote_;
  const std::string flight(64, 'n');
  std::string token, problem;
  // Connected before Redis stops, so that the SET NX is sent (and run later), not its connect.
  ASSERT_EQ(remote.stored("connected", problem), detail::RemoteOutcome::missing) << problem;
  server_.kill(SIGSTOP);
  EXPECT_EQ(remote.lock(flight, std::chrono::minutes(1), token, problem), detail::RemoteOutcome::unavailable);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  server_.kill(SIGCONT);
  EXPECT_TRUE(gone_soon(server_, remote.lock_key(flight))) << "the lock is held by nobody";
  // And a lock another holds now is left to it.
  ASSERT_EQ(server_.command({"SET", remote.lock_key(flight), "another machine"}), "+OK");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(server_.command({"GET", remote.lock_key(flight)}), "another machine");
}

// Values whose SET got no answer while Redis was stopped are written before the process's
// lock is released, so waiters find the value, not a released lock and no value: only the
// newest value of a key, and never one of a key removed meanwhile (a bad value must not come
// back), nor a recipe index (it merges what other machines added).
TEST_F(RemoteCacheLock, UnansweredValuesAreWrittenBeforeTheReleaseNewestOnlyAndNeverAfterTheirRemoval) {
  detail::RemoteCache& remote = *remote_;
  const std::string flight(64, 'w');
  std::string token, problem;
  ASSERT_EQ(remote.lock(flight, std::chrono::minutes(1), token, problem), detail::RemoteOutcome::done) << problem;
  server_.kill(SIGSTOP);
  EXPECT_EQ(remote.put("kept", "older", problem), detail::RemoteOutcome::unavailable);
  EXPECT_EQ(remote.put("kept", "newest", problem), detail::RemoteOutcome::skipped);
  EXPECT_EQ(remote.put("removed", "bad", problem), detail::RemoteOutcome::skipped);
  EXPECT_EQ(remote.put("recipes:index", "merged", problem), detail::RemoteOutcome::skipped);
  (void)remote.remove("removed", problem);  // not sent (the back-off): forgotten all the same
  server_.kill(SIGCONT);
  EXPECT_EQ(remote.unlock(flight, token, std::chrono::steady_clock::now() + std::chrono::minutes(1)), detail::RemoteOutcome::done);
  EXPECT_EQ(server_.command({"EXISTS", remote.lock_key(flight)}), ":0");
  std::string payload;
  EXPECT_EQ(remote.get("kept", payload, problem), detail::RemoteOutcome::done) << problem;
  EXPECT_EQ(payload, "newest");
  EXPECT_EQ(server_.command({"EXISTS", remote.value_key("removed")}), ":0");
  EXPECT_EQ(server_.command({"EXISTS", remote.value_key("recipes:index")}), ":0");
}

// A TCP proxy in front of a real Redis that holds each chunk of Redis' replies for a set
// delay before passing it on: a Redis that answers every command, just slower (within the
// client's timeout, so no call fails).
class DelayingProxy : public LoopbackServer {
 public:
  explicit DelayingProxy(int redis_port) : redis_port_(redis_port) { start([this] { accept_all(); }); }
  ~DelayingProxy() {
    stop_serving();
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      for (const int fd : sockets_) ::shutdown(fd, SHUT_RDWR);
    }
    for (std::thread& thread : forwarders_) thread.join();
    for (const int fd : sockets_) ::close(fd);
  }
  DelayingProxy(const DelayingProxy&) = delete;
  DelayingProxy& operator=(const DelayingProxy&) = delete;
  void delay_replies(std::chrono::milliseconds delay) { delay_ms_ = static_cast<int>(delay.count()); }

 private:
  static sockaddr_in loopback(int port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    return address;
  }
  void accept_all() {
    while (!stop_) {
      const int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0) return;
      const int redis = ::socket(AF_INET, SOCK_STREAM, 0);
      const sockaddr_in address = loopback(redis_port_);
      if (redis < 0 || ::connect(redis, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        ::close(client);
        if (redis >= 0) ::close(redis);
        continue;
      }
      const std::lock_guard<std::mutex> lock(mutex_);
      sockets_.insert(sockets_.end(), {client, redis});
      forwarders_.emplace_back([this, client, redis] { forward(client, redis, false); });
      forwarders_.emplace_back([this, client, redis] { forward(redis, client, true); });
    }
  }
  void forward(int from, int to, bool delayed) {
    char buffer[65536];
    for (;;) {
      const ssize_t got = ::recv(from, buffer, sizeof buffer, 0);
      if (got <= 0) break;
      if (delayed) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_.load()));
      if (::send(to, buffer, static_cast<std::size_t>(got), MSG_NOSIGNAL) != got) break;
    }
    ::shutdown(to, SHUT_WR);
  }

  int redis_port_;
  std::atomic<int> delay_ms_{0};
  std::mutex mutex_;
  std::vector<int> sockets_;
  std::vector<std::thread> forwarders_;
};

// However many values a builder kept unwritten, its release holds the caller (and the lock
// mutex) for a bounded time: with Redis answering every SET within the timeout but slowly,
// the release writes what its budget allows, leaves the lock held, and the releaser thread
// writes the rest before it deletes the lock, so a waiter still never finds a released
// lock without the values (issue 32's review: the release took one timeout per kept value).
// A value removed (as bad) while a release has it in hand is never written after all.
TEST(RemoteCacheFleetLock, AReleaseHoldsItsCallerABoundedTimeHoweverManyValuesAreKept) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  DelayingProxy proxy(server.port());
  ASSERT_EQ(proxy.problem(), "");
  std::string problem;
  const auto url = detail::parse_remote_url(proxy.url(), problem);
  ASSERT_TRUE(url) << problem;
  detail::RemoteSettings settings{*url};
  settings.timeout = std::chrono::milliseconds(1000);
  std::optional<detail::RemoteCache> cache;
  detail::RemoteCache& remote = cache.emplace(settings);
  const std::string flight(64, 'b');
  std::string token;
  ASSERT_EQ(remote.lock(flight, std::chrono::minutes(1), token, problem), detail::RemoteOutcome::done) << problem;
  // The lock's own connection, connected now: the release's first SET needs no handshake.
  ASSERT_EQ(remote.renew(flight, token, std::chrono::minutes(1), problem), detail::RemoteOutcome::done) << problem;
  server.kill(SIGSTOP);
  constexpr int kept = 10, removed = 8;
  for (int i = 0; i < kept; ++i) (void)remote.put("value-" + std::to_string(i), "bytes " + std::to_string(i), problem);
  server.kill(SIGCONT);  // value-0's SET, sent before the stop, runs now
  // Each SET answered after 400 ms: ten of them would hold the release 4 s; its budget is
  // two timeouts (2 s), and it starts no SET after that.
  proxy.delay_replies(std::chrono::milliseconds(400));
  const auto exists = [&](int i) {
    return server.command({"EXISTS", remote.value_key("value-" + std::to_string(i))}) == ":1";
  };
  detail::RemoteOutcome released{};
  int by_the_release = 0;
  bool lock_held_after = false;
  std::thread releasing([&] {
    released = remote.unlock(flight, token, std::chrono::steady_clock::now() + std::chrono::minutes(1));
    for (int i = 1; i < kept; ++i) by_the_release += exists(i);
    lock_held_after = server.command({"EXISTS", remote.lock_key(flight)}) == ":1";
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // the release is writing value-1 or -2
  (void)remote.remove("value-" + std::to_string(removed), problem);
  releasing.join();
  EXPECT_EQ(released, detail::RemoteOutcome::unavailable);
  EXPECT_GE(by_the_release, 1);
  EXPECT_LT(by_the_release, kept - 2);
  EXPECT_TRUE(lock_held_after) << "released before its values were written";
  // The releaser thread writes the rest, then releases the lock; a process ending now (the
  // cache destroyed) waits for that, as for any release under way.
  const std::string lock_key = remote.lock_key(flight);
  std::vector<std::string> value_keys;
  for (int i = 0; i < kept; ++i) value_keys.push_back(remote.value_key("value-" + std::to_string(i)));
  cache.reset();
  EXPECT_EQ(server.command({"EXISTS", lock_key}), ":0") << "the lock was left to its TTL";
  for (int i = 0; i < kept; ++i) {
    EXPECT_EQ(server.command({"EXISTS", value_keys[static_cast<std::size_t>(i)]}), i != removed ? ":1" : ":0")
        << "value-" << i;
  }
}

// A process that ends right after its build (one compile, the CLI) while Redis is stopped:
// its write and its release time out, and its cache waits for the release (up to the
// back-off) before it is gone, so the lock is deleted once Redis answers, not left to its
// TTL (a minute here).
TEST(RemoteCacheFleetLock, AProcessEndingWithItsReleasePendingReleasesItWhenRedisAnswers) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  const fs::path mark = temp.path() / "building", go = temp.path() / "go";
  test::RunningChild builder({CUJIT_FLEET_CHILD, "0", "1", "10", mark.string(), "until=" + go.string()},
                             {"CUJIT_CACHE_DIR=" + (temp.path() / "a").string(), "CUJIT_CACHE_REMOTE=" + server.url(),
                              "CUJIT_CACHE_REMOTE_LOCK_MS=60000", signing_key_variable()});
  for (int i = 0; i < 2000 && !fs::exists(mark); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(fs::exists(mark)) << "the builder never started its build";
  const std::string lock_key = detail::remote_key_prefix() + "lock:" + CacheKey("fleet-test").add("name", "key-0").digest();
  ASSERT_EQ(server.command({"EXISTS", lock_key}), ":1");
  server.kill(SIGSTOP);
  std::ofstream(go) << "go\n";  // the build ends; its write and release time out (50 ms)
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  server.kill(SIGCONT);
  const test::ChildResult result = builder.finish();
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("fleet builds=1 "), std::string::npos) << result.output;
  EXPECT_TRUE(gone_soon(server, lock_key)) << "the lock was left to its TTL";
}

// A Redis user without scripting (EVAL refused): the lock is still extended while the
// build runs (so the other machine waits, one build) and released when it ends (the lock
// key is gone at once, not at its TTL), by GET then PEXPIRE / DEL, with one warning.
TEST(RemoteCacheFleetLock, WithoutEvalTheLockIsStillExtendedAndReleased) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  ASSERT_EQ(server.command({"ACL", "SETUSER", "noscripts", "on", ">pw", "~*", "&*", "+@all", "-@scripting"}), "+OK");
  const std::string url = "redis://noscripts:pw@127.0.0.1:" + std::to_string(server.port());
  // Renewed every 500 ms; calls get a second, so that a loaded machine cannot miss one.
  CacheConfig builder_config = remote_at(temp.path() / "builder", url);
  builder_config.remote_lock_ttl = std::chrono::milliseconds(1500);
  builder_config.remote_timeout = std::chrono::milliseconds(1000);
  CacheConfig waiter_config = remote_at(temp.path() / "waiter", url);
  waiter_config.lock_timeout = std::chrono::seconds(60);
  waiter_config.remote_timeout = std::chrono::milliseconds(1000);
  BuildCache builder(builder_config), waiter(waiter_config);
  std::atomic<bool> holding{false};
  const std::string lock_key = detail::remote_key_prefix() + "lock:" + key_of("long").digest();
  std::thread building([&] {
    (void)builder.get_or_build(key_of("long"), [&] {
      holding = true;
      EXPECT_TRUE(waits_for_a_machine(waiter));
      // Three TTLs: only renewals keep the lock.
      std::this_thread::sleep_for(std::chrono::milliseconds(4500));
      return std::string("built once");
    });
    // Released at once, not left to expire.
    EXPECT_EQ(server.command({"EXISTS", lock_key}), ":0");
  });
  EXPECT_TRUE(until_true(holding));
  CacheSource source{};
  EXPECT_EQ(waiter.get_or_build(key_of("long"), never(), &source), "built once");
  building.join();
  EXPECT_EQ(source, CacheSource::remote);
  EXPECT_EQ(builder.stats().builds + waiter.stats().builds, 1u);
  std::size_t warned = 0;
  for (const std::string& warning : builder.warnings()) warned += warning.find("EVAL") != std::string::npos;
  EXPECT_EQ(warned, 1u);
  EXPECT_TRUE(has_warning(builder, "NOPERM"));
}

// A value that verifies but that its caller cannot decode (drop()) is deleted from Redis
// by a writer, so no other machine meets it again (the next one misses and builds); a
// reader leaves it to a writer.
TEST(RemoteCacheRepair, AnUndecodableValueIsDeletedByAWriterSoTheNextMachineBuildsIt) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  BuildCache(remote_at(temp.path() / "old", server.url())).put(key_of("undecodable"), "a record nobody decodes");
  const std::string value_key = detail::remote_key_prefix() + key_of("undecodable").digest();
  CacheConfig reader_config = test::disk_cache_at(temp.path() / "reader");
  reader_config.remote = server.url();
  reader_config.remote_verify_key = test::fleet_signing_key().public_key;
  BuildCache reader(reader_config);
  ASSERT_TRUE(reader.find(key_of("undecodable")));
  reader.drop(key_of("undecodable"), "its record does not decode");
  EXPECT_EQ(server.command({"EXISTS", value_key}), ":1");
  EXPECT_EQ(reader.stats().remote_repairs, 0u);
  BuildCache writer(remote_at(temp.path() / "writer", server.url()));
  ASSERT_TRUE(writer.find(key_of("undecodable")));
  const CacheStats before = writer.stats();
  writer.drop(key_of("undecodable"), "its record does not decode");
  EXPECT_EQ(server.command({"EXISTS", value_key}), ":0");
  const CacheStats after = writer.stats();
  EXPECT_EQ(after.remote_repairs, 1u);
  EXPECT_EQ(after.corrupt_entries, before.corrupt_entries + 1);
  // The next machine misses and builds the sound one.
  CacheSource source{};
  BuildCache next(remote_at(temp.path() / "next", server.url()));
  EXPECT_EQ(next.get_or_build(key_of("undecodable"), constant("record:fresh"), &source), "record:fresh");
  EXPECT_EQ(source, CacheSource::built);
}

// rebuild(): the caller that cannot decode what it found builds it again through the
// cache: counted as a miss and a build (not a hit with no build), and its payload replaces
// the bad one in every tier, Redis included, so every machine gets the sound one.
TEST(RemoteCacheRepair, ARebuildIsCountedAsABuildAndOverwritesEveryTier) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  BuildCache(remote_at(temp.path() / "old", server.url())).put(key_of("stale-record"), "a record nobody decodes");
  BuildCache cache(remote_at(temp.path() / "a", server.url()));
  CacheSource source{};
  ASSERT_EQ(cache.get_or_build(key_of("stale-record"), never(), &source), "a record nobody decodes");
  EXPECT_EQ(source, CacheSource::remote);
  const CacheStats before = cache.stats();
  EXPECT_EQ(cache.rebuild(key_of("stale-record"), "its record does not decode", constant("record:fresh"), &source),
            "record:fresh");
  EXPECT_EQ(source, CacheSource::built);
  const CacheStats after = cache.stats();
  EXPECT_EQ(after.builds, before.builds + 1);
  EXPECT_EQ(after.misses, before.misses + 1);
  EXPECT_EQ(after.remote_repairs, 1u);
  EXPECT_EQ(after.remote_writes, before.remote_writes + 1);
  // The lookup that gave the undecodable payload is no hit: taken back.
  EXPECT_EQ(after.remote_hits + 1, before.remote_hits);
  EXPECT_EQ(cache.get_or_build(key_of("stale-record"), never(), &source), "record:fresh");
  BuildCache other(remote_at(temp.path() / "b", server.url()));
  EXPECT_EQ(other.get_or_build(key_of("stale-record"), never(), &source), "record:fresh");
  EXPECT_EQ(source, CacheSource::remote);
  BuildCache disk_only(test::disk_cache_at(temp.path() / "a"));
  EXPECT_EQ(disk_only.find(key_of("stale-record")), "record:fresh");
}

// ---- Redis Cluster ----------------------------------------------------------------------------

// Three redis-server nodes in cluster mode on loopback, joined by redis-cli --cluster create
// (every slot assigned, no replicas).
struct ThreeNodeCluster {
  std::vector<std::unique_ptr<test::RedisServer>> nodes;
  std::string problem;  // why it could not be made, empty when it was

  ThreeNodeCluster() {
    for (int i = 0; i < 3; ++i) {
      nodes.push_back(std::make_unique<test::RedisServer>(std::vector<std::string>{
          "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"}));
      if (!nodes.back()->problem().empty()) {
        problem = "node " + std::to_string(i) + ": " + nodes.back()->problem();
        return;
      }
    }
    std::vector<std::string> create{redis_cli(), "--cluster", "create"};
    for (const auto& node : nodes) create.push_back("127.0.0.1:" + std::to_string(node->port()));
    create.insert(create.end(), {"--cluster-replicas", "0", "--cluster-yes"});
    const test::ChildResult made = test::run_children({create}, {{}}).front();
    if (made.exit_code != 0) {
      problem = "redis-cli --cluster create failed: " + made.output;
      return;
    }
    // Bounded: every node says the cluster serves.
    for (int i = 0; i < 1000; ++i) {
      bool all_ok = true;
      for (const auto& node : nodes) all_ok = all_ok && node->command({"CLUSTER", "INFO"}).find("cluster_state:ok") != std::string::npos;
      if (all_ok) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    problem = "the cluster never reached cluster_state:ok";
  }

  // redis-cli beside redis-server, or empty.
  static std::string redis_cli() {
    const fs::path beside = fs::path(test::redis_server_program()).parent_path() / "redis-cli";
    return !test::redis_server_program().empty() && fs::exists(beside) ? beside.string() : std::string();
  }
};

// Builds of `keys` keys through a cache on `url` (a cluster node): every one built and
// right, nothing stored in or read from Redis, never a bad entry, one warning naming the
// cluster.
void expect_cluster_refused(const fs::path& dir, const std::string& url, int keys, const std::string& sign) {
  CacheConfig config = remote_at(dir, url);
  config.remote_timeout = std::chrono::milliseconds(1000);  // no timeout on a loaded machine: one error, the cluster
  BuildCache cache(config);
  for (int i = 0; i < keys; ++i) {
    const std::string name = "cluster-" + std::to_string(i);
    EXPECT_EQ(cache.get_or_build(key_of(name), constant("built " + name)), "built " + name);
  }
  const CacheStats stats = cache.stats();
  EXPECT_EQ(stats.builds, static_cast<std::uint64_t>(keys));
  EXPECT_EQ(stats.remote_hits, 0u);
  EXPECT_EQ(stats.remote_corrupt, 0u) << "a MOVED reply is no bad entry";
  EXPECT_EQ(stats.remote_unverified, 0u);
  EXPECT_EQ(stats.remote_write_failures, 0u);
  EXPECT_EQ(stats.remote_errors, 1u) << "said once";
  std::size_t warned = 0;
  for (const std::string& warning : cache.warnings()) {
    if (warning.find("Redis Cluster") == std::string::npos) continue;
    ++warned;
    EXPECT_NE(warning.find(sign), std::string::npos) << warning;
  }
  EXPECT_EQ(warned, 1u);
  std::string why;
  EXPECT_FALSE(cache.remote_reachable(&why));
  EXPECT_NE(why.find("Redis Cluster"), std::string::npos) << why;
}

// A real three-node cluster on loopback: a cache pointed at any node finds it a cluster
// when it connects (INFO cluster) and leaves Redis alone with one warning; a user that may
// not run INFO finds it by the first MOVED reply instead, and counts no bad entry either.
TEST(RemoteCacheCluster, IsRefusedWithOneWarningAndBuildsGoOn) {
  if (test::redis_server_program().empty()) GTEST_SKIP() << "redis-server is not installed (ci/setup.sh)";
  if (ThreeNodeCluster::redis_cli().empty()) GTEST_SKIP() << "redis-cli is not installed beside redis-server";
  if (!BuildCache::remote_built_in()) GTEST_SKIP() << "this cujit was built without hiredis";
  ThreeNodeCluster cluster;
  ASSERT_EQ(cluster.problem, "");
  test::TempDir temp;
  for (std::size_t i = 0; i < cluster.nodes.size(); ++i) {
    SCOPED_TRACE("node " + std::to_string(i));
    expect_cluster_refused(temp.path() / ("node" + std::to_string(i)), cluster.nodes[i]->url(), 4,
                           "cluster_enabled:1");
  }
  // Without INFO: 16 keys spread over the slots of three nodes, so some live elsewhere.
  test::RedisServer& node = *cluster.nodes.front();
  ASSERT_EQ(node.command({"ACL", "SETUSER", "noinfo", "on", ">pw", "~*", "&*", "+@all", "-info"}), "+OK");
  expect_cluster_refused(temp.path() / "noinfo", "redis://noinfo:pw@127.0.0.1:" + std::to_string(node.port()), 16,
                         "MOVED");
}

// ---- a fleet ---------------------------------------------------------------------------------

struct FleetRun {
  unsigned long long builds = 0, remote_hits = 0;
  long correct = 0;
  double seconds = 0;
};

// `processes` processes asking keys 0..keys-1, each with the disk directory
// dirs[i % dirs.size()] (a machine each) and, when `url` is given, the shared Redis.
FleetRun run_fleet(int processes, long keys, long build_ms, const std::vector<fs::path>& dirs, const std::string& url,
                   const std::string& lock_ms = "30000", const std::string& timeout_ms = "50") {
  std::vector<std::vector<std::string>> argvs, environments;
  for (int i = 0; i < processes; ++i) {
    argvs.push_back({CUJIT_FLEET_CHILD, "0", std::to_string(keys), std::to_string(build_ms)});
    environments.push_back({"CUJIT_CACHE_DIR=" + dirs[static_cast<std::size_t>(i) % dirs.size()].string(),
                            "CUJIT_CACHE_REMOTE=" + url, "CUJIT_CACHE_REMOTE_LOCK_MS=" + lock_ms,
                            "CUJIT_CACHE_REMOTE_TIMEOUT_MS=" + timeout_ms, signing_key_variable()});
  }
  const auto started = std::chrono::steady_clock::now();
  const std::vector<test::ChildResult> results = test::run_children(argvs, environments);
  FleetRun run;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (const test::ChildResult& result : results) {
    EXPECT_EQ(result.exit_code, 0) << result.output;
    unsigned long long builds = 0, memory = 0, disk = 0, remote = 0;
    long correct = 0;
    const std::size_t at = result.output.find("fleet builds=");
    EXPECT_NE(at, std::string::npos) << result.output;
    if (at == std::string::npos) continue;
    std::sscanf(result.output.c_str() + at, "fleet builds=%llu memory_hits=%llu disk_hits=%llu remote_hits=%llu", &builds,
                &memory, &disk, &remote);
    const std::size_t correct_at = result.output.find("correct=", at);
    if (correct_at != std::string::npos) std::sscanf(result.output.c_str() + correct_at, "correct=%ld", &correct);
    run.builds += builds;
    run.remote_hits += remote;
    run.correct += correct;
  }
  return run;
}

// A value planted bad (random bytes, a signed value cut short at a random length, one random
// bit flipped) under the key a fleet of processes (a machine each) asks for: the first that
// builds it overwrites it, counted in its persistent counters as a build and a repair; the
// others wait for it and get the repaired value from Redis; a machine joining later builds
// nothing. Redis calls get a second, so that a loaded machine keeps one build.
TEST(RemoteCacheRepair, APlantedBadValueIsRepairedByTheFirstBuilderForTheWholeFleet) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  std::string problem;
  const std::optional<detail::SigningKey> signer =
      detail::SigningKey::load(test::fleet_signing_key().private_key, problem);
  ASSERT_TRUE(signer) << problem;
  const std::string digest = CacheKey("fleet-test").add("name", "key-0").digest();  // cache_fleet_child's key 0
  const std::string value_key = detail::remote_key_prefix() + digest;
  std::mt19937 random(std::random_device{}());
  const std::string sound = detail::sign_value(*signer, value_key, detail::encode_entry(digest, "an old payload"));
  ASSERT_FALSE(sound.empty());
  std::string random_bytes(random() % 256 + 1, '\0');
  for (char& byte : random_bytes) byte = static_cast<char>(random());
  std::string flipped = sound;
  flipped[random() % flipped.size()] ^= static_cast<char>(1u << (random() % 8));
  const std::vector<std::pair<std::string, std::string>> planted = {
      {"random bytes", random_bytes}, {"cut short", sound.substr(0, random() % sound.size())}, {"a bit flipped", flipped}};
  for (const auto& [what, value] : planted) {
    SCOPED_TRACE(what);
    test::TempDir temp;
    ASSERT_EQ(server.command({"SET", value_key, value}), "+OK");
    std::vector<fs::path> machines;
    for (const char* name : {"a", "b", "c", "d"}) machines.push_back(temp.path() / name);
    const FleetRun run = run_fleet(4, 1, 200, machines, server.url(), "30000", "1000");
    EXPECT_EQ(run.builds, 1u);
    EXPECT_EQ(run.correct, 4);
    EXPECT_EQ(run.remote_hits, 3u);
    CacheCounters sum;
    for (const fs::path& machine : machines) {
      const CacheCounters counted = read_cache_counters(machine);
      sum.builds += counted.builds;
      sum.remote_repairs += counted.remote_repairs;
      sum.remote.hits += counted.remote.hits;
      sum.remote_waits += counted.remote_waits;
    }
    EXPECT_EQ(sum.builds, 1u);
    EXPECT_EQ(sum.remote_repairs, 1u);
    EXPECT_EQ(sum.remote.hits, 3u);
    EXPECT_NE(server.command({"GET", value_key}), value) << "the bad value is still there";
    const FleetRun late = run_fleet(1, 1, 200, {temp.path() / "late"}, server.url(), "30000", "1000");
    EXPECT_EQ(late.builds, 0u);
    EXPECT_EQ(late.remote_hits, 1u);
    EXPECT_EQ(late.correct, 1);
  }
}

TEST(RemoteCacheFleet, EachKeyIsBuiltOnceAcrossMachines) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  constexpr int processes = 4;
  constexpr long keys = 6, build_ms = 100;
  const std::vector<fs::path> shared{temp.path() / "shared-a", temp.path() / "shared-b"};
  const std::vector<fs::path> alone{temp.path() / "alone-a", temp.path() / "alone-b"};
  const FleetRun with_redis = run_fleet(processes, keys, build_ms, shared, server.url());
  EXPECT_EQ(with_redis.builds, static_cast<unsigned long long>(keys));
  EXPECT_EQ(with_redis.correct, processes * keys);
  const FleetRun without = run_fleet(processes, keys, build_ms, alone, "");
  EXPECT_EQ(without.builds, static_cast<unsigned long long>(keys * 2));  // once per machine
  EXPECT_EQ(without.correct, processes * keys);
  // A third machine joining later: with Redis it builds nothing.
  const FleetRun late_with = run_fleet(2, keys, build_ms, {temp.path() / "late-shared"}, server.url());
  EXPECT_EQ(late_with.builds, 0u);
  EXPECT_EQ(late_with.correct, 2 * keys);
  const FleetRun late_without = run_fleet(2, keys, build_ms, {temp.path() / "late-alone"}, "");
  EXPECT_EQ(late_without.builds, static_cast<unsigned long long>(keys));
  // Figures for the notes (not asserted: timings).
  std::printf("fleet: %d processes on 2 machines, %ld keys, builds of %ld ms: with Redis %llu builds in %.2f s, "
              "without %llu builds in %.2f s\n",
              processes, keys, build_ms, with_redis.builds, with_redis.seconds, without.builds, without.seconds);
  std::printf("fleet: a machine joining later (2 processes): with Redis %llu builds in %.2f s, without %llu builds "
              "in %.2f s\n",
              late_with.builds, late_with.seconds, late_without.builds, late_without.seconds);
}

TEST(RemoteCacheFleet, ABuildThatOutlastsTheLockTtlIsStillBuiltOnce) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  // Two machines (their own disk directories) ask for one key whose build lasts over three
  // lock TTLs: the builder keeps extending its lock, so the other waits for the entry
  // instead of taking the expired lock and building the key a second time. Redis calls get
  // a second, not 50 ms, so that a sanitizer build on a loaded machine cannot miss one.
  const FleetRun run =
      run_fleet(2, 1, 5000, {temp.path() / "a", temp.path() / "b"}, server.url(), "1500", "1000");
  EXPECT_EQ(run.builds, 1u);
  EXPECT_EQ(run.correct, 2);
}

TEST(RemoteCacheFleet, ABuilderKilledMidBuildIsTakenOverWhenItsLockExpires) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  const fs::path mark = temp.path() / "building";
  const std::vector<std::string> environment{"CUJIT_CACHE_DIR=" + (temp.path() / "a").string(),
                                             "CUJIT_CACHE_REMOTE=" + server.url(), "CUJIT_CACHE_REMOTE_LOCK_MS=1500",
                                             signing_key_variable()};
  test::RunningChild builder({CUJIT_FLEET_CHILD, "0", "1", "50", mark.string(), "hang"}, environment);
  for (int i = 0; i < 2000 && !fs::exists(mark); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(fs::exists(mark)) << "the builder never started its build";
  builder.kill(SIGKILL);
  EXPECT_EQ(builder.finish().exit_code, -1);
  // Another machine (its own disk directory): the dead builder's lock stays until it expires,
  // then this one builds. Its wait is bounded by the lock's expiry, not by lock_timeout.
  const std::vector<std::string> other{"CUJIT_CACHE_DIR=" + (temp.path() / "b").string(),
                                       "CUJIT_CACHE_REMOTE=" + server.url(), "CUJIT_CACHE_LOCK_TIMEOUT=60",
                                       signing_key_variable()};
  const test::ChildResult next = test::run_children({{CUJIT_FLEET_CHILD, "0", "1", "50"}}, {other}).front();
  ASSERT_EQ(next.exit_code, 0) << next.output;
  EXPECT_NE(next.output.find("fleet builds=1 "), std::string::npos) << next.output;
  EXPECT_NE(next.output.find("remote_lock_timeouts=0 correct=1"), std::string::npos) << next.output;
}

}  // namespace
}  // namespace cujit
