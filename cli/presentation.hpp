#pragma once
// How much the cujit command says and whether it colours it: --quiet (results and errors
// only), --verbose (also each child's command line and output as it runs), and colour on a
// terminal unless NO_COLOR is set (https://no-color.org) or --color says otherwise.
// Results go to standard output, progress and diagnostics to standard error.

#include <iosfwd>
#include <string>
#include <string_view>

namespace cujit::cli {

enum class Verbosity { quiet, normal, verbose };

// --color: auto (a terminal and NO_COLOR unset or empty), always, never.
enum class ColorChoice { automatic, always, never };

// Whether to colour: `always` and `never` as said; `automatic` when standard output is a
// terminal and NO_COLOR (`no_color`, null when unset) is unset or empty.
bool want_color(ColorChoice choice, bool stdout_is_terminal, const char* no_color);

// Set once by main from the global options; read by every command.
void set_presentation(Verbosity verbosity, bool color);
Verbosity verbosity();
bool verbose();

// Standard error for progress lines ("[2/12] conformance ..."), or a stream that drops
// them under --quiet.
std::ostream& progress();

enum class Tone { good, bad, warn };

// `text` in the tone's colour when colour is on, else as it is.
std::string paint(Tone tone, std::string_view text);

}  // namespace cujit::cli
