#include "cache/remote_cache.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

#include "cache/blocked_signal.hpp"
#include "cache/disk_cache.hpp"
#include "cache/remote_compression.hpp"
#include "cache/remote_hiredis.hpp"
#include "cujit/cache_key.hpp"
#include "cujit/error.hpp"
#include "support/library_identity.hpp"
#include "cache/library_content.hpp"

namespace cujit::detail {
namespace {

using Clock = std::chrono::steady_clock;
// How often an unlock that failed (Redis slow, paused or unreachable) is tried again until
// the lock would have expired anyway: waiters notice the release within about this much
// (and their own poll) once Redis answers again.
constexpr std::chrono::milliseconds release_retry{20};

// Deletes the lock only while it holds the caller's token: a lock that expired and that
// another machine took since is not ours to delete.
constexpr std::string_view compare_and_delete =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
// Extends the lock only while it holds the caller's token, for the same reason.
constexpr std::string_view compare_and_extend =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

// The NVRTC library file a compile would load (CUJIT_NVRTC_LIBRARY, else the build's),
// named without loading it: the cache stage knows no compiler, and a hit maps none.
std::string toolkit_identity() {
  static const std::string identity = [] {
    const char* chosen = std::getenv("CUJIT_NVRTC_LIBRARY");
    const std::string library = chosen != nullptr && *chosen == '/' ? chosen : CUJIT_NVRTC_DEFAULT_LIBRARY;
    return sha256_hex(content_identity(file_identity(library))).substr(0, 16);
  }();
  return identity;
}

#if CUJIT_HAVE_HIREDIS
// Names this holder of a fleet lock uniquely: host, process and a random number.
std::string new_token() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::random_device random;
  return std::string(host) + ":" + std::to_string(::getpid()) + ":" + std::to_string(random()) +
         std::to_string(random());
}
#endif

}  // namespace

std::string remote_key_prefix() {
  return "cujit:" + std::to_string(entry_format_version) + ":" + toolkit_identity() + ":";
}

std::string remote_shared_key_prefix() { return "cujit:" + std::to_string(entry_format_version) + ":shared:"; }

#if CUJIT_HAVE_HIREDIS

bool remote_built_in() noexcept { return true; }

namespace {

struct ReplyFree {
  void operator()(redisReply* reply) const noexcept { hiredis().freeReplyObject(reply); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;
struct ContextFree {
  void operator()(redisContext* context) const noexcept { hiredis().redisFree(context); }
};
using Context = std::unique_ptr<redisContext, ContextFree>;

timeval to_timeval(std::chrono::milliseconds time) {
  return timeval{static_cast<time_t>(time.count() / 1000), static_cast<suseconds_t>(time.count() % 1000 * 1000)};
}

std::string reply_text(const redisReply& reply) { return std::string(reply.str, reply.len); }

bool is_noperm(const redisReply& reply) {
  return reply.type == REDIS_REPLY_ERROR && reply_text(reply).rfind("NOPERM", 0) == 0;
}

// Whether a command writes (a value or a lock): a NOPERM answer to it means "this client
// may not write", for its caller to handle, not "this client may not use the server".
enum class Access { read, write };

// Error replies that say this client may not use the server: the connection is no use.
bool refuses_access(const redisReply& reply) {
  const std::string text = reply_text(reply);
  return text.rfind("NOAUTH", 0) == 0 || text.rfind("WRONGPASS", 0) == 0 || text.rfind("NOPERM", 0) == 0 ||
         text.find("invalid password") != std::string::npos;
}

// Error replies only a Redis Cluster node gives: the key lives on another node (MOVED,
// ASK), keys of one command on several slots (CROSSSLOT), the cluster not serving
// (CLUSTERDOWN). Never a bad entry: the server is one this tier does not support.
bool is_cluster_reply(const redisReply& reply) {
  if (reply.type != REDIS_REPLY_ERROR) return false;
  const std::string text = reply_text(reply);
  for (const char* code : {"MOVED ", "ASK ", "CROSSSLOT", "CLUSTERDOWN", "TRYAGAIN"}) {
    if (text.rfind(code, 0) == 0) return true;
  }
  return false;
}

// The address of `host`, resolved within `timeout`: hiredis resolves a name itself, with no
// bound (a slow resolver cost 6 s per connection, issue 32), so a name is resolved here, on
// a thread of its own that is left to finish alone when it takes longer, and hiredis is
// given the numeric address. A numeric host is returned as it is. Empty with why in `why`.
std::string address_within(const std::string& host, std::chrono::milliseconds timeout, std::string& why) {
  in_addr v4{};
  in6_addr v6{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1 || ::inet_pton(AF_INET6, host.c_str(), &v6) == 1) return host;
  struct Lookup {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    std::string address, error;
  };
  const auto lookup = std::make_shared<Lookup>();
  try {
    std::thread([lookup, host] {
      addrinfo hints{};
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* found = nullptr;
      const int status = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
      std::string address, error;
      if (status != 0 || found == nullptr) {
        error = status != 0 ? ::gai_strerror(status) : "no address";
      } else {
        char text[INET6_ADDRSTRLEN] = {};
        const void* raw = found->ai_family == AF_INET6
                              ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(found->ai_addr)->sin6_addr)
                              : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(found->ai_addr)->sin_addr);
        if (::inet_ntop(found->ai_family, raw, text, sizeof text) != nullptr) address = text;
        else error = "an address that cannot be written";
      }
      if (found != nullptr) ::freeaddrinfo(found);
      const std::lock_guard<std::mutex> lock(lookup->mutex);
      lookup->address = std::move(address);
      lookup->error = std::move(error);
      lookup->done = true;
      lookup->done_cv.notify_all();
    }).detach();
  } catch (...) {
    why = "cannot start a thread to resolve '" + host + "'";
    return {};
  }
  std::unique_lock<std::mutex> lock(lookup->mutex);
  if (!lookup->done_cv.wait_for(lock, timeout, [&] { return lookup->done; })) {
    why = "resolving '" + host + "' took more than " + std::to_string(timeout.count()) + " ms";
    return {};
  }
  if (lookup->address.empty()) why = "cannot resolve '" + host + "': " + lookup->error;
  return lookup->address;
}

}  // namespace

struct RemoteCache::Connection {
  Connection(const RemoteSettings& of, Unsupported& server, std::atomic<Clock::rep>& any_answer)
      : settings(of), unsupported(server), answered(any_answer) {}

  const RemoteSettings& settings;
  Unsupported& unsupported;  // shared by the cache's connections
  std::atomic<Clock::rep>& answered;  // shared too: when either last had a reply
  Context context;
  Clock::time_point retry_after{}, failed_at{};
  std::string last_failure;
  // Whether the last connect was refused (nothing listening on the port: Redis is gone,
  // and no lock of it holds), not timed out (Redis there but not answering).
  bool refused = false;

  RemoteOutcome fail(std::string why, std::string& problem) {
    context.reset();
    failed_at = Clock::now();
    retry_after = failed_at + settings.backoff;
    last_failure = settings.url.redacted() + ": " + std::move(why);
    problem = last_failure + " (remote tier left alone for " + std::to_string(settings.backoff.count()) + " ms)";
    return RemoteOutcome::unavailable;
  }

  // When the call under way must be over: one timeout for connecting (resolve, connect,
  // AUTH, SELECT, INFO), another for the command and its whole reply, each extended by a
  // microsecond per byte moved (a floor of 1 MB/s, so a large value over a slow link is not
  // cut off while a reply trickling a byte at a time is). A socket timeout alone bounds
  // each read, and a server trickling its reply held a lookup 9.7 s (issue 32).
  Clock::time_point deadline{};
  static constexpr std::chrono::nanoseconds per_byte{1000};
  std::string late;  // why the last send() failed (at the deadline, or hiredis' errstr), else empty

  std::chrono::milliseconds time_left() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  }

  // Why the last connect or send failed.
  std::string why_not() const { return !late.empty() ? late : context ? std::string(context->errstr) : "no connection"; }

  // Sets the socket's timeout to what is left of the call; false once nothing is (a zero
  // timeout would mean none at all to the socket).
  bool arm() {
    const std::chrono::milliseconds left = time_left();
    if (left.count() < 1) {
      late = "no whole answer within " + std::to_string(settings.timeout.count()) + " ms";
      return false;
    }
    return hiredis().redisSetTimeout(context.get(), to_timeval(left)) == REDIS_OK;
  }

  // One command on `context`, already connected, sent and answered whole before `deadline`;
  // null after an I/O error or at the deadline (why_not()). The reply is read a buffer at a
  // time, the socket's timeout set to what is left before each read and write.
  Reply send(const std::vector<std::string_view>& args) {
    late.clear();
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (std::string_view arg : args) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    const BlockedSignal blocked(SIGPIPE);  // a closed connection: EPIPE, not a dead process
    const HiredisApi& api = hiredis();
    // A call that ends any other way than with a whole reply (an exception included) leaves
    // no half-sent command or half-read reply behind for the next call to take as its own.
    struct DropUnlessAnswered {
      Connection& connection;
      bool answered = false;
      ~DropUnlessAnswered() {
        if (answered) return;
        if (connection.late.empty() && connection.context) connection.late = connection.context->errstr;
        connection.context.reset();
      }
    } guard{*this};
    if (api.redisAppendCommandArgv(context.get(), static_cast<int>(argv.size()), argv.data(), lengths.data()) != REDIS_OK) {
      return nullptr;
    }
    std::size_t sending = 0;
    for (std::size_t length : lengths) sending += length;
    deadline += per_byte * static_cast<std::int64_t>(sending);
    // A read or write that timed out because the call's time ran out says so, not EAGAIN.
    const auto failed = [this] {
      if (late.empty() && time_left().count() < 1) late = "no whole answer within " + std::to_string(settings.timeout.count()) + " ms";
      return nullptr;
    };
    for (int written = 0; written == 0;) {
      if (!arm() || api.redisBufferWrite(context.get(), &written) != REDIS_OK) return failed();
    }
    for (;;) {
      void* reply = nullptr;
      if (api.redisGetReplyFromReader(context.get(), &reply) != REDIS_OK) return nullptr;
      if (reply != nullptr) {
        guard.answered = true;
        return Reply(static_cast<redisReply*>(reply));
      }
      const std::size_t before = context->reader->len;
      if (!arm() || api.redisBufferRead(context.get()) != REDIS_OK) return failed();
      deadline += per_byte * static_cast<std::int64_t>(context->reader->len - before);
    }
  }

  RemoteOutcome connect(std::string& problem) {
    // hiredis is loaded here, by the first connection, so that a program that never names
    // a Redis never needs libhiredis (remote_hiredis.hpp). Missing, it is this tier's
    // failure like an unreachable server: a warning naming the library, never a failed build.
    const HiredisApi* api = nullptr;
    try {
      api = &hiredis();
    } catch (const Error& error) {
      return fail(error.what(), problem);
    }
    const BlockedSignal blocked(SIGPIPE);  // a closed connection: EPIPE, not a dead process
    std::string why;
    refused = false;  // not known yet: a failed resolution must not keep an earlier answer
    const std::string address = address_within(settings.url.host, settings.timeout, why);
    if (address.empty()) return fail(why, problem);
    const std::chrono::milliseconds left = time_left();
    if (left.count() < 1) return fail("no connection within " + std::to_string(settings.timeout.count()) + " ms (resolving '" + settings.url.host + "' used it)", problem);
    context.reset(api->redisConnectWithTimeout(address.c_str(), settings.url.port, to_timeval(left)));
    if (!context) return fail("cannot allocate a connection", problem);
    if (context->err != 0) {
      refused = context->err == REDIS_ERR_IO && std::string(context->errstr) == std::strerror(ECONNREFUSED);
      return fail("cannot connect: " + std::string(context->errstr), problem);
    }
    if (!settings.url.password.empty()) {
      std::vector<std::string_view> auth{"AUTH"};
      if (!settings.url.user.empty()) auth.push_back(settings.url.user);
      auth.push_back(settings.url.password);
      const Reply reply = send(auth);
      if (!reply) return fail("AUTH failed: " + why_not(), problem);
      if (reply->type == REDIS_REPLY_ERROR) return fail("authentication refused: " + reply_text(*reply), problem);
    }
    if (settings.url.db != 0) {
      const std::string db = std::to_string(settings.url.db);
      const Reply reply = send({"SELECT", db});
      if (!reply) return fail("SELECT failed: " + why_not(), problem);
      if (reply->type == REDIS_REPLY_ERROR) return fail("SELECT " + db + " refused: " + reply_text(*reply), problem);
    }
    return refuse_a_cluster(problem);
  }

  // The reply to one command, connecting first if needed; null with `outcome` skipped or
  // unavailable. An error reply that refuses this client drops the connection too.
  Reply command(const std::vector<std::string_view>& args, RemoteOutcome& outcome, std::string& problem,
                Access access = Access::read) {
    if (unsupported.set) {
      outcome = RemoteOutcome::unsupported;
      const std::lock_guard<std::mutex> lock(unsupported.mutex);
      problem = unsupported.why;
      return nullptr;
    }
    if (!context) {
      // Left alone until the back-off ends, or until Redis answered again on the other
      // connection (the lock's, which never waits it out): a builder whose write timed out
      // while Redis paused would otherwise build its next keys without the fleet lock for
      // the whole back-off, every other machine with them (issue 32).
      if (Clock::now() < retry_after && answered.load(std::memory_order_relaxed) <= failed_at.time_since_epoch().count()) {
        outcome = RemoteOutcome::skipped;
        problem = last_failure;
        return nullptr;
      }
    }
    if (!context) {
      deadline = Clock::now() + settings.timeout;  // connecting as a whole
      if ((outcome = connect(problem)) != RemoteOutcome::done) return nullptr;
    }
    deadline = Clock::now() + settings.timeout;  // the command and its whole reply
    Reply reply = send(args);
    if (!reply) {
      outcome = fail(std::string(args.front()) + " failed: " + why_not(), problem);
      return nullptr;
    }
    answered.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    if (reply->type == REDIS_REPLY_ERROR && refuses_access(*reply) && !(access == Access::write && is_noperm(*reply))) {
      outcome = fail(std::string(args.front()) + " refused: " + reply_text(*reply), problem);
      return nullptr;
    }
    if (is_cluster_reply(*reply)) {
      outcome = refuse_cluster(std::string(args.front()) + " answered " + reply_text(*reply), problem);
      return nullptr;
    }
    outcome = RemoteOutcome::done;
    return reply;
  }

  // Switches the tier off for good: the server is a Redis Cluster node.
  RemoteOutcome refuse_cluster(const std::string& sign, std::string& problem) {
    context.reset();
    {
      const std::lock_guard<std::mutex> lock(unsupported.mutex);
      if (unsupported.why.empty()) {
        unsupported.why = settings.url.redacted() + " is a Redis Cluster node (" + sign +
                          "): the remote tier needs one Redis server (a primary, with replicas if wanted), not a "
                          "cluster (docs/cache.md, \"Redis Cluster\"); it is off for this process, builds go on";
      }
      problem = unsupported.why;
    }
    unsupported.set = true;
    return RemoteOutcome::unsupported;
  }

  // Whether the server runs in cluster mode (INFO cluster says cluster_enabled:1). A server
  // that refuses INFO (an ACL without it) is taken as it is: a cluster shows itself by its
  // MOVED / ASK replies then (command()).
  RemoteOutcome refuse_a_cluster(std::string& problem) {
    Reply reply = send({"INFO", "cluster"});
    if (!reply) return fail("INFO cluster failed: " + why_not(), problem);
    if (reply->type == REDIS_REPLY_STRING && reply_text(*reply).find("cluster_enabled:1") != std::string::npos) {
      return refuse_cluster("INFO cluster: cluster_enabled:1", problem);
    }
    return RemoteOutcome::done;
  }
};

RemoteCache::RemoteCache(RemoteSettings settings)
    : settings_(std::move(settings)),
      connection_(std::make_unique<Connection>(settings_, unsupported_, answered_)),
      lock_connection_(std::make_unique<Connection>(settings_, unsupported_, answered_)) {
  writes_ = !settings_.trust || settings_.trust->writes();
}

RemoteCache::~RemoteCache() {
  {
    // Unlocks still pending get the back-off's time to be done: a process that ends right
    // after its build (one compile, the CLI) while Redis is paused would otherwise leave its
    // lock to its TTL, every other machine waiting 30 s for an entry that is there (issue
    // 32). A Redis that refuses connections holds no lock, and those are dropped at once
    // (release_pending), so a dead Redis does not hold the exit.
    std::unique_lock<std::mutex> lock(release_mutex_);
    release_wake_.wait_for(lock, settings_.backoff, [this] { return pending_.empty() && releasing_ == 0; });
    stopping_ = true;  // locks not released by now expire on their own
  }
  release_wake_.notify_all();
  if (releaser_.joinable()) releaser_.join();
}

RemoteOutcome RemoteCache::write_refused(const std::string& what, const std::string& reply, std::string& problem) {
  if (reply.rfind("NOPERM", 0) == 0) {
    // Only the first refusal says so; later writes are not tried (read_only).
    const bool was_on = writes_.exchange(false);
    problem = what + " refused: " + reply + ": this client may not write to " + settings_.url.redacted() +
              "; it stops writing values and locks and goes on reading" + (was_on ? "" : " (already off)");
    return RemoteOutcome::forbidden;
  }
  problem = what + " refused: " + reply;
  return RemoteOutcome::refused;
}

RemoteOutcome RemoteCache::get(const std::string& key, std::string& payload, std::string& problem) {
  const std::lock_guard<std::mutex> lock(mutex_);
  RemoteOutcome outcome{};
  const Reply reply = connection_->command({"GET", value_key(key)}, outcome, problem);
  if (!reply) return outcome;
  if (reply->type == REDIS_REPLY_NIL) return RemoteOutcome::missing;
  if (reply->type != REDIS_REPLY_STRING) {
    problem = "GET " + value_key(key) + " answered " +
              (reply->type == REDIS_REPLY_ERROR ? "the error " + reply_text(*reply)
                                                : "a reply of type " + std::to_string(reply->type));
    return RemoteOutcome::corrupt;
  }
  const std::string_view value(reply->str, reply->len);
  std::string_view entry_bytes = value;
  if (settings_.trust && settings_.trust->verifier) {
    std::string why;
    const std::optional<std::string_view> verified = verified_entry(*settings_.trust->verifier, value_key(key), value, why);
    if (!verified) {
      problem = "the value of " + value_key(key) + " is not verified: " + why;
      return RemoteOutcome::unverified;
    }
    entry_bytes = *verified;
  } else {
    entry_bytes = unchecked_entry(value);  // an unauthenticated tier, opted into
  }
  // Verified first, inflated second: nothing an untrusted writer chose is inflated. A value
  // without the compression magic is an entry written before compression, read as it is.
  std::string inflated;
  if (is_compressed_value(entry_bytes)) {
    std::string why;
    std::optional<std::string> entry = inflate_value(entry_bytes, why);
    if (!entry) {
      problem = "the value of " + value_key(key) + " is not a sound entry: " + why;
      return RemoteOutcome::corrupt;
    }
    inflated = std::move(*entry);
    entry_bytes = inflated;
  }
  DecodedEntry entry = decode_entry(key, std::string(entry_bytes));
  if (!entry.payload) {
    problem = "the value of " + value_key(key) + " is not a sound entry: " + entry.problem;
    return RemoteOutcome::corrupt;
  }
  payload = std::move(*entry.payload);
  return RemoteOutcome::done;
}

RemoteOutcome RemoteCache::put(const std::string& key, const std::string& payload, std::string& problem,
                               std::uint64_t* saved) {
  if (!writes()) return RemoteOutcome::read_only;
  const std::string name = value_key(key);
  const std::string entry = encode_entry(key, payload);
  // Compressed before it is signed: the signature covers the bytes Redis holds.
  std::string bytes = compress_value(entry);
  const std::uint64_t saved_bytes = entry.size() > bytes.size() ? entry.size() - bytes.size() : 0;
  if (settings_.trust && settings_.trust->signer) {
    bytes = sign_value(*settings_.trust->signer, name, bytes);
    if (bytes.empty()) {
      problem = "SET " + name + " not sent: OpenSSL could not sign the value";
      return RemoteOutcome::refused;
    }
  }
  const std::string ttl_ms = std::to_string(std::chrono::milliseconds(settings_.ttl).count());
  std::vector<std::string_view> args{"SET", name, bytes};
  if (settings_.ttl.count() > 0) args.insert(args.end(), {"PX", ttl_ms});
  const std::lock_guard<std::mutex> lock(mutex_);
  RemoteOutcome outcome{};
  const Reply reply = connection_->command(args, outcome, problem, Access::write);
  if (!reply) {
    // Written before this process releases a fleet lock (write_unwritten). Not a recipe
    // index: it merges what other machines added, and written late it would drop theirs.
    if ((outcome == RemoteOutcome::unavailable || outcome == RemoteOutcome::skipped) && key.rfind("recipes:", 0) != 0) {
      const std::lock_guard<std::mutex> keep(unwritten_mutex_);
      (void)keep_unwritten(name, std::move(bytes), Clock::now());
    }
    return outcome;
  }
  forget_unwritten(name);  // answered: an older kept value of the key must not follow it
  if (reply->type == REDIS_REPLY_STATUS) {
    if (saved != nullptr) *saved = saved_bytes;
    return RemoteOutcome::done;
  }
  return write_refused("SET " + name,
                       reply->type == REDIS_REPLY_ERROR ? reply_text(*reply)
                                                        : "a reply of type " + std::to_string(reply->type),
                       problem);
}

RemoteOutcome RemoteCache::remove(const std::string& key, std::string& problem) {
  if (!writes()) return RemoteOutcome::read_only;
  const std::string name = value_key(key);
  forget_unwritten(name);  // a value removed as bad is never written back later
  const std::lock_guard<std::mutex> lock(mutex_);
  RemoteOutcome outcome{};
  const Reply reply = connection_->command({"DEL", name}, outcome, problem, Access::write);
  if (!reply) return outcome;
  if (reply->type == REDIS_REPLY_INTEGER) return reply->integer != 0 ? RemoteOutcome::done : RemoteOutcome::missing;
  return write_refused("DEL " + name,
                       reply->type == REDIS_REPLY_ERROR ? reply_text(*reply)
                                                        : "a reply of type " + std::to_string(reply->type),
                       problem);
}

RemoteOutcome RemoteCache::lock(const std::string& flight, std::chrono::milliseconds ttl, std::string& token,
                                std::string& problem) {
  if (!writes()) return RemoteOutcome::read_only;
  const std::string candidate = new_token();
  const std::string name = lock_key(flight);
  const std::string ttl_ms = std::to_string(std::max<std::chrono::milliseconds::rep>(ttl.count(), 1));
  const std::lock_guard<std::mutex> lock(mutex_);
  RemoteOutcome outcome{};
  const Reply reply =
      connection_->command({"SET", name, candidate, "NX", "PX", ttl_ms}, outcome, problem, Access::write);
  if (!reply) {
    // No answer in time is not "not taken": a Redis that was paused runs the SET once it
    // goes on, and the lock is then held by a token nobody releases, every machine waiting
    // out its TTL (issue 32: 32 s after a 2 s pause). Released like a held lock that could
    // not be released at once: compare-and-delete with this token until done or expired.
    if (outcome == RemoteOutcome::unavailable) unlock_later(flight, candidate, Clock::now() + std::chrono::milliseconds(ttl));
    return outcome;
  }
  if (reply->type == REDIS_REPLY_NIL) return RemoteOutcome::missing;
  if (reply->type == REDIS_REPLY_STATUS) {
    token = candidate;
    return RemoteOutcome::done;
  }
  return write_refused("SET " + name + " NX",
                       reply->type == REDIS_REPLY_ERROR ? reply_text(*reply)
                                                        : "a reply of type " + std::to_string(reply->type),
                       problem);
}

// EXISTS of `name` on the value connection: `done` (1), `missing` (0), `refused` (another reply).
RemoteOutcome RemoteCache::exists(const std::string& name, std::string& problem) {
  RemoteOutcome outcome{};
  const Reply reply = connection_->command({"EXISTS", name}, outcome, problem);
  if (!reply) return outcome;
  if (reply->type != REDIS_REPLY_INTEGER) {
    problem = "EXISTS " + name + " answered a reply of type " + std::to_string(reply->type);
    return RemoteOutcome::refused;
  }
  return reply->integer != 0 ? RemoteOutcome::done : RemoteOutcome::missing;
}

RemoteOutcome RemoteCache::locked(const std::string& flight, Clock::time_point patience, std::string& problem) {
  while (true) {
    RemoteOutcome outcome{};
    bool refused = false;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      connection_->retry_after = {};  // a waiter's poll: the back-off would end its wait
      outcome = exists(lock_key(flight), problem);
      refused = connection_->refused;
    }
    if (outcome != RemoteOutcome::unavailable || refused || Clock::now() >= patience) return outcome;
    std::this_thread::sleep_for(release_retry);
  }
}

RemoteOutcome RemoteCache::stored(const std::string& key, std::string& problem) {
  const std::lock_guard<std::mutex> lock(mutex_);
  return exists(value_key(key), problem);
}

// The lock's compare-and-act in one EVAL, or (once EVAL was refused) as a GET and the act:
// not atomic, so a lock that expired and was taken by another machine between the two
// could be acted on (deleted: a duplicate build at worst; extended: its holder's TTL
// lengthened). Callers hold lock_mutex_. `act` is DEL or PEXPIRE with its arguments.
RemoteOutcome RemoteCache::compare_and(std::string_view script, std::vector<std::string_view> act,
                                       const std::string& flight, const std::string& token, std::string& problem) {
  lock_connection_->retry_after = {};  // its own connection: never waits out a back-off
  RemoteOutcome outcome{};
  const std::string name = lock_key(flight);
  if (!scripts_refused()) {
    std::vector<std::string_view> eval{"EVAL", script, "1", name, token};
    eval.insert(eval.end(), act.begin() + 2, act.end());
    const Reply reply = lock_connection_->command(eval, outcome, problem, Access::write);
    if (!reply) return outcome;
    if (reply->type == REDIS_REPLY_INTEGER) return reply->integer != 0 ? RemoteOutcome::done : RemoteOutcome::missing;
    const std::string why = reply->type == REDIS_REPLY_ERROR ? reply_text(*reply)
                                                             : "a reply of type " + std::to_string(reply->type);
    // NOPERM (an ACL without @scripting), an unknown command (a server without scripts):
    // from now on the two-step form, said once (scripts_refused()).
    std::lock_guard<std::mutex> lock(script_refusal_mutex_);
    if (script_refusal_.empty()) script_refusal_ = "EVAL on " + settings_.url.redacted() + " answered " + why;
    scripts_refused_ = true;
  }
  const Reply held = lock_connection_->command({"GET", name}, outcome, problem);
  if (!held) return outcome;
  if (held->type != REDIS_REPLY_STRING || reply_text(*held) != token) return RemoteOutcome::missing;
  const Reply reply = lock_connection_->command(act, outcome, problem, Access::write);
  if (!reply) return outcome;
  if (reply->type == REDIS_REPLY_INTEGER) return reply->integer != 0 ? RemoteOutcome::done : RemoteOutcome::missing;
  problem = std::string(act.front()) + " " + name + " answered " +
            (reply->type == REDIS_REPLY_ERROR ? reply_text(*reply) : "a reply of type " + std::to_string(reply->type));
  return RemoteOutcome::refused;
}

bool RemoteCache::keep_unwritten(const std::string& name, std::string bytes, Clock::time_point kept) {
  for (auto it = unwritten_.begin(); it != unwritten_.end(); ++it) {
    if (it->name != name) continue;
    unwritten_bytes_ -= it->bytes.size();
    unwritten_.erase(it);
    break;
  }
  if (unwritten_bytes_ + bytes.size() > unwritten_cap) return false;
  unwritten_bytes_ += bytes.size();
  unwritten_.push_back(UnwrittenValue{name, std::move(bytes), kept});
  return true;
}

void RemoteCache::forget_unwritten(const std::string& name) {
  const std::lock_guard<std::mutex> lock(unwritten_mutex_);
  if (unwritten_taken_out_) forgotten_taken_.push_back(name);
  for (auto it = unwritten_.begin(); it != unwritten_.end(); ++it) {
    if (it->name != name) continue;
    unwritten_bytes_ -= it->bytes.size();
    unwritten_.erase(it);
    return;
  }
}

RemoteOutcome RemoteCache::write_unwritten(std::string& problem, bool bounded) {
  std::vector<UnwrittenValue> values;
  {
    const std::lock_guard<std::mutex> lock(unwritten_mutex_);
    values.swap(unwritten_);
    unwritten_bytes_ = 0;
    unwritten_taken_out_ = true;
    forgotten_taken_.clear();
  }
  const auto forgotten = [this](const std::string& name) {  // callers hold unwritten_mutex_
    return std::find(forgotten_taken_.begin(), forgotten_taken_.end(), name) != forgotten_taken_.end();
  };
  RemoteOutcome outcome = RemoteOutcome::done;
  std::size_t next = 0;
  if (!values.empty() && writes()) {
    const std::string ttl_ms = std::to_string(std::chrono::milliseconds(settings_.ttl).count());
    lock_connection_->retry_after = {};  // the lock's connection never waits out a back-off
    const Clock::time_point budget_end = Clock::now() + unwritten_budget * settings_.timeout;
    for (; next < values.size(); ++next) {
      if (Clock::now() - values[next].kept > unwritten_age) continue;  // dropped: see unwritten_age
      if (bounded && next > 0 && Clock::now() >= budget_end) {  // the rest: the releaser thread's
        outcome = RemoteOutcome::unavailable;
        break;
      }
      {
        const std::lock_guard<std::mutex> lock(unwritten_mutex_);
        if (forgotten(values[next].name)) continue;
      }
      std::vector<std::string_view> args{"SET", values[next].name, values[next].bytes};
      if (settings_.ttl.count() > 0) args.insert(args.end(), {"PX", ttl_ms});
      RemoteOutcome sent{};
      const Reply reply = lock_connection_->command(args, sent, problem, Access::write);
      if (reply && reply->type == REDIS_REPLY_ERROR) {
        std::string refusal;  // NOPERM switches writes off, as for any write; the value is dropped
        (void)write_refused("SET " + values[next].name, reply_text(*reply), refusal);
      }
      // Unanswered again: kept, with the ones after it, unless nothing listens any more
      // (Redis gone: no lock to release after them either).
      if (!reply && (sent == RemoteOutcome::unavailable || sent == RemoteOutcome::skipped)) {
        outcome = lock_connection_->refused ? RemoteOutcome::done : RemoteOutcome::unavailable;
        break;
      }
    }
  }
  const std::lock_guard<std::mutex> lock(unwritten_mutex_);
  if (outcome == RemoteOutcome::unavailable) {
    // Back in front of anything kept meanwhile; a newer value of the same name wins, and
    // one forgotten meanwhile stays forgotten.
    std::vector<UnwrittenValue> newer;
    newer.swap(unwritten_);
    unwritten_bytes_ = 0;
    for (std::size_t i = next; i < values.size(); ++i) {
      if (!forgotten(values[i].name)) (void)keep_unwritten(values[i].name, std::move(values[i].bytes), values[i].kept);
    }
    for (UnwrittenValue& value : newer) (void)keep_unwritten(value.name, std::move(value.bytes), value.kept);
  }
  unwritten_taken_out_ = false;
  forgotten_taken_.clear();
  return outcome;
}

RemoteOutcome RemoteCache::unlock(const std::string& flight, const std::string& token, Clock::time_point expires) {
  std::string problem;
  RemoteOutcome outcome{};
  {
    const std::lock_guard<std::mutex> lock(lock_mutex_);
    const std::string name = lock_key(flight);
    outcome = write_unwritten(problem, true);
    if (outcome == RemoteOutcome::done) outcome = compare_and(compare_and_delete, {"DEL", name}, flight, token, problem);
  }
  if (outcome == RemoteOutcome::unavailable) unlock_later(flight, token, expires);
  return outcome;
}

void RemoteCache::unlock_later(const std::string& flight, const std::string& token, Clock::time_point expires) {
  std::lock_guard<std::mutex> lock(release_mutex_);
  if (stopping_ || Clock::now() >= expires) return;
  pending_.push_back(PendingUnlock{flight, token, expires});
  if (!releaser_.joinable()) {
    try {
      releaser_ = std::thread([this] { release_pending(); });
    } catch (...) {
      pending_.clear();  // no thread to be had: the locks expire on their own
      return;
    }
  }
  release_wake_.notify_all();
}

void RemoteCache::release_pending() noexcept {
  std::unique_lock<std::mutex> lock(release_mutex_);
  while (!stopping_) {
    if (pending_.empty()) {
      release_wake_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
      continue;
    }
    std::vector<PendingUnlock> trying;
    trying.swap(pending_);
    releasing_ = trying.size();
    lock.unlock();
    std::vector<PendingUnlock> again;
    for (PendingUnlock& pending : trying) {
      if (Clock::now() >= pending.expires) continue;  // expired: nothing left to release
      RemoteOutcome outcome = RemoteOutcome::unavailable;
      bool gone = false;  // nothing listens on the port: no lock left to release
      try {
        std::string problem;
        const std::lock_guard<std::mutex> turn(lock_mutex_);
        const std::string name = lock_key(pending.flight);
        outcome = write_unwritten(problem, false);
        if (outcome == RemoteOutcome::done) {
          outcome = compare_and(compare_and_delete, {"DEL", name}, pending.flight, pending.token, problem);
        }
        gone = lock_connection_->refused;
      } catch (...) {
        // Out of memory building the command: tried again next round.
      }
      if ((outcome == RemoteOutcome::unavailable || outcome == RemoteOutcome::skipped) && !gone) {
        again.push_back(std::move(pending));
      }
    }
    lock.lock();
    for (PendingUnlock& pending : again) pending_.push_back(std::move(pending));
    releasing_ = 0;
    if (pending_.empty()) release_wake_.notify_all();  // the destructor may wait for this
    if (!pending_.empty()) release_wake_.wait_for(lock, release_retry, [this] { return stopping_; });
  }
}

RemoteOutcome RemoteCache::renew(const std::string& flight, const std::string& token, std::chrono::milliseconds ttl,
                                 std::string& problem) {
  const std::string ttl_ms = std::to_string(std::max<std::chrono::milliseconds::rep>(ttl.count(), 1));
  const std::lock_guard<std::mutex> lock(lock_mutex_);
  const std::string name = lock_key(flight);
  return compare_and(compare_and_extend, {"PEXPIRE", name, ttl_ms}, flight, token, problem);
}

std::string RemoteCache::script_refusal() const {
  std::lock_guard<std::mutex> lock(script_refusal_mutex_);
  return script_refusal_;
}

RemoteOutcome RemoteCache::ping(std::string& problem) {
  const std::lock_guard<std::mutex> lock(mutex_);
  connection_->retry_after = {};
  RemoteOutcome outcome{};
  const Reply reply = connection_->command({"PING"}, outcome, problem);
  if (!reply) return outcome;
  if (reply->type == REDIS_REPLY_ERROR) {
    problem = "PING answered " + reply_text(*reply);
    return RemoteOutcome::refused;
  }
  return RemoteOutcome::done;
}

#else  // without hiredis

bool remote_built_in() noexcept { return false; }

struct RemoteCache::Connection {};

namespace {

RemoteOutcome not_built_in(std::string& problem) {
  problem = "this cujit was built without hiredis (libhiredis-dev): no remote tier";
  return RemoteOutcome::unavailable;
}

}  // namespace

RemoteCache::RemoteCache(RemoteSettings settings) : settings_(std::move(settings)) { writes_ = false; }
RemoteCache::~RemoteCache() = default;
RemoteOutcome RemoteCache::get(const std::string&, std::string&, std::string& problem) { return not_built_in(problem); }
RemoteOutcome RemoteCache::put(const std::string&, const std::string&, std::string& problem, std::uint64_t*) {
  return not_built_in(problem);
}
RemoteOutcome RemoteCache::write_refused(const std::string&, const std::string&, std::string& problem) {
  return not_built_in(problem);
}
RemoteOutcome RemoteCache::lock(const std::string&, std::chrono::milliseconds, std::string&, std::string& problem) {
  return not_built_in(problem);
}
RemoteOutcome RemoteCache::locked(const std::string&, Clock::time_point, std::string& problem) {
  return not_built_in(problem);
}
RemoteOutcome RemoteCache::stored(const std::string&, std::string& problem) { return not_built_in(problem); }
RemoteOutcome RemoteCache::exists(const std::string&, std::string& problem) { return not_built_in(problem); }
RemoteOutcome RemoteCache::remove(const std::string&, std::string& problem) { return not_built_in(problem); }
RemoteOutcome RemoteCache::unlock(const std::string&, const std::string&, Clock::time_point) {
  return RemoteOutcome::unavailable;
}
std::string RemoteCache::script_refusal() const { return {}; }
RemoteOutcome RemoteCache::renew(const std::string&, const std::string&, std::chrono::milliseconds,
                                 std::string& problem) {
  return not_built_in(problem);
}
RemoteOutcome RemoteCache::ping(std::string& problem) { return not_built_in(problem); }

#endif

}  // namespace cujit::detail
