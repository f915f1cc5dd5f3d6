#include "cache/remote_cache.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <string_view>
#include <vector>

#include "cache/disk_cache.hpp"
#include "cujit/cache_key.hpp"
#include "support/library_identity.hpp"

#if CUJIT_HAVE_HIREDIS
#include <hiredis/hiredis.h>
#endif

namespace cujit::detail {
namespace {

using Clock = std::chrono::steady_clock;

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
    return sha256_hex(file_identity(library)).substr(0, 16);
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

#if CUJIT_HAVE_HIREDIS

bool remote_built_in() noexcept { return true; }

namespace {

struct ReplyFree {
  void operator()(redisReply* reply) const noexcept { freeReplyObject(reply); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;
struct ContextFree {
  void operator()(redisContext* context) const noexcept { redisFree(context); }
};
using Context = std::unique_ptr<redisContext, ContextFree>;

// Writing to a connection Redis has closed raises SIGPIPE, whose default action ends the
// process. A library must not change the process's signal handling, so the signal is
// blocked in this thread for the call, and one it raised is taken off the queue.
class SigpipeBlocked {
 public:
  SigpipeBlocked() noexcept {
    ::sigemptyset(&pipe_);
    ::sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    ::sigpending(&pending);
    was_pending_ = ::sigismember(&pending, SIGPIPE) == 1;
    ::pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
  }
  ~SigpipeBlocked() {
    sigset_t pending;
    ::sigpending(&pending);
    if (!was_pending_ && ::sigismember(&pending, SIGPIPE) == 1) {
      const timespec now{};
      ::sigtimedwait(&pipe_, nullptr, &now);
    }
    ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  sigset_t pipe_{}, previous_{};
  bool was_pending_ = false;
};

timeval to_timeval(std::chrono::milliseconds time) {
  return timeval{static_cast<time_t>(time.count() / 1000), static_cast<suseconds_t>(time.count() % 1000 * 1000)};
}

std::string reply_text(const redisReply& reply) { return std::string(reply.str, reply.len); }

// Error replies that say this client may not use the server: the connection is no use.
bool refuses_access(const redisReply& reply) {
  const std::string text = reply_text(reply);
  return text.rfind("NOAUTH", 0) == 0 || text.rfind("WRONGPASS", 0) == 0 || text.rfind("NOPERM", 0) == 0 ||
         text.find("invalid password") != std::string::npos;
}

}  // namespace

struct RemoteCache::Connection {
  explicit Connection(const RemoteSettings& of) : settings(of) {}

  const RemoteSettings& settings;
  Context context;
  Clock::time_point retry_after{};
  std::string last_failure;

  RemoteOutcome fail(std::string why, std::string& problem) {
    context.reset();
    retry_after = Clock::now() + settings.backoff;
    last_failure = settings.url.redacted() + ": " + std::move(why);
    problem = last_failure + " (remote tier left alone for " + std::to_string(settings.backoff.count()) + " ms)";
    return RemoteOutcome::unavailable;
  }

  // One command on `context`, already connected; null after an I/O error or timeout.
  Reply send(const std::vector<std::string_view>& args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (std::string_view arg : args) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    const SigpipeBlocked blocked;
    return Reply(static_cast<redisReply*>(
        redisCommandArgv(context.get(), static_cast<int>(argv.size()), argv.data(), lengths.data())));
  }

  RemoteOutcome connect(std::string& problem) {
    const SigpipeBlocked blocked;
    context.reset(redisConnectWithTimeout(settings.url.host.c_str(), settings.url.port, to_timeval(settings.timeout)));
    if (!context) return fail("cannot allocate a connection", problem);
    if (context->err != 0) return fail("cannot connect: " + std::string(context->errstr), problem);
    if (redisSetTimeout(context.get(), to_timeval(settings.timeout)) != REDIS_OK) {
      return fail("cannot set the timeout: " + std::string(context->errstr), problem);
    }
    if (!settings.url.password.empty()) {
      std::vector<std::string_view> auth{"AUTH"};
      if (!settings.url.user.empty()) auth.push_back(settings.url.user);
      auth.push_back(settings.url.password);
      const Reply reply = send(auth);
      if (!reply) return fail("AUTH failed: " + std::string(context->errstr), problem);
      if (reply->type == REDIS_REPLY_ERROR) return fail("authentication refused: " + reply_text(*reply), problem);
    }
    if (settings.url.db != 0) {
      const std::string db = std::to_string(settings.url.db);
      const Reply reply = send({"SELECT", db});
      if (!reply) return fail("SELECT failed: " + std::string(context->errstr), problem);
      if (reply->type == REDIS_REPLY_ERROR) return fail("SELECT " + db + " refused: " + reply_text(*reply), problem);
    }
    return RemoteOutcome::done;
  }

  // The reply to one command, connecting first if needed; null with `outcome` skipped or
  // unavailable. An error reply that refuses this client drops the connection too.
  Reply command(const std::vector<std::string_view>& args, RemoteOutcome& outcome, std::string& problem) {
    if (!context) {
      if (Clock::now() < retry_after) {
        outcome = RemoteOutcome::skipped;
        problem = last_failure;
        return nullptr;
      }
      if ((outcome = connect(problem)) != RemoteOutcome::done) return nullptr;
    }
    Reply reply = send(args);
    if (!reply) {
      outcome = fail(std::string(args.front()) + " failed: " + std::string(context->errstr), problem);
      return nullptr;
    }
    if (reply->type == REDIS_REPLY_ERROR && refuses_access(*reply)) {
      outcome = fail(std::string(args.front()) + " refused: " + reply_text(*reply), problem);
      return nullptr;
    }
    outcome = RemoteOutcome::done;
    return reply;
  }
};

RemoteCache::RemoteCache(RemoteSettings settings)
    : settings_(std::move(settings)),
      connection_(std::make_unique<Connection>(settings_)),
      renewal_connection_(std::make_unique<Connection>(settings_)) {}

RemoteCache::~RemoteCache() = default;

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
  DecodedEntry entry = decode_entry(key, std::string(reply->str, reply->len));
  if (!entry.payload) {
    problem = "the value of " + value_key(key) + " is not a sound entry: " + entry.problem;
    return RemoteOutcome::corrupt;
  }
  payload = std::move(*entry.payload);
  return RemoteOutcome::done;
}

RemoteOutcome RemoteCache::put(const std::string& key, const std::string& payload, std::string& problem) {
  const std::string bytes = encode_entry(key, payload);
  const std::string name = value_key(key);
  const std::string ttl_ms = std::to_string(std::chrono::milliseconds(settings_.ttl).count());
  std::vector<std::string_view> args{"SET", name, bytes};
  if (settings_.ttl.count() > 0) args.insert(args.end(), {"PX", ttl_ms});
  const std::lock_guard<std::mutex> lock(mutex_);
  RemoteOutcome outcome{};
  const Reply reply = connection_->command(args, outcome, problem);
  if (!reply) return outcome;
  if (reply->type == REDIS_REPLY_STATUS) return RemoteOutcome::done;
  problem = "SET " + name + " refused: " +
            (reply->type == REDIS_REPLY_ERROR ? reply_text(*reply) : "a reply of type " + std::to_string(reply->type));
  return RemoteOutcome::refused;
}

RemoteOutcome RemoteCache::lock(const std::string& flight, std::chrono::milliseconds ttl, std::string& token,
                                std::string& problem) {
  const std::string candidate = new_token();
  const std::string name = lock_key(flight);
  const std::string ttl_ms = std::to_string(std::max<std::chrono::milliseconds::rep>(ttl.count(), 1));
  const std::lock_guard<std::mutex> lock(mutex_);
  RemoteOutcome outcome{};
  const Reply reply = connection_->command({"SET", name, candidate, "NX", "PX", ttl_ms}, outcome, problem);
  if (!reply) return outcome;
  if (reply->type == REDIS_REPLY_NIL) return RemoteOutcome::missing;
  if (reply->type == REDIS_REPLY_STATUS) {
    token = candidate;
    return RemoteOutcome::done;
  }
  problem = "SET " + name + " NX refused: " +
            (reply->type == REDIS_REPLY_ERROR ? reply_text(*reply) : "a reply of type " + std::to_string(reply->type));
  return RemoteOutcome::refused;
}

RemoteOutcome RemoteCache::locked(const std::string& flight, std::string& problem) {
  const std::lock_guard<std::mutex> lock(mutex_);
  RemoteOutcome outcome{};
  const Reply reply = connection_->command({"EXISTS", lock_key(flight)}, outcome, problem);
  if (!reply) return outcome;
  if (reply->type != REDIS_REPLY_INTEGER) {
    problem = "EXISTS " + lock_key(flight) + " answered a reply of type " + std::to_string(reply->type);
    return RemoteOutcome::refused;
  }
  return reply->integer != 0 ? RemoteOutcome::done : RemoteOutcome::missing;
}

void RemoteCache::unlock(const std::string& flight, const std::string& token) {
  const std::lock_guard<std::mutex> lock(mutex_);
  RemoteOutcome outcome{};
  std::string problem;
  // A failure leaves the lock to expire: its TTL bounds it.
  (void)connection_->command({"EVAL", compare_and_delete, "1", lock_key(flight), token}, outcome, problem);
}

RemoteOutcome RemoteCache::renew(const std::string& flight, const std::string& token, std::chrono::milliseconds ttl,
                                 std::string& problem) {
  const std::string ttl_ms = std::to_string(std::max<std::chrono::milliseconds::rep>(ttl.count(), 1));
  const std::lock_guard<std::mutex> lock(renewal_mutex_);
  renewal_connection_->retry_after = {};
  RemoteOutcome outcome{};
  const Reply reply = renewal_connection_->command({"EVAL", compare_and_extend, "1", lock_key(flight), token, ttl_ms},
                                                   outcome, problem);
  if (!reply) return outcome;
  if (reply->type != REDIS_REPLY_INTEGER) {
    problem = "EVAL (extending " + lock_key(flight) + ") answered " +
              (reply->type == REDIS_REPLY_ERROR ? reply_text(*reply) : "a reply of type " + std::to_string(reply->type));
    return RemoteOutcome::refused;
  }
  return reply->integer != 0 ? RemoteOutcome::done : RemoteOutcome::missing;
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

RemoteCache::RemoteCache(RemoteSettings settings) : settings_(std::move(settings)) {}
RemoteCache::~RemoteCache() = default;
RemoteOutcome RemoteCache::get(const std::string&, std::string&, std::string& problem) { return not_built_in(problem); }
RemoteOutcome RemoteCache::put(const std::string&, const std::string&, std::string& problem) {
  return not_built_in(problem);
}
RemoteOutcome RemoteCache::lock(const std::string&, std::chrono::milliseconds, std::string&, std::string& problem) {
  return not_built_in(problem);
}
RemoteOutcome RemoteCache::locked(const std::string&, std::string& problem) { return not_built_in(problem); }
void RemoteCache::unlock(const std::string&, const std::string&) {}
RemoteOutcome RemoteCache::renew(const std::string&, const std::string&, std::chrono::milliseconds,
                                 std::string& problem) {
  return not_built_in(problem);
}
RemoteOutcome RemoteCache::ping(std::string& problem) { return not_built_in(problem); }

#endif

}  // namespace cujit::detail
