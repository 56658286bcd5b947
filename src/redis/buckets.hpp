// Rate limits kept in Redis for every replica at once: the Lua scripts that the shared client-key
// limits (admission) and the shared upstream budgets (routing) run, and the reply they answer.
// A limited thing has two keys under one hash tag: a hash holding its request and token buckets
// (levels refilled continuously at their limit per minute, like core's token_bucket, to Redis's
// own TIME) and the time before which nothing may pass (an upstream's retry-after), and a sorted
// set of its concurrency slots (members scored with their lease expiry; leases.hpp). Pure
// definitions, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "redis/reply.hpp"
#include "redis/script.hpp"

namespace sluice::redis {

// What bucket_admit decided.
enum class bucket_verdict : std::int64_t { admitted = 0, concurrency = 1, requests = 2, tokens = 3, blocked = 4 };

struct bucket_reply {
  bucket_verdict verdict = bucket_verdict::admitted;
  std::int64_t wait_ms = 0;  // refused: until it could pass (concurrency: 1000, a guess)
  std::int64_t requests_left = 0, requests_reset_ms = 0;
  std::int64_t tokens_left = 0, tokens_reset_ms = 0;
  std::int64_t slots = 0;  // slots in use, this one included
};
std::optional<bucket_reply> parse_bucket_admit(const reply& r);

// KEYS: the hash, the slot set. ARGV: rpm, tpm, max concurrent, token cost, slot member, lease ms
// (0 = no such limit). Refuses when blocked, at concurrency, without a whole request or without
// min(cost, tpm) tokens; else charges the slot, one request and `cost` tokens (the level may go
// below zero: a debt). A refusal charges nothing. Answers the 7 integers of bucket_reply.
script bucket_admit_script(std::string name);
// KEYS: the hash, the slot set. ARGV: rpm, tpm, tokens to charge more (negative: a refund), slot
// member to remove ('' none), and optionally requests to give back (a request that never reached
// its upstream). Answers 1.
script bucket_settle_script(std::string name);
// KEYS: the hash. ARGV: rpm, tpm, requests remaining, tokens remaining, blocked for ms (each ''
// when unknown). What an upstream said about its limits: the levels only go down to what it says
// remains, and nothing passes before the block ends. Answers 1.
script bucket_observe_script(std::string name);

// "<prefix>{<kind>:<name>}:<suffix>", the name percent-encoded outside [A-Za-z0-9._-] so the hash
// tag always closes where sluice put it.
std::string bucket_key(std::string_view prefix, std::string_view kind, std::string_view name, std::string_view suffix);

}  // namespace sluice::redis
