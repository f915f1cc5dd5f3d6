// Prints the content identity of each file named, as a new process computes it, and how
// many files it hashed and digests it took from the store: "identity=...", "hashed=N",
// "from_store=N" (test_library_content.cpp).
#include <cstdio>

#include "cache/library_content.hpp"
#include "support/library_identity.hpp"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string described = cujit::detail::file_identity(std::string(argv[i]));
    std::printf("identity=%s\n", cujit::detail::content_identity(described).c_str());
  }
  std::printf("hashed=%zu\nfrom_store=%zu\n", cujit::detail::library_files_hashed(),
              cujit::detail::library_digests_from_store());
  return 0;
}
