#pragma once
// A signal blocked in the calling thread for one call, and taken off the thread's queue if
// the call raised it. Two system calls raise a signal whose default action ends the
// process for what is only a failed cache operation: write(2) past RLIMIT_FSIZE raises
// SIGXFSZ (and, when it is blocked, fails with EFBIG), a write to a connection Redis has
// closed raises SIGPIPE (and fails with EPIPE). Both signals are sent to the thread that
// made the call, so blocking them in that thread turns them into the error return. A
// library must not change the process's signal handling (its dispositions, another
// thread's mask), so this is all it does; a signal of the same kind that was already
// pending before the call is left pending, as found.

#include <pthread.h>
#include <signal.h>
#include <time.h>

namespace cujit::detail {

class BlockedSignal {
 public:
  explicit BlockedSignal(int signal) noexcept : signal_(signal) {
    ::sigemptyset(&set_);
    ::sigaddset(&set_, signal_);
    sigset_t pending;
    ::sigemptyset(&pending);
    ::sigpending(&pending);
    was_pending_ = ::sigismember(&pending, signal_) == 1;
    ::pthread_sigmask(SIG_BLOCK, &set_, &previous_);
  }
  ~BlockedSignal() {
    sigset_t pending;
    ::sigemptyset(&pending);
    ::sigpending(&pending);
    if (!was_pending_ && ::sigismember(&pending, signal_) == 1) {
      const timespec now{};
      ::sigtimedwait(&set_, nullptr, &now);
    }
    ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  BlockedSignal(const BlockedSignal&) = delete;
  BlockedSignal& operator=(const BlockedSignal&) = delete;

 private:
  int signal_;
  sigset_t set_{}, previous_{};
  bool was_pending_ = false;
};

}  // namespace cujit::detail
