#pragma once
// Sets NRT's global switch for one test and restores it, so tests do not depend on order.

#include "cujit/nrt.hpp"

namespace cujit::test {

class NrtSwitch {
 public:
  explicit NrtSwitch(bool on) : before_(nrt::enabled()) { nrt::set_enabled(on); }
  ~NrtSwitch() { nrt::set_enabled(before_); }
  NrtSwitch(const NrtSwitch&) = delete;
  NrtSwitch& operator=(const NrtSwitch&) = delete;

 private:
  bool before_;
};

}  // namespace cujit::test
