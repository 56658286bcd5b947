// The families' table (sim/object_families.hpp): the values are OpenAI's objects as its API
// reference shows them, with deterministic states (a batch stays validating, a fine-tuning job
// queued; a vector store and its files are completed at once, so the SDKs' polling helpers end).
#include "sim/object_families.hpp"

#include <array>

namespace sluice::sim {
namespace {

namespace json = boost::json;
using verb = boost::beast::http::verb;
using sv = std::string_view;

// A conversation item as stored: a message's text content becomes content parts, as OpenAI keeps it.
void shape_conversation_item(json::object& item) {
  if (!item.contains("type")) item["type"] = "message";
  if (item["type"] != "message") return;
  if (!item.contains("status")) item["status"] = "completed";
  const json::value* content = item.if_contains("content");
  if (!content || !content->is_string()) return;
  const bool said = item.contains("role") && item["role"] == "assistant";
  json::object part{{"type", said ? "output_text" : "input_text"}, {"text", content->get_string()}};
  if (said) part["annotations"] = json::array();
  item["content"] = json::array{std::move(part)};
}

sv conversation_item_prefix(const json::object& item) {
  const json::value* type = item.if_contains("type");
  return type && *type == "message" ? sv("msg_") : sv("item_");
}

constexpr std::array<object_stamp, 1> created_only{{{"created_at"}}};
constexpr std::array<object_stamp, 2> batch_stamps{{{"created_at"}, {"expires_at", 24 * 3600}}};
constexpr std::array<object_stamp, 2> store_stamps{{{"created_at"}, {"last_active_at"}}};

constexpr std::array<sv, 4> batch_copied{"input_file_id", "endpoint", "completion_window", "metadata"};
constexpr std::array<sv, 3> batch_required{"input_file_id", "endpoint", "completion_window"};
constexpr std::array<sv, 1> batch_files{"input_file_id"};
constexpr std::array<object_action, 1> batch_actions{
    {{"cancel", verb::post, object_action::answer::object, "cancelling", "cancelling_at", "cancelled", "cancelled_at"}}};

constexpr std::array<sv, 3> store_fields{"name", "metadata", "expires_after"};
constexpr std::array<object_action, 1> store_actions{{{"search", verb::post, object_action::answer::search_page}}};
constexpr std::array<object_seed, 1> store_seeds{{{"file_ids", family::vector_store_files}}};

constexpr std::array<sv, 1> store_file_fields{"attributes"};
constexpr std::array<sv, 1> store_file_id{"file_id"};
constexpr std::array<object_action, 1> store_file_actions{{{"content", verb::get, object_action::answer::content_page}}};

constexpr std::array<object_action, 1> file_batch_actions{
    {{"cancel", verb::post, object_action::answer::object, "cancelled"}}};
constexpr std::array<object_seed, 2> file_batch_seeds{{{"file_ids", family::vector_store_files, true, family::file_batch_files},
                                                       {"files", family::vector_store_files, true, family::file_batch_files}}};

constexpr std::array<sv, 8> job_copied{"model", "training_file", "validation_file", "hyperparameters",
                                       "integrations", "metadata", "method", "seed"};
constexpr std::array<sv, 1> job_merged{"hyperparameters"};
constexpr std::array<sv, 2> job_required{"model", "training_file"};
constexpr std::array<sv, 2> job_files{"training_file", "validation_file"};
constexpr std::array<object_action, 3> job_actions{{{"cancel", verb::post, object_action::answer::object, "cancelled", "finished_at"},
                                                    {"pause", verb::post, object_action::answer::object, "paused"},
                                                    {"resume", verb::post, object_action::answer::object, "queued"}}};

constexpr std::array<sv, 1> conversation_fields{"metadata"};
constexpr std::array<object_seed, 1> conversation_seeds{{{"items", family::conversation_items}}};

const std::array<object_family, family_count> family_rows{{
    {.segment = "batches", .type = "batch", .noun = "Batch", .id_prefix = "batch_",
     .ops = op_create | op_list | op_retrieve,
     .defaults = R"({"endpoint":"","errors":null,"input_file_id":"","completion_window":"","status":"validating",)"
                 R"("output_file_id":null,"error_file_id":null,"created_at":0,"in_progress_at":null,"expires_at":0,)"
                 R"("finalizing_at":null,"completed_at":null,"failed_at":null,"expired_at":null,"cancelling_at":null,)"
                 R"("cancelled_at":null,"request_counts":{"total":0,"completed":0,"failed":0},"metadata":null})",
     .copied = batch_copied, .required = batch_required, .file_fields = batch_files, .stamps = batch_stamps,
     .actions = batch_actions},
    {.segment = "vector_stores", .type = "vector_store", .noun = "VectorStore", .id_prefix = "vs_",
     .ops = op_create | op_list | op_retrieve | op_update | op_delete,
     .defaults = R"({"created_at":0,"name":"","usage_bytes":0,"file_counts":{},"status":"completed",)"
                 R"("expires_after":null,"expires_at":null,"last_active_at":0,"metadata":{}})",
     .copied = store_fields, .updatable = store_fields, .stamps = store_stamps, .actions = store_actions,
     .seeds = store_seeds, .counted = family::vector_store_files},
    {.segment = "files", .parent = family::vector_stores, .type = "vector_store.file", .noun = "VectorStoreFile",
     .ops = op_create | op_list | op_retrieve | op_update | op_delete,
     .defaults = R"({"created_at":0,"vector_store_id":"","usage_bytes":0,"status":"completed","last_error":null,)"
                 R"("attributes":{},"chunking_strategy":{"type":"static","static":{"max_chunk_size_tokens":800,)"
                 R"("chunk_overlap_tokens":400}}})",
     .copied = store_file_fields, .required = store_file_id, .updatable = store_file_fields,
     .file_fields = store_file_id, .stamps = created_only, .id_field = "file_id", .parent_field = "vector_store_id",
     .actions = store_file_actions},
    {.segment = "file_batches", .parent = family::vector_stores, .type = "vector_store.files_batch",
     .noun = "VectorStoreFileBatch", .id_prefix = "vsfb_", .ops = op_create | op_retrieve,
     .defaults = R"({"created_at":0,"vector_store_id":"","status":"completed","file_counts":{}})",
     .stamps = created_only, .parent_field = "vector_store_id", .actions = file_batch_actions,
     .seeds = file_batch_seeds, .counted = family::file_batch_files},
    {.segment = "files", .parent = family::file_batches, .type = "vector_store.file", .noun = "VectorStoreFile",
     .ops = op_list},
    {.segment = "fine_tuning/jobs", .type = "fine_tuning.job", .noun = "FineTuningJob", .id_prefix = "ftjob-",
     .ops = op_create | op_list | op_retrieve,
     .defaults = R"({"created_at":0,"error":null,"fine_tuned_model":null,"finished_at":null,"hyperparameters":)"
                 R"({"batch_size":"auto","learning_rate_multiplier":"auto","n_epochs":"auto"},"model":"",)"
                 R"("organization_id":"org-sim","result_files":[],"seed":42,"status":"queued","trained_tokens":null,)"
                 R"("training_file":"","validation_file":null,"estimated_finish":null,"integrations":[],"metadata":null,)"
                 R"("method":{"type":"supervised","supervised":{"hyperparameters":{"batch_size":"auto",)"
                 R"("learning_rate_multiplier":"auto","n_epochs":"auto"}}}})",
     .copied = job_copied, .merged = job_merged, .required = job_required, .file_fields = job_files,
     .stamps = created_only, .actions = job_actions},
    {.segment = "events", .parent = family::fine_tuning_jobs, .type = "fine_tuning.job.event",
     .noun = "FineTuningJobEvent", .ops = op_list},
    {.segment = "checkpoints", .parent = family::fine_tuning_jobs, .type = "fine_tuning.job.checkpoint",
     .noun = "FineTuningJobCheckpoint", .ops = op_list},
    {.segment = "conversations", .type = "conversation", .noun = "Conversation", .id_prefix = "conv_",
     .ops = op_create | op_retrieve | op_update | op_delete, .defaults = R"({"created_at":0,"metadata":{}})",
     .copied = conversation_fields, .updatable = conversation_fields, .stamps = created_only,
     .seeds = conversation_seeds},
    {.segment = "items", .parent = family::conversations, .noun = "ConversationItem", .id_prefix = "msg_",
     .ops = op_create | op_list | op_retrieve | op_delete, .copies_all = true, .bulk_field = "items",
     .delete_answers_parent = true, .shape = shape_conversation_item, .prefix_of = conversation_item_prefix},
}};

// The next segment of `path` after its '/', advancing it; nothing at its end or for an empty one.
std::optional<sv> take_segment(sv& path) noexcept {
  if (path.size() < 2 || path.front() != '/') return std::nullopt;
  path.remove_prefix(1);
  const auto end = path.find('/');
  const sv seg = path.substr(0, end);
  path.remove_prefix(seg.size());
  if (seg.empty()) return std::nullopt;
  return seg;
}

std::optional<family> child_named(family parent, sv segment) noexcept {
  for (std::size_t i = 0; i < family_count; ++i)
    if (family_rows[i].parent == parent && family_rows[i].segment == segment) return static_cast<family>(i);
  return std::nullopt;
}

const object_action* action_named(family f, sv name) noexcept {
  for (const auto& a : family_rows[index_of(f)].actions)
    if (a.name == name) return &a;
  return nullptr;
}

// The top-level family whose collection `path` ("/v1/...") is or is under, and the rest of the path.
std::optional<family> top_family(sv path, sv& rest) noexcept {
  if (!path.starts_with("/v1/")) return std::nullopt;
  const sv tail = path.substr(4);
  for (std::size_t i = 0; i < family_count; ++i) {
    const sv seg = family_rows[i].segment;
    if (family_rows[i].parent || !tail.starts_with(seg) || (tail.size() > seg.size() && tail[seg.size()] != '/')) continue;
    rest = tail.substr(seg.size());
    return static_cast<family>(i);
  }
  return std::nullopt;
}

}  // namespace

const object_family& family_of(family f) noexcept { return family_rows[index_of(f)]; }

std::vector<std::optional<std::size_t>> object_family_tree() {
  std::vector<std::optional<std::size_t>> tree;
  for (const auto& f : family_rows) tree.push_back(f.parent ? std::optional(index_of(*f.parent)) : std::nullopt);
  return tree;
}

std::optional<object_target> parse_object_target(sv path) {
  sv rest;
  const auto top = top_family(path, rest);
  if (!top) return std::nullopt;
  object_target t{*top};
  while (!rest.empty()) {
    const auto id = take_segment(rest);
    if (!id) return std::nullopt;
    t.ids.push_back(*id);
    if (rest.empty()) {
      t.object = true;
      break;
    }
    const auto seg = take_segment(rest);
    if (!seg) return std::nullopt;
    if (const auto child = child_named(t.fam, *seg)) {
      t.fam = *child;
      continue;
    }
    t.action = rest.empty() ? action_named(t.fam, *seg) : nullptr;
    if (!t.action) return std::nullopt;
    t.object = true;
  }
  return t;
}

bool is_objects_path(sv path) noexcept {
  sv rest;
  return top_family(path, rest).has_value();
}

}  // namespace sluice::sim
