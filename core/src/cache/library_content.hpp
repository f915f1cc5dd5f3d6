#pragma once
// Vendor libraries in cache keys by content. A library identity (support/
// library_identity.hpp) names each file by path and stat stamps, which is what a record and
// a person need; a key needs what the file holds, so that the same NVRTC bytes at another
// path, a copy, or a touched file share builds, and different bytes never do.
//
// content_identity() rewrites every "path=..;size=..;mtime=..;ctime=..;device=..;inode=.."
// description in an identity as "sha256=<digest of the bytes>;size=<n>;name=<file name>",
// text around them kept. Hashing NVRTC's 100 MB costs 0.1-0.4 s, so each digest is taken at
// most once per process and remembered across processes in a digest store under the file's
// stamp (device, inode, size, mtime, ctime): writing a file moves its ctime, which no tool
// can set back, so a stamp names one content. Like ccache, a file whose ctime or mtime is
// within the last 2 s is hashed but not remembered, in the process or the store: a clock
// that ticks coarsely could give two contents written in one tick one stamp.
//
// The store (cache/stamp_store.hpp, shared with the header stamps of hermetic compiles):
// CUJIT_LIBRARY_DIGESTS (a directory; "off": none), else
// $CUJIT_CACHE_DIR/library-digests, else $XDG_CACHE_HOME/cujit/library-digests, else
// $HOME/.cache/cujit/library-digests. It is trusted only when it and each entry are this
// user's and writable by no one else (otherwise entries are not read, and the file is
// hashed); an entry must name the stamp it is for. A description that cannot be parsed, or
// a file whose stamp no longer matches its description, is kept as it was: no sharing,
// never a wrong digest.

#include <cstddef>
#include <string>

namespace cujit::detail {

std::string content_identity(const std::string& identity);

// Files this process hashed for content identities, and digests it took from the store:
// tests check that a second process hashes nothing.
std::size_t library_files_hashed() noexcept;
std::size_t library_digests_from_store() noexcept;

}  // namespace cujit::detail
