#include "cache/remote_url.hpp"

#include <charconv>

namespace cujit::detail {
namespace {

constexpr std::string_view scheme = "redis://";

std::optional<int> parse_number(std::string_view text, int max) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc{} || end != text.data() + text.size() || value < 0 || value > max) {
    return std::nullopt;
  }
  return value;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> percent_decoded(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int high = hex_digit(text[i + 1]), low = hex_digit(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

}  // namespace

std::string RemoteUrl::redacted() const {
  std::string out(scheme);
  if (!user.empty() || !password.empty()) out += user + (password.empty() ? "" : ":***") + "@";
  out += host.find(':') != std::string::npos ? "[" + host + "]" : host;
  out += ":" + std::to_string(port);
  if (db != 0) out += "/" + std::to_string(db);
  return out;
}

std::optional<RemoteUrl> parse_remote_url(std::string_view text, std::string& problem) {
  const auto refuse = [&](std::string why) -> std::optional<RemoteUrl> {
    problem = std::move(why) + " (expected redis://[[user]:password@]host[:port][/db])";
    return std::nullopt;
  };
  if (text.substr(0, scheme.size()) != scheme) return refuse("not a redis:// URL");
  std::string_view rest = text.substr(scheme.size());
  RemoteUrl url;
  // The password may hold '/' or ':' when escaped only partly: the last '@' ends it.
  if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view credentials = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const std::size_t colon = credentials.find(':');
    const auto user = percent_decoded(credentials.substr(0, colon));
    const auto password =
        colon == std::string_view::npos ? std::optional<std::string>("") : percent_decoded(credentials.substr(colon + 1));
    if (!user || !password) return refuse("a bad percent-escape in the credentials");
    if (colon == std::string_view::npos) {  // redis://password@host, as some clients accept
      url.password = *user;
    } else {
      url.user = *user;
      url.password = *password;
    }
  }
  std::string_view authority = rest.substr(0, rest.find('/'));
  const std::string_view path = rest.substr(authority.size());
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return refuse("an IPv6 host without its closing ']'");
    url.host = std::string(authority.substr(1, close - 1));
    authority = authority.substr(close + 1);
    if (!authority.empty() && authority.front() != ':') return refuse("text after the IPv6 host");
  } else {
    url.host = std::string(authority.substr(0, authority.find(':')));
    authority = authority.substr(url.host.size());
  }
  if (url.host.empty()) return refuse("no host");
  if (!authority.empty()) {  // ":port"
    const auto port = parse_number(authority.substr(1), 65535);
    if (!port || *port == 0) return refuse("a port that is not a number from 1 to 65535");
    url.port = *port;
  }
  if (!path.empty() && path != "/") {
    const auto db = parse_number(path.substr(1), 1 << 20);
    if (!db) return refuse("a database that is not a number");
    url.db = *db;
  }
  return url;
}

}  // namespace cujit::detail
