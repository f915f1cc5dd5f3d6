#include "heartbeat.hpp"

#include <ostream>

#include "output.hpp"
#include "presentation.hpp"

namespace cujit::cli {

void Heartbeat::beat(const Tail& tail) const {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::string running = tail.last_line_starting("[ RUN      ] ");
  std::string last = tail.last_line();
  constexpr std::size_t shown_chars = 160;
  if (last.size() > shown_chars) last = last.substr(0, shown_chars) + "...";
  progress() << "    " << step_ << ": " << static_cast<long>(seconds) << " s"
             << (running.empty() ? std::string() : ", in " + printable(running))
             << (last.empty() ? std::string() : "; last: " + printable(last)) << "\n";
}

}  // namespace cujit::cli
