#include "support/redis_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <thread>
#include <utility>

extern char** environ;

namespace cujit::test {
namespace {

// A loopback port nobody listens on now: the kernel's pick for port 0.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const timeval timeout{2, 0};  // a stopped server must not hang a test
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads one reply of the simple kinds the tests use (no arrays).
std::string read_reply(int fd) {
  std::string buffer;
  char chunk[65536];
  const auto fill = [&]() {
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
    return true;
  };
  while (buffer.find("\r\n") == std::string::npos) {
    if (!fill()) return {};
  }
  const std::string line = buffer.substr(0, buffer.find("\r\n"));
  if (line.empty() || line[0] != '$') return line;
  const long length = std::strtol(line.c_str() + 1, nullptr, 10);
  if (length < 0) return "(nil)";
  const std::size_t start = line.size() + 2;
  while (buffer.size() < start + static_cast<std::size_t>(length) + 2) {
    if (!fill()) return {};
  }
  return buffer.substr(start, static_cast<std::size_t>(length));
}

std::string encode_command(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& arg : args) out += "$" + std::to_string(arg.size()) + "\r\n" + arg + "\r\n";
  return out;
}

}  // namespace

std::string redis_server_program() {
  for (const char* candidate : {"/usr/bin/redis-server", "/usr/local/bin/redis-server", "/usr/sbin/redis-server"}) {
    if (::access(candidate, X_OK) == 0) return candidate;
  }
  return {};
}

RedisServer::RedisServer(std::vector<std::string> options) {
  const std::string program = redis_server_program();
  if (program.empty()) {
    problem_ = "redis-server is not installed (ci/setup.sh installs it)";
    return;
  }
  // Another process may take the port between the pick and the start: a few tries.
  for (int attempt = 0; attempt < 3 && pid_ < 0; ++attempt) {
    port_ = free_port();
    std::vector<std::string> argv{program, "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                  "--save", "", "--appendonly", "no", "--dir", dir_.path().string(),
                                  "--logfile", (dir_.path() / "redis.log").string(), "--daemonize", "no"};
    argv.insert(argv.end(), options.begin(), options.end());
    std::vector<char*> args;
    for (std::string& arg : argv) args.push_back(arg.data());
    args.push_back(nullptr);
    pid_t pid = -1;
    if (::posix_spawn(&pid, program.c_str(), nullptr, nullptr, args.data(), environ) != 0) {
      problem_ = "cannot start " + program;
      return;
    }
    pid_ = pid;
    const std::string password = [&] {
      for (std::size_t i = 0; i + 1 < options.size(); ++i) {
        if (options[i] == "--requirepass") return options[i + 1];
      }
      return std::string();
    }();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (command({"PING"}, password) != "+PONG") {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_ || std::chrono::steady_clock::now() > deadline) {
        if (::waitpid(pid_, &status, WNOHANG) == 0) {
          ::kill(pid_, SIGKILL);
          ::waitpid(pid_, &status, 0);
        }
        pid_ = -1;
        problem_ = "redis-server on port " + std::to_string(port_) + " did not answer PING";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (pid_ > 0) problem_.clear();
  }
}

RedisServer::~RedisServer() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);  // a test may have stopped it
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

std::string RedisServer::url(const std::string& password) const {
  return "redis://" + (password.empty() ? std::string() : ":" + password + "@") + "127.0.0.1:" + std::to_string(port_);
}

void RedisServer::kill(int signal) const {
  if (pid_ > 0) ::kill(pid_, signal);
}

std::string RedisServer::command(const std::vector<std::string>& args, const std::string& password) const {
  const int fd = connect_to(port_);
  if (fd < 0) return {};
  std::string reply;
  if (!password.empty() && (!send_all(fd, encode_command({"AUTH", password})) || read_reply(fd) != "+OK")) {
    ::close(fd);
    return {};
  }
  if (send_all(fd, encode_command(args))) reply = read_reply(fd);
  ::close(fd);
  return reply;
}

}  // namespace cujit::test
