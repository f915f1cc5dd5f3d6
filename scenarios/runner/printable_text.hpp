#pragma once
// Text from outside (a scenario's name, a vendor log, a file's contents) made safe to print
// on a terminal: one shared rule for the scenario bundle and the cujit command.

#include <string>
#include <string_view>

namespace cujit::scenarios {

// `text` with every control character (C0 but tab, DEL, and the C1 controls U+0080-U+009F)
// and every byte that is not part of valid UTF-8 written as an escape ("\n", "\r", "\x1b",
// "\xc2\x9b"); everything else as it is. A newline in a name cannot start a line of its own
// ("verdict: as expected") and an ESC cannot reach the terminal. The backslash is left as it
// is, so that printing text that is already printable changes nothing (idempotent).
std::string printable_text(std::string_view text);

}  // namespace cujit::scenarios
