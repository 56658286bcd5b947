// A Lua script run with EVALSHA: its name (the metrics label), its source and the SHA1 of the
// source, computed locally (OpenSSL), which is the name Redis knows it by after SCRIPT LOAD.
#pragma once

#include <string>
#include <string_view>

namespace sluice::redis {

struct script {
  std::string name;    // a short identifier: the "script" label of sluice_redis_commands_total
  std::string source;  // Lua
  std::string sha1;    // 40 lowercase hex digits of SHA1(source)

  static script make(std::string name, std::string source);
};

// SHA1 of `data` as 40 lowercase hex digits.
std::string sha1_hex(std::string_view data);

}  // namespace sluice::redis
