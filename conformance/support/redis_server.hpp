#pragma once
// A real redis-server for the remote tier's tests: started on a free loopback port with
// its files in a temporary directory (no persistence), stopped (and its directory removed)
// by the destructor. Also a minimal client (RESP over a socket) for what the tests do
// behind the cache's back: write garbage, read a lock, look at a TTL.

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "support/fixtures.hpp"

namespace cujit::test {

// The redis-server executable, or empty when it is not installed (ci/setup.sh installs it).
std::string redis_server_program();

class RedisServer {
 public:
  // Extra configuration as command-line pairs, e.g. {"--requirepass", "secret"}.
  explicit RedisServer(std::vector<std::string> options = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Empty when it answers PING, else why it did not start.
  const std::string& problem() const noexcept { return problem_; }
  int port() const noexcept { return port_; }
  std::string url(const std::string& password = {}) const;
  void kill(int signal) const;  // SIGKILL (dead), SIGSTOP (slow), SIGCONT

  // One command; the reply as text: "+OK", "-ERR ...", ":1", "$<bytes>" as the bytes, or
  // "(nil)". Empty on a connection problem.
  std::string command(const std::vector<std::string>& args, const std::string& password = {}) const;

 private:
  TempDir dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string problem_;
};

}  // namespace cujit::test
