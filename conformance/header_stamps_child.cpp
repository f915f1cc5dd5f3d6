// Resolves one hermetic compile as a new process does (test_header_stamps.cpp):
//
//   header_stamps_child CWD SOURCE NAME [--program] OPTION...
//
// runs in CWD, resolves the file SOURCE as the program NAME with these NVRTC options, and
// prints "key=<digest of everything the cache key takes from the resolution>",
// "files_read=N" (headers the resolution read, before any program()), "from_stamps=N" (resolutions answered by header stamps),
// "stored=N" (records stored); with --program also "program=<digest of what NVRTC would be
// given>", or "program_error=<kind>" when that fails.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compile/hermetic_inputs.hpp"
#include "cujit/cache_key.hpp"
#include "cujit/error.hpp"

namespace {

void add(std::string& text, const std::string& field) { text += std::to_string(field.size()) + ":" + field; }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  if (::chdir(argv[1]) != 0) return 2;
  std::ifstream in(argv[2], std::ios::binary);
  std::ostringstream source;
  source << in.rdbuf();
  int next = 4;
  const bool program = argc > 4 && std::string(argv[4]) == "--program";
  if (program) ++next;
  cujit::CompileOptions options;
  options.arch = cujit::Arch::parse("sm_90");
  for (int i = next; i < argc; ++i) options.options.emplace_back(argv[i]);
  const auto inputs = cujit::detail::HermeticInputs::resolve(cujit::Program(source.str(), argv[3]), options);
  // Counted before program(), which reads the files after a resolution from stamps.
  const std::size_t files_read = cujit::detail::HermeticInputs::files_read();
  std::string key;
  add(key, inputs.refusal());
  add(key, inputs.uncacheable());
  add(key, inputs.reads_disk() ? "disk" : "memory");
  for (const std::string& option : inputs.nvrtc_options()) add(key, option);
  key += "|";
  for (const std::string& field : inputs.key_fields()) add(key, field);
  std::printf("key=%s\n", cujit::sha256_hex(key).c_str());
  if (program) {
    try {
      std::string given;
      const cujit::Program rewritten = inputs.program();
      add(given, rewritten.name());
      add(given, rewritten.source());
      const cujit::CompileOptions passed = inputs.options();
      for (const cujit::Header& header : passed.headers) {
        add(given, header.name);
        add(given, header.content);
      }
      for (const std::string& option : passed.options) add(given, option);
      std::printf("program=%s\n", cujit::sha256_hex(given).c_str());
    } catch (const cujit::Error& error) {
      std::printf("program_error=%s\n", std::string(cujit::to_string(error.kind())).c_str());
    }
  }
  std::printf("files_read=%zu\nfrom_stamps=%zu\nstored=%zu\n", files_read,
              cujit::detail::HermeticInputs::resolutions_from_stamps(), cujit::detail::resolutions_stored());
  return 0;
}
