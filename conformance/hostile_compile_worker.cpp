// A compile worker that misbehaves on purpose, for the Hostile compile-worker tests: the
// mode comes from argv[1], else from CUJIT_HOSTILE_WORKER_MODE (when libcujit starts it
// itself, through CUJIT_COMPILE_WORKER).
//   crash    reads the request, then dies of SIGSEGV
//   hang     reads the request, then sleeps far past any test's timeout
//   flood    writes to stdout without end
//   garbage  answers bytes that are no reply, exit 0
//   fail     writes a message to stderr, exit 3
//   fds      writes the descriptors it holds to stderr, exit 4
#include <dirent.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void read_request() {
  char buffer[65536];
  while (::read(STDIN_FILENO, buffer, sizeof buffer) > 0) {
  }
}

void list_descriptors() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return;
  const int own = ::dirfd(dir);
  std::string list = "fds:";
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.' || std::atoi(entry->d_name) == own) continue;
    list += std::string(" ") + entry->d_name;
  }
  ::closedir(dir);
  std::fprintf(stderr, "%s\n", list.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const char* env = std::getenv("CUJIT_HOSTILE_WORKER_MODE");
  const std::string mode = argc > 1 ? argv[1] : env != nullptr ? env : "";
  if (mode == "flood") {
    const std::vector<char> block(1 << 16, 'x');
    for (;;) {
      if (::write(STDOUT_FILENO, block.data(), block.size()) < 0) return 1;
    }
  }
  read_request();
  if (mode == "crash") std::raise(SIGSEGV);
  if (mode == "hang") {
    for (;;) ::sleep(1000);
  }
  if (mode == "garbage") {
    std::fputs("this is not a compile result", stdout);
    return 0;
  }
  if (mode == "fail") {
    std::fputs("hostile worker: refusing to compile\n", stderr);
    return 3;
  }
  if (mode == "fds") {
    list_descriptors();
    return 4;
  }
  std::fprintf(stderr, "hostile worker: unknown mode '%s'\n", mode.c_str());
  return 5;
}
