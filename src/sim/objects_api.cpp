// The stored-object routes' rules (sim/objects_api.hpp): a path and a method become one of create,
// list, retrieve, update, delete or an action, applied to the store as the family's row says.
#include "sim/objects_api.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <charconv>
#include <vector>

#include "sim/bytes.hpp"
#include "sim/files_api.hpp"

namespace sluice::sim {
namespace {

namespace json = boost::json;
using verb = boost::beast::http::verb;

enum class obj_step { none, create, list, retrieve, update, remove, action };

// One request on its way: the stores, the request and what its path names.
struct object_call {
  object_store& store;
  const file_store& files;
  const object_request& req;
  const object_target& target;
  const object_family& fam;
};

// A new object before the store gives it its id (`id` when the body names it).
struct pending_object {
  family fam;
  json::object obj;
  std::string id;
  std::string_view prefix;
};

struct seeded_object {
  const object_seed* rule;
  pending_object pending;
};

error obj_no_such(family f, std::string_view id) {
  return error::make(errc::not_found, "No such " + std::string(family_of(f).noun) + " object: " + std::string(id), "id");
}

error obj_missing(std::string_view name) {
  return error::make(errc::bad_request, "Missing required parameter: '" + std::string(name) + "'.", std::string(name));
}

error obj_bad_type(std::string_view name, std::string_view want) {
  return error::make(errc::bad_request, "Invalid type for '" + std::string(name) + "': expected " + std::string(want) + ".",
                     std::string(name));
}

result<json::object> obj_body(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return json::object{};
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec) return error::make(errc::bad_request, "We could not parse the JSON body of your request: " + ec.message() + ".");
  if (!v.is_object()) return error::make(errc::bad_request, "The request body must be a JSON object.");
  return std::move(v.get_object());
}

// The id of the object that holds the collection the target is, or holds the object it names.
std::string_view obj_parent(const object_target& t) {
  const std::size_t own = t.object ? 1 : 0;
  return t.ids.size() > own ? t.ids[t.ids.size() - own - 1] : std::string_view{};
}

std::string_view obj_grandparent(const object_target& t) {
  const std::size_t own = t.object ? 1 : 0;
  return t.ids.size() > own + 1 ? t.ids[t.ids.size() - own - 2] : std::string_view{};
}

std::string_view obj_own(const object_target& t) { return t.object ? t.ids.back() : std::string_view{}; }

obj_step obj_op_for(const object_target& t, verb m) {
  const unsigned ops = family_of(t.fam).ops;
  if (t.action) return m == t.action->method ? obj_step::action : obj_step::none;
  if (!t.object) {
    if (m == verb::post && (ops & op_create)) return obj_step::create;
    return m == verb::get && (ops & op_list) ? obj_step::list : obj_step::none;
  }
  if (m == verb::get && (ops & op_retrieve)) return obj_step::retrieve;
  if (m == verb::post && (ops & op_update)) return obj_step::update;
  return m == verb::delete_ && (ops & op_delete) ? obj_step::remove : obj_step::none;
}

// Whether some method is served on the target's path (else the path itself is unknown).
bool obj_path_served(const object_target& t) {
  const unsigned ops = family_of(t.fam).ops;
  return t.action || (t.object ? ops & (op_retrieve | op_update | op_delete) : ops & (op_create | op_list));
}

// The first object the path names above the target that is not there.
std::optional<error> obj_missing_ancestor(const object_store& store, const object_target& t) {
  std::vector<family> chain;  // top-level family first
  for (std::optional<family> f = t.fam; f; f = family_of(*f).parent) chain.insert(chain.begin(), *f);
  for (std::size_t i = 0; i + 1 < chain.size() && i < t.ids.size(); ++i)
    if (!store.contains(index_of(chain[i]), i == 0 ? std::string_view{} : t.ids[i - 1], t.ids[i]))
      return obj_no_such(chain[i], t.ids[i]);
  return std::nullopt;
}

result<void> obj_check_files(const file_store& files, const object_family& fam, const json::object& body) {
  for (const std::string_view name : fam.file_fields) {
    const json::value* v = body.if_contains(name);
    if (!v || v->is_null()) continue;
    if (!v->is_string()) return obj_bad_type(name, "a file id");
    const std::string_view id = v->get_string();
    if (!files.find(id))
      return error::make(errc::bad_request, "Invalid '" + std::string(name) + "': no such File object: " + std::string(id) + ".",
                         std::string(name));
  }
  return ok;
}

// The family's defaults with its id, type and times first, then the body's fields copied over them.
json::object obj_start(const object_family& fam, const json::object& body, std::int64_t now) {
  json::object out{{"id", nullptr}};
  if (!fam.type.empty()) out["object"] = fam.type;
  const json::value defaults = json::parse(fam.defaults);
  for (const auto& kv : defaults.as_object()) out[kv.key()] = kv.value();
  for (const auto& s : fam.stamps) out[s.field] = now + s.after_s;
  auto copy = [&out, &fam](std::string_view name, const json::value& v) {
    json::value* have = out.if_contains(name);
    if (have && have->is_object() && v.is_object() && std::ranges::find(fam.merged, name) != fam.merged.end()) {
      for (const auto& kv : v.get_object()) have->get_object()[kv.key()] = kv.value();
    } else {
      out[name] = v;
    }
  };
  if (fam.copies_all) {
    for (const auto& kv : body)
      if (kv.key() != "id") copy(kv.key(), kv.value());
  } else {
    for (const std::string_view name : fam.copied)
      if (const json::value* v = body.if_contains(name)) copy(name, *v);
  }
  return out;
}

result<pending_object> obj_prepare(const object_call& c, family f, const json::object& body) {
  const object_family& fam = family_of(f);
  for (const std::string_view name : fam.required)
    if (const json::value* v = body.if_contains(name); !v || v->is_null()) return obj_missing(name);
  if (auto files_ok = obj_check_files(c.files, fam, body); !files_ok) return std::move(files_ok).err();
  pending_object p{f, obj_start(fam, body, c.req.now), {}, fam.id_prefix};
  if (!fam.id_field.empty()) {
    const json::value* id = body.if_contains(fam.id_field);
    if (!id || !id->is_string() || id->get_string().empty()) return obj_bad_type(fam.id_field, "an id");
    p.id = id->get_string();
  }
  if (fam.shape) fam.shape(p.obj);
  if (fam.prefix_of) p.prefix = fam.prefix_of(p.obj);
  return p;
}

// An element of a seed or bulk field: an id of the family's id_field, or a whole object.
result<pending_object> obj_prepare_element(const object_call& c, family f, std::string_view field, const json::value& e) {
  const object_family& fam = family_of(f);
  if (e.is_string() && !fam.id_field.empty()) return obj_prepare(c, f, json::object{{fam.id_field, e}});
  if (e.is_object()) return obj_prepare(c, f, e.get_object());
  return obj_bad_type(field, fam.id_field.empty() ? "an array of objects" : "an array of ids");
}

result<std::vector<seeded_object>> obj_prepare_seeds(const object_call& c, const json::object& body) {
  std::vector<seeded_object> out;
  for (const auto& rule : c.fam.seeds) {
    const json::value* v = body.if_contains(rule.field);
    if (!v || v->is_null()) continue;
    if (!v->is_array()) return obj_bad_type(rule.field, "an array");
    for (const auto& e : v->get_array()) {
      auto p = obj_prepare_element(c, rule.into, rule.field, e);
      if (!p) return std::move(p).err();
      out.push_back({&rule, std::move(*p)});
    }
  }
  return out;
}

result<json::object> obj_store(const object_call& c, pending_object p, std::string_view parent) {
  const object_family& fam = family_of(p.fam);
  if (!fam.parent_field.empty()) p.obj[fam.parent_field] = parent;
  auto kept = c.store.add(index_of(p.fam), parent, std::move(p.obj), p.prefix, fnv1a_of(c.req.body), p.id);
  if (!kept && kept.err().code == errc::not_found && fam.parent) return obj_no_such(*fam.parent, parent);
  return kept;
}

// The object as answered: file_counts from the objects under it.
json::object obj_present(const object_store& store, family f, json::object obj) {
  const object_family& fam = family_of(f);
  if (fam.counted) {
    const auto n = static_cast<std::int64_t>(store.count(index_of(*fam.counted), obj["id"].as_string()));
    obj["file_counts"] = {{"in_progress", 0}, {"completed", n}, {"failed", 0}, {"cancelled", 0}, {"total", n}};
  }
  return obj;
}

std::string obj_list_json(std::vector<json::object> data, bool has_more) {
  json::value first = data.empty() ? json::value(nullptr) : data.front()["id"];
  json::value last = data.empty() ? json::value(nullptr) : data.back()["id"];
  json::array items;
  for (auto& o : data) items.emplace_back(std::move(o));
  return json::serialize(json::object{
      {"object", "list"}, {"data", std::move(items)}, {"first_id", first}, {"last_id", last}, {"has_more", has_more}});
}

result<std::string> obj_create_bulk(const object_call& c, const json::object& body) {
  const json::value* items = body.if_contains(c.fam.bulk_field);
  if (!items || !items->is_array()) return obj_missing(c.fam.bulk_field);
  std::vector<pending_object> pending;
  for (const auto& e : items->get_array()) {
    auto p = obj_prepare_element(c, c.target.fam, c.fam.bulk_field, e);
    if (!p) return std::move(p).err();
    pending.push_back(std::move(*p));
  }
  std::vector<json::object> added;
  for (auto& p : pending) {
    auto kept = obj_store(c, std::move(p), obj_parent(c.target));
    if (!kept) return std::move(kept).err();
    added.push_back(obj_present(c.store, c.target.fam, std::move(*kept)));
  }
  return obj_list_json(std::move(added), false);
}

// Every body is checked (and its seeds' files) before anything is stored.
result<std::string> obj_create(const object_call& c) {
  auto body = obj_body(c.req.body);
  if (!body) return std::move(body).err();
  if (!c.fam.bulk_field.empty()) return obj_create_bulk(c, *body);
  auto p = obj_prepare(c, c.target.fam, *body);
  if (!p) return std::move(p).err();
  auto seeds = obj_prepare_seeds(c, *body);
  if (!seeds) return std::move(seeds).err();
  const std::string_view parent = obj_parent(c.target);
  auto kept = obj_store(c, std::move(*p), parent);
  if (!kept) return std::move(kept).err();
  const std::string id((*kept)["id"].as_string());
  for (auto& s : *seeds) {
    auto seeded = obj_store(c, std::move(s.pending), s.rule->under_parent ? parent : std::string_view(id));
    if (!seeded || !s.rule->mirror) continue;
    const std::string seeded_id((*seeded)["id"].as_string());
    auto mirrored = c.store.add(index_of(*s.rule->mirror), id, std::move(*seeded), {}, 0, seeded_id);
    (void)mirrored;  // only the store's bounds could refuse it: the batch then lists fewer files
  }
  return json::serialize(obj_present(c.store, c.target.fam, std::move(*kept)));
}

result<std::string> obj_list(const object_call& c) {
  auto q = parse_object_list_query(c.req.target);
  if (!q) return std::move(q).err();
  auto page = c.store.list(index_of(c.target.fam), obj_parent(c.target), q->limit, q->newest_first, q->after);
  for (auto& o : page.data) o = obj_present(c.store, c.target.fam, std::move(o));
  return obj_list_json(std::move(page.data), page.has_more);
}

result<std::string> obj_retrieve(const object_call& c) {
  auto found = c.store.find(index_of(c.target.fam), obj_parent(c.target), obj_own(c.target));
  if (!found) return obj_no_such(c.target.fam, obj_own(c.target));
  return json::serialize(obj_present(c.store, c.target.fam, std::move(*found)));
}

// The updatable fields the body has replace the object's (metadata is replaced whole, as OpenAI does).
result<std::string> obj_update(const object_call& c) {
  auto body = obj_body(c.req.body);
  if (!body) return std::move(body).err();
  const object_family& fam = c.fam;
  const json::object& changes = *body;
  auto changed = c.store.modify(index_of(c.target.fam), obj_parent(c.target), obj_own(c.target),
                                [&fam, &changes](json::object& o) {
                                  for (const std::string_view name : fam.updatable)
                                    if (const json::value* v = changes.if_contains(name)) o[name] = *v;
                                });
  if (!changed) return obj_no_such(c.target.fam, obj_own(c.target));
  return json::serialize(obj_present(c.store, c.target.fam, std::move(*changed)));
}

result<std::string> obj_remove(const object_call& c) {
  const std::string_view own = obj_own(c.target);
  if (!c.store.remove(index_of(c.target.fam), obj_parent(c.target), own)) return obj_no_such(c.target.fam, own);
  if (c.fam.delete_answers_parent && c.fam.parent) {
    auto holder = c.store.find(index_of(*c.fam.parent), obj_grandparent(c.target), obj_parent(c.target));
    if (!holder) return obj_no_such(*c.fam.parent, obj_parent(c.target));
    return json::serialize(obj_present(c.store, *c.fam.parent, std::move(*holder)));
  }
  return json::serialize(json::object{{"id", own}, {"object", std::string(c.fam.type) + ".deleted"}, {"deleted", true}});
}

// A page answered about the object, which stays as it is: a search finds nothing, a file's
// content is not parsed into chunks here.
result<std::string> obj_page(const object_call& c, const object_action& a) {
  if (!c.store.contains(index_of(c.target.fam), obj_parent(c.target), obj_own(c.target)))
    return obj_no_such(c.target.fam, obj_own(c.target));
  json::object page{{"object", "vector_store.file_content.page"}};
  if (a.kind == object_action::answer::search_page) {
    auto body = obj_body(c.req.body);
    if (!body) return std::move(body).err();
    const json::value* query = body->if_contains("query");
    if (!query || query->is_null()) return obj_missing("query");
    page = {{"object", "vector_store.search_results.page"}, {"search_query", *query}};
  }
  page["data"] = json::array();
  page["has_more"] = false;
  page["next_page"] = nullptr;
  return json::serialize(page);
}

// A status action: the answer shows the status it moves to; a settling one (a batch's cancel:
// cancelling) keeps the state it settles in (cancelled) for the next retrieve.
result<std::string> obj_act(const object_call& c) {
  const object_action& a = *c.target.action;
  if (a.kind != object_action::answer::object) return obj_page(c, a);
  if (auto body = obj_body(c.req.body); !body) return std::move(body).err();
  json::object shown;
  const std::int64_t now = c.req.now;
  auto kept = c.store.modify(index_of(c.target.fam), obj_parent(c.target), obj_own(c.target),
                             [&a, &shown, now](json::object& o) {
                               if (!a.answer_status.empty()) o["status"] = a.answer_status;
                               if (!a.answer_stamp.empty()) o[a.answer_stamp] = now;
                               shown = o;
                               if (!a.kept_status.empty()) o["status"] = a.kept_status;
                               if (!a.kept_stamp.empty()) o[a.kept_stamp] = now;
                             });
  if (!kept) return obj_no_such(c.target.fam, obj_own(c.target));
  return json::serialize(obj_present(c.store, c.target.fam, std::move(shown)));
}

error obj_invalid_url(verb method, std::string_view path) {
  return error::make(errc::not_found, "Invalid URL (" + std::string(boost::beast::http::to_string(method)) + " " +
                                          std::string(path) + ")");
}

}  // namespace

result<std::string> serve_object_request(object_store& store, const file_store& files, const object_request& req) {
  const std::string_view path = req.target.substr(0, req.target.find('?'));
  const auto target = parse_object_target(path);
  if (!target) return obj_invalid_url(req.method, path);
  const obj_step op = obj_op_for(*target, req.method);
  if (op == obj_step::none) {
    if (!obj_path_served(*target)) return obj_invalid_url(req.method, path);
    return error::make(errc::method_not_allowed, "Method " + std::string(boost::beast::http::to_string(req.method)) +
                                                     " not allowed for " + std::string(path));
  }
  if (auto gone = obj_missing_ancestor(store, *target)) return std::move(*gone);
  const object_call c{store, files, req, *target, family_of(target->fam)};
  switch (op) {
    case obj_step::create: return obj_create(c);
    case obj_step::list: return obj_list(c);
    case obj_step::retrieve: return obj_retrieve(c);
    case obj_step::update: return obj_update(c);
    case obj_step::remove: return obj_remove(c);
    default: return obj_act(c);
  }
}

unsigned object_error_status(const error& e) noexcept {
  switch (e.code) {
    case errc::not_found: return 404;
    case errc::method_not_allowed: return 405;
    case errc::payload_too_large: return 413;
    default: return 400;
  }
}

result<object_list_query> parse_object_list_query(std::string_view target) {
  object_list_query q;
  if (auto limit = decoded_query_param(target, "limit")) {
    std::size_t n = 0;
    const auto [p, ec] = std::from_chars(limit->data(), limit->data() + limit->size(), n);
    if (limit->empty() || ec != std::errc{} || p != limit->data() + limit->size() || n < 1 || n > 100)
      return error::make(errc::bad_request, "limit: an integer from 1 to 100", "limit");
    q.limit = n;
  }
  if (auto order = decoded_query_param(target, "order")) {
    if (*order != "asc" && *order != "desc") return error::make(errc::bad_request, "order: asc or desc", "order");
    q.newest_first = *order == "desc";
  }
  if (auto after = decoded_query_param(target, "after")) q.after = std::move(*after);
  return q;
}

}  // namespace sluice::sim
