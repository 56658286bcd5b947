#include "proxy/responses/wire_head.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace sluice::proxy {

namespace json = boost::json;

namespace {

// Fields that frame one message on one connection: the front frames its own.
bool hop_by_hop(bhttp::field f) noexcept {
  switch (f) {
    case bhttp::field::connection:
    case bhttp::field::keep_alive:
    case bhttp::field::transfer_encoding:
    case bhttp::field::content_length:
    case bhttp::field::te:
    case bhttp::field::trailer:
    case bhttp::field::upgrade:
    case bhttp::field::proxy_connection: return true;
    default: return false;
  }
}

}  // namespace

std::string wire_head_text(const bhttp::fields& fields, unsigned status, bool stream) {
  json::array h;
  for (const auto& f : fields)
    if (!hop_by_hop(f.name())) h.push_back(json::array{json::string(f.name_string()), json::string(f.value())});
  json::object o;
  o["status"] = status;
  o["stream"] = stream;
  o["headers"] = std::move(h);
  return json::serialize(o);
}

std::optional<wire_head> parse_wire_head(std::string_view text) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const auto& o = v.as_object();
  const auto* s = o.if_contains("status");
  const auto* st = o.if_contains("stream");
  const auto* h = o.if_contains("headers");
  if (!s || !s->is_int64() || s->as_int64() < 100 || s->as_int64() > 599 || !st || !st->is_bool() || !h || !h->is_array())
    return std::nullopt;
  wire_head out;
  out.status = static_cast<unsigned>(s->as_int64());
  out.stream = st->as_bool();
  for (const auto& pair : h->as_array()) {
    if (!pair.is_array() || pair.as_array().size() != 2 || !pair.as_array()[0].is_string() || !pair.as_array()[1].is_string())
      return std::nullopt;
    out.headers.emplace_back(std::string(pair.as_array()[0].as_string()), std::string(pair.as_array()[1].as_string()));
  }
  return out;
}

std::string wire_target(bhttp::verb method, std::string_view path) {
  return std::string(bhttp::to_string(method)) + " " + std::string(path);
}

std::optional<std::pair<bhttp::verb, std::string>> parse_wire_target(std::string_view wire) {
  const auto sp = wire.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  const auto verb = bhttp::string_to_verb(wire.substr(0, sp));
  if (verb != bhttp::verb::post && verb != bhttp::verb::get) return std::nullopt;
  const auto path = wire.substr(sp + 1);
  if (!path.starts_with("/v1/")) return std::nullopt;
  return std::pair{verb, std::string(path)};
}

}  // namespace sluice::proxy
