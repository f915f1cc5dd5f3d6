// Who may write to the remote tier, against a real redis-server: values are used (and
// copied to disk) only when a trusted writer signed them for their key (Ed25519); forged,
// replayed, unsigned and foreign-signed values are misses, counted and warned about once,
// and never reach the disk tier. Read-only clients (CUJIT_CACHE_REMOTE_READONLY, a Redis
// ACL user without write permissions) read and never write a value or a lock. Without a
// verify key the tier is refused unless the configuration opts into trusting every writer.
// Without redis-server installed the Redis tests skip saying so (ci/setup.sh installs it).
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cache/disk_cache.hpp"
#include "cache/remote_cache.hpp"
#include "cache/remote_compression.hpp"
#include "cache/remote_signature.hpp"
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

#define CUJIT_REQUIRE_REDIS(server)                                                              \
  do {                                                                                           \
    if (!BuildCache::remote_built_in()) GTEST_SKIP() << "this cujit was built without hiredis";  \
    if (test::redis_server_program().empty()) GTEST_SKIP() << (server).problem();                \
    ASSERT_EQ((server).problem(), "");                                                           \
  } while (false)

CacheKey key_of(const std::string& name) { return CacheKey("remote-trust-test").add("name", name); }

std::function<std::string()> constant(std::string payload) {
  return [payload] { return payload; };
}

std::string value_key_of(const std::string& name) { return detail::remote_key_prefix() + key_of(name).digest(); }

// A trusted writer: signs with the suite's key (and verifies with its public half).
// Redis calls get a second, not 50 ms: a call that times out on a loaded machine would
// look like a refusal to these tests.
constexpr std::chrono::milliseconds patient{1000};

CacheConfig writer_at(const fs::path& dir, const std::string& url) {
  CacheConfig config = test::disk_cache_at(dir);
  config.remote = url;
  config.remote_signing_key = test::fleet_signing_key().private_key;
  config.remote_timeout = patient;
  return config;
}

// A reader: holds only the trusted writers' public key, so writes nothing.
CacheConfig reader_at(const fs::path& dir, const std::string& url) {
  CacheConfig config = test::disk_cache_at(dir);
  config.remote = url;
  config.remote_verify_key = test::fleet_signing_key().public_key;
  config.remote_timeout = patient;
  return config;
}

// Whether the disk tier at `dir` holds an entry for `name` (a cache without Redis asks it).
bool on_disk(const fs::path& dir, const std::string& name) {
  BuildCache local(test::disk_cache_at(dir));
  return local.find(key_of(name)).has_value();
}

std::optional<detail::SigningKey> load_signing(const fs::path& path) {
  std::string problem;
  auto key = detail::SigningKey::load(path, problem);
  EXPECT_TRUE(key) << problem;
  return key;
}

// ---- the signature itself (no Redis) --------------------------------------------------------

TEST(HostileRemoteSignature, EveryChangeToASignedValueIsRefused) {
  // The class of edits: every single-bit flip of a signed value (envelope, signature,
  // entry header, key, checksum, payload), cuts at every length, and bytes appended.
  const auto signer = load_signing(test::fleet_signing_key().private_key);
  ASSERT_TRUE(signer);
  const detail::VerifyKeys keys = signer->public_key();
  const std::string digest = key_of("fuzzed").digest();
  const std::string redis_key = detail::remote_key_prefix() + digest;
  const std::string value = detail::sign_value(*signer, redis_key, detail::encode_entry(digest, "a small payload"));
  ASSERT_FALSE(value.empty());
  std::string problem;
  const auto good = detail::verified_entry(keys, redis_key, value, problem);
  ASSERT_TRUE(good) << problem;
  EXPECT_EQ(detail::decode_entry(digest, std::string(*good)).payload, "a small payload");
  std::size_t refused = 0, tried = 0;
  for (std::size_t bit = 0; bit < value.size() * 8; ++bit) {
    std::string mutant = value;
    mutant[bit / 8] = static_cast<char>(mutant[bit / 8] ^ (1 << (bit % 8)));
    ++tried;
    refused += !detail::verified_entry(keys, redis_key, mutant, problem);
  }
  for (std::size_t length = 0; length < value.size(); ++length) {
    ++tried;
    refused += !detail::verified_entry(keys, redis_key, value.substr(0, length), problem);
  }
  ++tried;
  refused += !detail::verified_entry(keys, redis_key, value + "x", problem);
  EXPECT_EQ(refused, tried);
  // The same value under any other key name (another recipe, another toolkit's prefix).
  for (const std::string& other : {detail::remote_key_prefix() + key_of("other").digest(),
                                   "cujit:1:0000000000000000:" + digest, redis_key + " ", std::string()}) {
    EXPECT_FALSE(detail::verified_entry(keys, other, value, problem)) << other;
  }
}

TEST(HostileRemoteSignature, KeyFilesThatAreNotEd25519PemAreRefused) {
  test::TempDir temp;
  const test::SigningKeyFiles ed = test::make_signing_key(temp.path(), "ed");
  // An EC key: a real key of another kind.
  EVP_PKEY* ec = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  ASSERT_NE(ec, nullptr);
  const fs::path ec_private = temp.path() / "ec.key", ec_public = temp.path() / "ec.pub";
  {
    std::FILE* file = std::fopen(ec_private.c_str(), "w");
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(PEM_write_PrivateKey(file, ec, nullptr, nullptr, 0, nullptr, nullptr), 1);
    std::fclose(file);
    file = std::fopen(ec_public.c_str(), "w");
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(PEM_write_PUBKEY(file, ec), 1);
    std::fclose(file);
  }
  EVP_PKEY_free(ec);
  const std::string ed_public_text = [&] {
    std::ifstream in(ed.public_key);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  const fs::path fifo = temp.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<fs::path> not_public_keys{
      temp.path() / "missing.pub", fifo, temp.path(), ec_public, ed.private_key,
      temp.write("empty.pub", ""), temp.write("text.pub", "not a key\n"),
      temp.write("huge.pub", std::string(detail::key_file_limit + 1, 'A')),
      temp.write("cut.pub", ed_public_text.substr(0, ed_public_text.size() / 2)),
      temp.write("then_garbage.pub", ed_public_text + "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")};
  for (const fs::path& path : not_public_keys) {
    std::string problem;
    EXPECT_FALSE(detail::VerifyKeys::load(path, problem)) << path;
    EXPECT_NE(problem, "") << path;
  }
  const std::vector<fs::path> not_private_keys{temp.path() / "missing.key", fifo, ec_private, ed.public_key,
                                               temp.write("empty.key", "")};
  for (const fs::path& path : not_private_keys) {
    std::string problem;
    EXPECT_FALSE(detail::SigningKey::load(path, problem)) << path;
    EXPECT_NE(problem, "") << path;
  }
  // Several public keys in one file (a rotation): each verifies what its private key signs.
  const test::SigningKeyFiles next = test::make_signing_key(temp.path(), "next");
  const std::string both_text = ed_public_text + [&] {
    std::ifstream in(next.public_key);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  std::string problem;
  const auto both = detail::VerifyKeys::load(temp.write("both.pub", both_text), problem);
  ASSERT_TRUE(both) << problem;
  EXPECT_EQ(both->size(), 2u);
  for (const fs::path& private_key : {ed.private_key, next.private_key}) {
    const auto signer = load_signing(private_key);
    ASSERT_TRUE(signer);
    EXPECT_TRUE(signer->trusted_by(*both));
    const std::string value = detail::sign_value(*signer, "k", "entry");
    EXPECT_TRUE(detail::verified_entry(*both, "k", value, problem)) << problem;
  }
}

// ---- forged values are misses, counted, never on disk --------------------------------------

struct Attack {
  const char* name;
  // The value an attacker with write access to Redis stores under the victim's key, made
  // from what it can read there (the trusted writer's value for "donor").
  std::function<std::string(const test::RedisServer& server, const std::string& victim_digest)> forge;
};

void PrintTo(const Attack& attack, std::ostream* out) { *out << attack.name; }

std::string donor_value(const test::RedisServer& server) { return server.command({"GET", value_key_of("donor")}); }

// The bytes the donor's signature covers (its entry, compressed when that made it smaller).
std::string donor_stored(const test::RedisServer& server) {
  return std::string(detail::unchecked_entry(donor_value(server)));
}

// The donor's entry (the disk tier's encoding) inside its signed value.
std::string donor_entry(const test::RedisServer& server) {
  const std::string stored = donor_stored(server);
  if (!detail::is_compressed_value(stored)) return stored;
  std::string problem;
  const std::optional<std::string> entry = detail::inflate_value(stored, problem);
  EXPECT_TRUE(entry) << problem;
  return entry.value_or(std::string());
}

class HostileForgedRemoteValue : public ::testing::TestWithParam<Attack> {};

TEST_P(HostileForgedRemoteValue, IsRefusedCountedAndNeverWrittenToDisk) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  // A trusted writer builds the donor (another kernel's result) and the victim's real one
  // is never stored: the attacker plants its value under the victim's key.
  BuildCache writer(writer_at(temp.path() / "writer", server.url()));
  (void)writer.get_or_build(key_of("donor"), constant("the donor kernel's cubin"));
  ASSERT_NE(donor_value(server), "(nil)");
  for (const char* victim : {"victim-1", "victim-2"}) {
    const std::string forged = GetParam().forge(server, key_of(victim).digest());
    ASSERT_EQ(server.command({"SET", value_key_of(victim), forged}), "+OK");
  }
  for (const auto& make : {reader_at, writer_at}) {
    const fs::path dir = temp.path() / (make == reader_at ? "reader" : "other-writer");
    auto reader_cache = std::make_unique<BuildCache>(make(dir, server.url()));
    BuildCache& reader = *reader_cache;
    EXPECT_FALSE(reader.find(key_of("victim-1")));
    EXPECT_FALSE(reader.find(key_of("victim-2")));
    const CacheStats stats = reader.stats();
    EXPECT_EQ(stats.remote_unverified, 2u);
    EXPECT_EQ(stats.remote_hits, 0u);
    EXPECT_EQ(stats.disk_stores, 0u);
    // Warned once, with why; the second is only counted.
    std::size_t warned = 0;
    for (const std::string& warning : reader.warnings()) warned += warning.find("not verified") != std::string::npos;
    EXPECT_EQ(warned, 1u);
    EXPECT_FALSE(on_disk(dir, "victim-1"));
    EXPECT_FALSE(on_disk(dir, "victim-2"));
    // The donor itself, signed for its own key, is served.
    CacheSource source{};
    EXPECT_EQ(reader.find(key_of("donor"), &source), "the donor kernel's cubin");
    EXPECT_EQ(source, CacheSource::remote);
    reader_cache.reset();  // its counts go to the directory's counters
    EXPECT_EQ(read_cache_counters(dir).remote_unverified, 2u);
  }
  // A trusted writer's build of the victim replaces the forgery for everyone.
  CacheSource source{};
  EXPECT_EQ(writer.get_or_build(key_of("victim-1"), constant("the victim's own cubin"), &source),
            "the victim's own cubin");
  EXPECT_EQ(source, CacheSource::built);
  BuildCache late(reader_at(temp.path() / "late", server.url()));
  EXPECT_EQ(late.find(key_of("victim-1"), &source), "the victim's own cubin");
  EXPECT_EQ(source, CacheSource::remote);
}

INSTANTIATE_TEST_SUITE_P(
    Attacks, HostileForgedRemoteValue,
    ::testing::Values(
        // The attack of issue 31: another kernel's result under the victim's key, its
        // checksum recomputed (a sound entry for the victim's key), no signature.
        Attack{"other_payload_recomputed_checksum_unsigned",
               [](const test::RedisServer& server, const std::string& victim) {
                 const std::string entry = donor_entry(server);
                 const auto payload = detail::decode_entry(key_of("donor").digest(), entry).payload;
                 return detail::encode_entry(victim, payload.value_or("?"));
               }},
        // The trusted writer's signed value for another key, copied whole.
        Attack{"replayed_under_another_key",
               [](const test::RedisServer& server, const std::string&) { return donor_value(server); }},
        // The trusted signature kept, the entry rewritten for the victim's key.
        Attack{"trusted_signature_over_a_rewritten_entry",
               [](const test::RedisServer& server, const std::string& victim) {
                 const std::string value = donor_value(server);
                 const std::string envelope = value.substr(0, value.size() - donor_stored(server).size());
                 const auto payload = detail::decode_entry(key_of("donor").digest(), donor_entry(server)).payload;
                 return envelope + detail::encode_entry(victim, payload.value_or("?"));
               }},
        // Signed properly for the victim's key, by a key nobody trusts.
        Attack{"signed_by_an_untrusted_key",
               [](const test::RedisServer&, const std::string& victim) {
                 static const test::TempDir dir;
                 static const test::SigningKeyFiles attacker = test::make_signing_key(dir.path(), "attacker");
                 std::string problem;
                 const auto key = detail::SigningKey::load(attacker.private_key, problem);
                 return detail::sign_value(*key, detail::remote_key_prefix() + victim,
                                           detail::encode_entry(victim, "the attacker's cubin"));
               }},
        // A signed value for the same recipe under another toolkit's prefix, moved here.
        Attack{"replayed_from_another_toolkit_prefix",
               [](const test::RedisServer&, const std::string& victim) {
                 std::string problem;
                 const auto key = detail::SigningKey::load(test::fleet_signing_key().private_key, problem);
                 return detail::sign_value(*key, "cujit:1:0123456789abcdef:" + victim,
                                           detail::encode_entry(victim, "another toolkit's cubin"));
               }},
        // A forged envelope: the magic with no room for a signature, then an entry.
        Attack{"envelope_cut_short",
               [](const test::RedisServer&, const std::string& victim) {
                 return std::string(detail::signed_value_magic, sizeof detail::signed_value_magic) +
                        detail::encode_entry(victim, "x").substr(0, 20);
               }}),
    [](const auto& attack) { return std::string(attack.param.name); });

TEST(RemoteTrust, TheHappyPathHitsAcrossMachinesAndFillsTheDiskTier) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  BuildCache writer(writer_at(temp.path() / "writer", server.url()));
  std::mt19937 random(31);
  std::vector<std::string> payloads;
  for (int i = 0; i < 8; ++i) {
    std::string payload(std::uniform_int_distribution<std::size_t>(0, 200000)(random), '\0');
    for (char& c : payload) c = static_cast<char>(random());
    payloads.push_back(payload);
    EXPECT_EQ(writer.get_or_build(key_of("k" + std::to_string(i)), constant(payload)), payload);
  }
  EXPECT_EQ(writer.stats().remote_writes, 8u);
  BuildCache reader(reader_at(temp.path() / "reader", server.url()));
  for (int i = 0; i < 8; ++i) {
    CacheSource source{};
    // Compared, not printed: the payloads are random bytes.
    EXPECT_TRUE(reader.find(key_of("k" + std::to_string(i)), &source) == payloads[static_cast<std::size_t>(i)]) << i;
    EXPECT_EQ(source, CacheSource::remote);
    EXPECT_TRUE(on_disk(temp.path() / "reader", "k" + std::to_string(i)));
  }
  EXPECT_EQ(reader.stats().remote_unverified, 0u);
  // A reader builds what is missing and writes it nowhere but its own tiers: no key in
  // Redis, no lock.
  const std::string keys_before = server.command({"DBSIZE"});
  EXPECT_EQ(reader.get_or_build(key_of("reader-only"), constant("r")), "r");
  EXPECT_EQ(server.command({"DBSIZE"}), keys_before);
  EXPECT_EQ(reader.stats().remote_writes, 0u);
}

// ---- no keys: fail closed ------------------------------------------------------------------

TEST(RemoteTrust, WithoutAVerifyKeyTheTierIsRefusedUnlessUnauthenticatedIsChosen) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  // An unsigned but sound entry, as an attacker (or an old cujit) writes it.
  const std::string digest = key_of("planted").digest();
  ASSERT_EQ(server.command({"SET", value_key_of("planted"), detail::encode_entry(digest, "planted")}), "+OK");
  CacheConfig bare = test::disk_cache_at(temp.path() / "bare");
  bare.remote = server.url();
  BuildCache refused(bare);
  EXPECT_EQ(refused.remote_url(), "");
  EXPECT_TRUE(has_warning(refused, "remote tier not used: no CUJIT_CACHE_REMOTE_VERIFY_KEY"));
  EXPECT_TRUE(has_warning(refused, "CUJIT_CACHE_REMOTE_UNAUTHENTICATED=1"));
  EXPECT_EQ(refused.get_or_build(key_of("planted"), constant("built")), "built");
  EXPECT_EQ(server.command({"DBSIZE"}), ":1");  // nothing written, no lock taken
  // Opted in: values are checked for damage only, and written unsigned.
  bare.remote_unauthenticated = true;
  bare.directory = temp.path() / "opted-in";
  BuildCache opted_in(bare);
  CacheSource source{};
  EXPECT_EQ(opted_in.find(key_of("planted"), &source), "planted");
  EXPECT_EQ(source, CacheSource::remote);
  // A key that cannot be loaded turns the tier off, never a throw, never unauthenticated.
  for (const fs::path& bad : {temp.path() / "missing.pub", temp.write("text.pub", "garbage")}) {
    CacheConfig config = reader_at(temp.path() / "bad-key", server.url());
    config.remote_verify_key = bad;
    config.remote_unauthenticated = true;
    BuildCache cache(config);
    EXPECT_EQ(cache.remote_url(), "") << bad;
    EXPECT_TRUE(has_warning(cache, "remote tier not used")) << bad;
    EXPECT_FALSE(cache.find(key_of("planted"))) << bad;
  }
}

TEST(RemoteTrust, ASigningKeyOthersCanReadIsUsedWithAWarning) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  const test::SigningKeyFiles keys = test::make_signing_key(temp.path(), "shared");
  CacheConfig config = writer_at(temp.path() / "private", server.url());
  config.remote_signing_key = keys.private_key;
  EXPECT_FALSE(has_warning(BuildCache(config), "readable by group or others"));
  for (const fs::perms readable : {fs::perms::group_read, fs::perms::others_read}) {
    fs::permissions(keys.private_key, fs::perms::owner_read | fs::perms::owner_write | readable,
                    fs::perm_options::replace);
    BuildCache cache(config);
    EXPECT_TRUE(has_warning(cache, "readable by group or others"));
    EXPECT_NE(cache.remote_url(), "");  // used all the same
  }
}

// A key file someone other than root or this user could change is no trust anchor (red-team
// finding F6: a world-writable verify-key file let another user add a key, and forged values
// were served and copied to disk): every mode with a group or other write bit, on the verify
// key and on the signing key, and on the directory holding them, is refused naming it.
TEST(HostileRemoteSignature, KeyFilesOthersCanWriteAreRefused) {
  test::TempDir temp;
  const test::SigningKeyFiles keys = test::make_signing_key(temp.path(), "ed");
  std::string problem;
  ASSERT_TRUE(detail::VerifyKeys::load(keys.public_key, problem)) << problem;
  ASSERT_TRUE(detail::SigningKey::load(keys.private_key, problem)) << problem;
  for (const fs::perms writable : {fs::perms::group_write, fs::perms::others_write,
                                   fs::perms::group_write | fs::perms::others_write}) {
    for (const fs::path& file : {keys.public_key, keys.private_key}) {
      fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write | writable, fs::perm_options::replace);
      problem.clear();
      const bool loaded = file == keys.public_key ? detail::VerifyKeys::load(file, problem).has_value()
                                                  : detail::SigningKey::load(file, problem).has_value();
      EXPECT_FALSE(loaded) << file;
      EXPECT_NE(problem.find("'" + file.string() + "'"), std::string::npos) << problem;
      EXPECT_NE(problem.find("writable by"), std::string::npos) << problem;
      fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    }
    fs::permissions(temp.path(), fs::perms::owner_all | writable, fs::perm_options::replace);
    problem.clear();
    EXPECT_FALSE(detail::VerifyKeys::load(keys.public_key, problem)) << "a directory others can write";
    EXPECT_NE(problem.find("writable by"), std::string::npos) << problem;
    fs::permissions(temp.path(), fs::perms::owner_all, fs::perm_options::replace);
  }
  ASSERT_TRUE(detail::VerifyKeys::load(keys.public_key, problem)) << "the same files, owner-only, load: " << problem;
}

// The path as written counts too: a key reached through a link in a directory of another
// user's is refused, though the key itself passes the rule (red-team finding, 2026-11-28:
// that user could point the link at another key file that passes it). Needs root, to make
// the directory and the link another user's.
TEST(HostileRemoteSignature, AKeyReachedThroughAnotherUsersLinkIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory and a link to another user";
  test::TempDir temp;
  const test::SigningKeyFiles keys = test::make_signing_key(temp.path(), "ed");
  std::string problem;
  ASSERT_TRUE(detail::VerifyKeys::load(keys.public_key, problem)) << problem;
  const fs::path theirs = temp.path() / "theirs";
  fs::create_directories(theirs);
  const fs::path link = theirs / "verify.pem";
  fs::create_symlink(keys.public_key, link);
  ASSERT_EQ(::lchown(link.c_str(), 4242, 4242), 0);
  problem.clear();
  EXPECT_FALSE(detail::VerifyKeys::load(link, problem)) << "a link another user owns";
  EXPECT_NE(problem.find("a link owned by uid 4242"), std::string::npos) << problem;
  ASSERT_EQ(::lchown(link.c_str(), 0, 0), 0);
  ASSERT_EQ(::chown(theirs.c_str(), 4242, 4242), 0);
  problem.clear();
  EXPECT_FALSE(detail::VerifyKeys::load(link, problem)) << "a directory another user owns on the way";
  EXPECT_NE(problem.find("owned by uid 4242"), std::string::npos) << problem;
  ASSERT_EQ(::chown(theirs.c_str(), 0, 0), 0);
  problem.clear();
  EXPECT_TRUE(detail::VerifyKeys::load(link, problem)) << "root's link in root's directory: " << problem;
  // Their link followed by "..", in a directory of ours: the kernel takes ".." from the
  // link's target (second red-team pass, 2026-11-28).
  fs::create_directories(temp.path() / "keys" / "deeper");
  fs::copy_file(keys.public_key, temp.path() / "keys" / "verify.pem");
  ::chmod((temp.path() / "keys" / "verify.pem").c_str(), 0600);
  const fs::path their_link = temp.path() / "their-link";
  fs::create_symlink(temp.path() / "keys" / "deeper", their_link);
  ASSERT_EQ(::lchown(their_link.c_str(), 4242, 4242), 0);
  problem.clear();
  EXPECT_FALSE(detail::VerifyKeys::load(their_link / ".." / "verify.pem", problem)) << "their link, then ..";
  EXPECT_NE(problem.find("a link owned by uid 4242"), std::string::npos) << problem;
}

TEST(RemoteTrust, TheEnvironmentNamesTheKeysAsAbsolutePaths) {
  const test::SigningKeyFiles& keys = test::fleet_signing_key();
  ASSERT_EQ(::setenv("CUJIT_CACHE_REMOTE_VERIFY_KEY", keys.public_key.c_str(), 1), 0);
  ASSERT_EQ(::setenv("CUJIT_CACHE_REMOTE_SIGNING_KEY", keys.private_key.c_str(), 1), 0);
  ASSERT_EQ(::setenv("CUJIT_CACHE_REMOTE_READONLY", "1", 1), 0);
  ASSERT_EQ(::setenv("CUJIT_CACHE_REMOTE_UNAUTHENTICATED", "no", 1), 0);
  const CacheConfig config = CacheConfig::from_environment();
  EXPECT_EQ(config.remote_verify_key, keys.public_key);
  EXPECT_EQ(config.remote_signing_key, keys.private_key);
  EXPECT_TRUE(config.remote_read_only);
  EXPECT_FALSE(config.remote_unauthenticated);
  for (const auto& [name, value] : std::vector<std::pair<const char*, const char*>>{
           {"CUJIT_CACHE_REMOTE_VERIFY_KEY", "relative.pub"},
           {"CUJIT_CACHE_REMOTE_SIGNING_KEY", "keys/writer.key"},
           {"CUJIT_CACHE_REMOTE_READONLY", "maybe"},
           {"CUJIT_CACHE_REMOTE_UNAUTHENTICATED", "2"}}) {
    const std::string before = std::getenv(name);
    ASSERT_EQ(::setenv(name, value, 1), 0);
    try {
      (void)CacheConfig::from_environment();
      ADD_FAILURE() << name << "=" << value << " accepted";
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::usage);
      EXPECT_NE(std::string(error.what()).find(name), std::string::npos) << error.what();
    }
    ASSERT_EQ(::setenv(name, before.c_str(), 1), 0);
  }
  for (const char* name : {"CUJIT_CACHE_REMOTE_VERIFY_KEY", "CUJIT_CACHE_REMOTE_SIGNING_KEY",
                           "CUJIT_CACHE_REMOTE_READONLY", "CUJIT_CACHE_REMOTE_UNAUTHENTICATED"}) {
    ::unsetenv(name);
  }
}

// ---- read-only clients -----------------------------------------------------------------------

// Redis' count of calls of `command` ("set", "eval"...), 0 when never called.
long long calls_of(const test::RedisServer& server, const std::string& command, const std::string& password = {}) {
  const std::string stats = server.command({"INFO", "commandstats"}, password);
  const std::size_t at = stats.find("cmdstat_" + command + ":calls=");
  if (at == std::string::npos) return 0;
  return std::stoll(stats.substr(at + ("cmdstat_" + command + ":calls=").size()));
}

long long rejected_calls_of(const test::RedisServer& server, const std::string& command,
                            const std::string& password = {}) {
  const std::string stats = server.command({"INFO", "commandstats"}, password);
  const std::size_t at = stats.find("cmdstat_" + command + ":");
  if (at == std::string::npos) return 0;
  const std::size_t rejected = stats.find("rejected_calls=", at);
  if (rejected == std::string::npos) return 0;
  return std::stoll(stats.substr(rejected + std::string("rejected_calls=").size()));
}

TEST(RemoteReadOnly, TheSettingNeverWritesAValueOrALockAndReadsGoOn) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  BuildCache(writer_at(temp.path() / "writer", server.url())).put(key_of("shared"), "from the fleet");
  ASSERT_EQ(server.command({"DBSIZE"}), ":2");  // the value and its recipe index
  ASSERT_EQ(server.command({"CONFIG", "RESETSTAT"}), "+OK");
  // Even with the fleet's signing key: read-only wins.
  CacheConfig config = writer_at(temp.path() / "job", server.url());
  config.remote_read_only = true;
  BuildCache job(config);
  CacheSource source{};
  EXPECT_EQ(job.get_or_build(key_of("shared"), constant("never"), &source), "from the fleet");
  EXPECT_EQ(source, CacheSource::remote);
  for (int i = 0; i < 4; ++i) {
    const std::string name = "untrusted-" + std::to_string(i);
    EXPECT_EQ(job.get_or_build(key_of(name), constant(name), &source), name);
    EXPECT_EQ(source, CacheSource::built);
  }
  EXPECT_EQ(server.command({"DBSIZE"}), ":2");  // still the writer's value and recipe index
  for (const char* command : {"set", "eval", "del", "pexpire"}) EXPECT_EQ(calls_of(server, command), 0) << command;
  const CacheStats stats = job.stats();
  EXPECT_EQ(stats.remote_writes, 0u);
  EXPECT_EQ(stats.remote_errors, 0u);
  EXPECT_EQ(stats.remote_forbidden, 0u);
  EXPECT_EQ(stats.builds, 4u);
}

TEST(RemoteReadOnly, AReadOnlyClientWaitsForAWritersLockButNeverTakesOne) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  CacheConfig config = reader_at(temp.path() / "reader", server.url());
  config.lock_timeout = std::chrono::milliseconds(60'000);
  BuildCache reader(config);
  const std::string lock_key = detail::remote_key_prefix() + "lock:" + key_of("awaited").digest();
  // A writer holds the build lock of the key; when it lets go, the entry is there.
  ASSERT_EQ(server.command({"SET", lock_key, "a writer", "PX", "60000"}), "+OK");
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    BuildCache(writer_at(temp.path() / "writer", server.url())).put(key_of("awaited"), "the writer's build");
    server.command({"DEL", lock_key});
  });
  EXPECT_EQ(reader.get_or_build(key_of("awaited"), constant("built by the reader")), "the writer's build");
  release.join();
  EXPECT_EQ(reader.stats().remote_waits, 1u);
  EXPECT_EQ(reader.stats().builds, 0u);
  EXPECT_EQ(server.command({"EXISTS", lock_key}), ":0");
}

TEST(RemoteReadOnly, AnAclUserWithoutWritePermissionStopsWritingAndKeepsReading) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  // A Redis user that may read any key and nothing else.
  ASSERT_EQ(server.command({"ACL", "SETUSER", "job", "on", ">job-password", "~*", "resetchannels", "-@all", "+@read",
                            "+@connection"}),
            "+OK");
  BuildCache(writer_at(temp.path() / "writer", server.url())).put(key_of("shared"), "from the fleet");
  // The job holds the fleet's signing key by mistake, and no read-only setting: Redis'
  // refusal (NOPERM) is what stops it, once.
  const std::string url = "redis://job:job-password@127.0.0.1:" + std::to_string(server.port());
  BuildCache job(writer_at(temp.path() / "job", url));
  for (int i = 0; i < 3; ++i) {
    const std::string name = "untrusted-" + std::to_string(i);
    EXPECT_EQ(job.get_or_build(key_of(name), constant(name)), name);
  }
  CacheSource source{};
  EXPECT_EQ(job.get_or_build(key_of("shared"), constant("never"), &source), "from the fleet");
  EXPECT_EQ(source, CacheSource::remote);
  const CacheStats stats = job.stats();
  EXPECT_EQ(stats.remote_forbidden, 1u);
  EXPECT_EQ(stats.remote_errors, 0u);  // not "Redis is down"
  EXPECT_EQ(stats.remote_skipped, 0u);  // no back-off: reads went on
  EXPECT_EQ(stats.remote_hits, 1u);
  EXPECT_EQ(stats.builds, 3u);
  std::size_t warned = 0;
  for (const std::string& warning : job.warnings()) warned += warning.find("NOPERM") != std::string::npos;
  EXPECT_EQ(warned, 1u);
  EXPECT_TRUE(has_warning(job, "stops writing"));
  EXPECT_EQ(rejected_calls_of(server, "set"), 1);  // the first lock; nothing tried after it
  EXPECT_EQ(server.command({"DBSIZE"}), ":2");  // the writer's value and its recipe index
}

TEST(RemoteReadOnly, TheEnvironmentMakesAFleetProcessReadOnly) {
  test::RedisServer server;
  CUJIT_REQUIRE_REDIS(server);
  test::TempDir temp;
  const std::vector<std::string> environment{
      "CUJIT_CACHE_DIR=" + (temp.path() / "job").string(), "CUJIT_CACHE_REMOTE=" + server.url(),
      "CUJIT_CACHE_REMOTE_VERIFY_KEY=" + test::fleet_signing_key().public_key.string(),
      "CUJIT_CACHE_REMOTE_SIGNING_KEY=" + test::fleet_signing_key().private_key.string(),
      "CUJIT_CACHE_REMOTE_READONLY=1"};
  const test::ChildResult job = test::run_child({CUJIT_FLEET_CHILD, "0", "3", "10"}, environment);
  ASSERT_EQ(job.exit_code, 0) << job.output;
  EXPECT_NE(job.output.find("fleet builds=3 "), std::string::npos) << job.output;
  EXPECT_EQ(server.command({"DBSIZE"}), ":0");
}

}  // namespace
}  // namespace cujit
