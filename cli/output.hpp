#pragma once
// Checked output for the cujit command: every file it writes and its standard output.
// A write that fails is an error naming the path, never a silent exit 0.

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace cujit::cli {

// A usage or environment error (exit 2) whose message names the argument or path at fault.
class CliError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Text from outside the command (a file's name or contents, a child's output) as it may be
// printed on a terminal: control characters (newlines, ESC, C1 controls), invalid UTF-8
// bytes and backslashes written as escapes (\n, \x1b, \\), so that no input can forge
// a line of the command's output or send the terminal a sequence.
std::string printable(std::string_view text);

// A message that may hold several lines of outside text (an error with a vendor log): each
// line printable(), the lines after the first indented by two spaces, so that none of them
// reads as a line of the command's own.
std::string printable_lines(std::string_view text);

// A chunk of a child's output passed through as it arrives (a report script's tables, a
// suite's output under --verbose, a vendor library's stderr): lines and tabs kept, every
// other C0 control and DEL escaped (\x1b), so that what a hostile input made the child
// print cannot reach the terminal as a sequence. Byte by byte, so a chunk may end anywhere.
std::string printable_stream(std::string_view chunk);

// "--out 'DIR'" style naming for messages: the text in single quotes, printable().
std::string shown(const std::string& text);

// A file written in pieces (a child's log, as it arrives). The first failed write is kept
// and later writes are dropped, so that a child's output can be drained to its end before
// the failure is reported; finish() closes and throws CliError naming the path.
class OutputFile {
 public:
  // Creates or truncates `path`; throws CliError naming it when it cannot be opened.
  explicit OutputFile(std::filesystem::path path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view bytes) noexcept;
  bool ok() const noexcept { return error_ == 0; }
  // The failure as "cannot write 'PATH': reason"; empty when none.
  std::string error() const;
  // Closes the file; throws CliError when any write (or the close) failed.
  void finish();
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  int error_ = 0;
};

// Writes `bytes` to `path` (created or truncated); throws CliError naming it on failure.
void write_file(const std::filesystem::path& path, std::string_view bytes);

// Creates the output directory given as `argument` (e.g. "--out"); throws CliError naming
// the argument and the path when it cannot be created, is not a directory, or holds a
// symbolic link anywhere below it (the command's files would follow it elsewhere).
void make_output_dir(const std::filesystem::path& dir, const std::string& argument);

// Creates `dir` and its parents (a directory the command does not write by name, such as
// repro's --cache-dir, whose safety the cache checks itself); CliError as above.
void make_directory(const std::filesystem::path& dir, const std::string& argument);

// Throws CliError naming `argument` when `path` is not a readable regular file.
void require_input_file(const std::string& path, const std::string& argument);

// Flushes standard output. When anything written to it failed, prints an error naming
// what it is (e.g. /dev/full) to stderr and returns false.
bool finish_stdout();

}  // namespace cujit::cli
