#pragma once
// Where the remote tier is: CUJIT_CACHE_REMOTE=redis://[[user]:password@]host[:port][/db].
// Pure: parsing never connects, and the password never appears in what is printed.

#include <optional>
#include <string>
#include <string_view>

namespace cujit::detail {

struct RemoteUrl {
  std::string user;      // empty: AUTH with the password alone (Redis before ACLs)
  std::string password;  // empty: no AUTH
  std::string host;
  int port = 6379;
  int db = 0;  // SELECTed after connecting when not 0

  // The URL as given but with the password replaced by "***": for messages and stats.
  std::string redacted() const;
};

// The URL, or nullopt with `problem` saying why not (the password is never quoted).
// Percent-escapes (%40 for '@') are decoded in the user and password; an IPv6 host is
// written in brackets ([::1]).
std::optional<RemoteUrl> parse_remote_url(std::string_view text, std::string& problem);

}  // namespace cujit::detail
