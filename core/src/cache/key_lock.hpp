#pragma once
// One build per key across processes: a lock file per key in the disk tier's directory,
// <dir>/<key>.lock (beside the write lock <dir>/.lock; a fan-out directory holds only
// entries and their temporary files), locked with flock(2) so that the kernel
// releases it when its holder dies (a waiter never waits on a dead builder). The holder
// builds and writes the entry, then removes the lock file and releases it; a waiter that
// gets the lock re-checks the disk tier first (the holder has written the entry there).
//
// A lock file can vanish under a waiter (its holder removed it when done, or a walk swept
// it unheld): a lock is held only on the file that the path names when the lock is
// granted, otherwise the waiter opens the path again. Nothing here throws.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace cujit::detail {

// The name of the lock file for `key` (a 64-hex-digit digest) in the cache directory.
std::string lock_name(const std::string& key);
// Whether `name` is one cujit gives a lock file in the cache directory (<key>.lock, the key
// in 64 lowercase hex digits): walks remove such files when no process holds them, and
// nothing else.
bool is_lock_name(std::string_view name);

class KeyLock {
 public:
  KeyLock() = default;
  KeyLock(int fd, std::filesystem::path path) noexcept : fd_(fd), path_(std::move(path)) {}
  ~KeyLock();
  KeyLock(KeyLock&& other) noexcept;
  KeyLock& operator=(KeyLock&& other) noexcept;
  KeyLock(const KeyLock&) = delete;
  KeyLock& operator=(const KeyLock&) = delete;
  bool held() const noexcept { return fd_ >= 0; }

 private:
  void release() noexcept;
  int fd_ = -1;
  std::filesystem::path path_;
};

struct KeyLockResult {
  KeyLock lock;            // not held when `problem` is set or the wait timed out
  bool waited = false;     // another process held it when asked
  bool timed_out = false;  // held by another process for longer than the timeout
  std::string problem;     // why it could not be taken (not a regular file, permission...)
};

// Takes the lock of `key` under `directory` (the disk tier's resolved directory), waiting
// at most `timeout` for another process to release it. `fault` is CacheConfig::fault
// ("key-lock" before the lock file is opened).
KeyLockResult lock_key(const std::filesystem::path& directory, const std::string& key,
                       std::chrono::milliseconds timeout, const std::function<int(std::string_view)>& fault);

// Removes the lock file `name` in the directory `dir_fd` when no process holds it and it
// is still the regular file (device and inode) a walk found; whether it removed it.
bool remove_unheld_lock(int dir_fd, const std::string& name, dev_t device, ino_t inode);

}  // namespace cujit::detail
