// client_keys: file parsing, authentication (constant-time path), per-key concurrency and
// requests-per-minute limits on a manual clock, rate headers and OpenAI duration formatting.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "admission/client_keys.hpp"
#include "test_support.hpp"

using namespace sluice;
using namespace sluice::admission;
using namespace sluice::admission::testing;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view keys_text =
    "# key              max_streams rpm  name\n"
    "sk-alpha-0123456789   2        3    alpha\n"
    "\n"
    "sk-beta-xyz\t0\t0   # unlimited, named by line\n"
    "   sk-gamma 1 60 gamma # trailing comment\n";

client_keys load(const manual_clock& clock) {
  auto r = client_keys::parse(keys_text, clock.fn());
  EXPECT_TRUE(r.has_value());
  return std::move(r).value();
}

const key_permit& permit_of(const std::variant<key_permit, rate_refusal>& v) { return std::get<key_permit>(v); }
const rate_refusal& refusal_of(const std::variant<key_permit, rate_refusal>& v) { return std::get<rate_refusal>(v); }

}  // namespace

TEST(OpenAiDuration, Formats) {
  EXPECT_EQ(format_openai_duration(0s), "0s");
  EXPECT_EQ(format_openai_duration(-5s), "0s");
  EXPECT_EQ(format_openai_duration(300us), "1ms");
  EXPECT_EQ(format_openai_duration(20ms), "20ms");
  EXPECT_EQ(format_openai_duration(250ms), "250ms");
  EXPECT_EQ(format_openai_duration(1s), "1s");
  EXPECT_EQ(format_openai_duration(1500ms), "1.5s");
  EXPECT_EQ(format_openai_duration(1050ms), "1.05s");
  EXPECT_EQ(format_openai_duration(59999ms), "59.999s");
  EXPECT_EQ(format_openai_duration(6min), "6m0s");
  EXPECT_EQ(format_openai_duration(90s), "1m30s");
  EXPECT_EQ(format_openai_duration(1h), "1h0m0s");
  EXPECT_EQ(format_openai_duration(1h + 2min + 3s), "1h2m3s");
}

TEST(ClientKeys, ParsesTheFileFormat) {
  manual_clock clock;
  auto keys = load(clock);
  EXPECT_TRUE(keys.enabled());
  EXPECT_EQ(keys.size(), 3u);
  auto beta = keys.authenticate("sk-beta-xyz");
  ASSERT_TRUE(beta.has_value());
  EXPECT_EQ(beta->name(), "key-4");
  EXPECT_EQ(beta->max_streams(), 0u);
  auto gamma = keys.authenticate("sk-gamma");
  ASSERT_TRUE(gamma.has_value());
  EXPECT_EQ(gamma->name(), "gamma");
  EXPECT_EQ(gamma->rpm(), 60u);
}

TEST(ClientKeys, ParseErrorsNameTheLineButNeverTheKey) {
  auto r = client_keys::parse("sk-good 1 1\nsk-secret-value 1\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.err().message.find("line 2"), std::string::npos);
  EXPECT_EQ(r.err().message.find("sk-secret-value"), std::string::npos);

  r = client_keys::parse("sk-secret-value x 1\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.err().message.find("sk-secret-value"), std::string::npos);

  r = client_keys::parse("sk-dup 1 1 first\nsk-dup 2 2\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.err().message.find("duplicate"), std::string::npos);
  EXPECT_EQ(r.err().message.find("sk-dup"), std::string::npos);
}

TEST(ClientKeys, LoadsFromAFile) {
  std::random_device rd;
  auto path = std::filesystem::temp_directory_path() / ("sluice-keys-" + std::to_string(rd()));
  std::ofstream(path) << keys_text;
  auto r = client_keys::load_file(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->size(), 3u);
  EXPECT_FALSE(client_keys::load_file(path.string()).has_value());
}

TEST(ClientKeys, MissingOrUnknownKeysAreUnauthorized) {
  manual_clock clock;
  auto keys = load(clock);
  for (std::string_view bad : {"", "sk-alpha", "sk-alpha-01234567890", "sk-alpha-0123456788", "SK-GAMMA",
                               "a-much-longer-key-than-any-in-the-file-0123456789abcdef"}) {
    auto r = keys.authenticate(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.err().code, errc::unauthorized);
    if (!bad.empty()) {
      EXPECT_EQ(r.err().message.find(bad), std::string::npos);
    }
  }
  auto ok = keys.authenticate("sk-alpha-0123456789");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->name(), "alpha");
  // No keys configured: nothing authenticates.
  client_keys none;
  EXPECT_FALSE(none.enabled());
  EXPECT_EQ(none.authenticate("sk-alpha-0123456789").err().code, errc::unauthorized);
}

TEST(ClientKeys, AuthorizationHeader) {
  manual_clock clock;
  auto keys = load(clock);
  EXPECT_TRUE(keys.authenticate_header("Bearer sk-gamma").has_value());
  EXPECT_TRUE(keys.authenticate_header("bearer   sk-gamma  ").has_value());
  EXPECT_TRUE(keys.authenticate_header("BEARER\tsk-gamma").has_value());
  for (std::string_view bad : {"", "Bearer", "Bearer ", "Basic sk-gamma", "sk-gamma", "Bearersk-gamma"}) {
    auto r = keys.authenticate_header(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.err().code, errc::unauthorized);
    EXPECT_EQ(r.err().message.find("sk-gamma"), std::string::npos);
  }
}

TEST(ClientKeys, PerKeyConcurrencyLimit) {
  manual_clock clock;
  auto keys = load(clock);
  auto alpha = keys.authenticate("sk-alpha-0123456789").value();
  auto a = keys.decide(alpha, 0);
  auto b = keys.decide(alpha, 0);
  ASSERT_TRUE(std::holds_alternative<key_permit>(a));
  ASSERT_TRUE(std::holds_alternative<key_permit>(b));
  EXPECT_EQ(alpha.in_use(), 2u);
  auto c = keys.decide(alpha, 0);
  ASSERT_TRUE(std::holds_alternative<rate_refusal>(c));
  EXPECT_EQ(refusal_of(c).which, rate_limit_kind::concurrency);
  EXPECT_EQ(refusal_of(c).retry_after, 1s);
  ASSERT_TRUE(refusal_of(c).headers.requests);
  EXPECT_EQ(refusal_of(c).headers.requests->remaining, 1u);  // the concurrency refusal took no token
  a = rate_refusal{};  // drops the first permit
  EXPECT_EQ(alpha.in_use(), 1u);
  auto d = keys.decide(alpha, 0);
  ASSERT_TRUE(std::holds_alternative<key_permit>(d));
  EXPECT_EQ(permit_of(d).headers.requests->remaining, 0u);
}

TEST(ClientKeys, RequestsPerMinuteWithAManualClock) {
  manual_clock clock;
  auto keys = load(clock);
  auto alpha = keys.authenticate("sk-alpha-0123456789").value();  // rpm 3: one token per 20s
  for (std::uint64_t i = 0; i < 3; ++i) {
    auto r = keys.decide(alpha, 0);
    ASSERT_TRUE(std::holds_alternative<key_permit>(r)) << i;
    auto& h = *permit_of(r).headers.requests;
    EXPECT_EQ(h.limit, 3u);
    EXPECT_EQ(h.remaining, 2 - i);
    EXPECT_EQ(h.reset, format_openai_duration(20s * static_cast<int>(i + 1)));
    // Each permit is dropped at the end of the iteration, so only the rate limit is in play.
  }
  auto refused = keys.decide(alpha, 0);
  ASSERT_TRUE(std::holds_alternative<rate_refusal>(refused));
  EXPECT_EQ(refusal_of(refused).which, rate_limit_kind::rpm);
  EXPECT_EQ(refusal_of(refused).retry_after, 20s);
  EXPECT_EQ(refusal_of(refused).headers.requests->remaining, 0u);
  EXPECT_EQ(refusal_of(refused).headers.requests->reset, "1m0s");
  EXPECT_EQ(alpha.in_use(), 0u);  // the refusal holds no concurrency slot

  clock.advance(19s);
  auto still = keys.decide(alpha, 0);
  ASSERT_TRUE(std::holds_alternative<rate_refusal>(still));
  EXPECT_EQ(refusal_of(still).retry_after, 1s);
  EXPECT_EQ(refusal_of(still).headers.requests->reset, "41s");
  clock.advance(1s);
  auto again = keys.decide(alpha, 0);
  ASSERT_TRUE(std::holds_alternative<key_permit>(again));
  EXPECT_EQ(permit_of(again).headers.requests->remaining, 0u);

  clock.advance(10min);  // fully refilled, but never beyond the burst of rpm
  for (int i = 0; i < 3; ++i) {
    auto r = keys.decide(alpha, 0);
    ASSERT_TRUE(std::holds_alternative<key_permit>(r));
  }
  EXPECT_TRUE(std::holds_alternative<rate_refusal>(keys.decide(alpha, 0)));
}

TEST(ClientKeys, UnlimitedKeyHasNoRateHeaders) {
  manual_clock clock;
  auto keys = load(clock);
  auto beta = keys.authenticate("sk-beta-xyz").value();
  std::vector<key_permit> held;
  for (int i = 0; i < 1000; ++i) {
    auto r = keys.decide(beta, 0);
    ASSERT_TRUE(std::holds_alternative<key_permit>(r));
    EXPECT_FALSE(permit_of(r).headers.requests || permit_of(r).headers.tokens);
    held.push_back(std::move(std::get<key_permit>(r)));
  }
  EXPECT_EQ(beta.in_use(), 1000u);
  held.clear();
  EXPECT_EQ(beta.in_use(), 0u);
}

TEST(ClientKeys, KeyPermitMoves) {
  manual_clock clock;
  auto keys = load(clock);
  auto gamma = keys.authenticate("sk-gamma").value();  // max 1 stream
  auto r = keys.decide(gamma, 0);
  key_permit p = std::move(std::get<key_permit>(r));
  EXPECT_TRUE(p);
  EXPECT_EQ(gamma.in_use(), 1u);
  key_permit q;
  q = std::move(p);
  EXPECT_FALSE(p);
  EXPECT_EQ(gamma.in_use(), 1u);
  EXPECT_TRUE(std::holds_alternative<rate_refusal>(keys.decide(gamma, 0)));
  q.reset();
  EXPECT_EQ(gamma.in_use(), 0u);
  EXPECT_TRUE(std::holds_alternative<key_permit>(keys.decide(gamma, 0)));
}

TEST(ClientKeys, TokensPerMinuteFieldIsOptionalAndNamedAnywhereAfterTheRate) {
  auto keys = client_keys::parse(
      "sk-a 0 0 alpha tpm=1000\n"
      "sk-b 0 0 tpm=50 beta\n"
      "sk-c 0 0 tpm=70\n"
      "sk-d 1 2\n");
  ASSERT_TRUE(keys.has_value()) << keys.err().message;
  EXPECT_EQ(keys->authenticate("sk-a")->tpm(), 1000u);
  EXPECT_EQ(keys->authenticate("sk-a")->name(), "alpha");
  EXPECT_EQ(keys->authenticate("sk-b")->tpm(), 50u);
  EXPECT_EQ(keys->authenticate("sk-b")->name(), "beta");
  EXPECT_EQ(keys->authenticate("sk-c")->tpm(), 70u);
  EXPECT_EQ(keys->authenticate("sk-c")->name(), "key-3");
  EXPECT_EQ(keys->authenticate("sk-d")->tpm(), 0u);
  for (std::string_view bad : {"sk-x 0 0 tpm=\n", "sk-x 0 0 tpm=1 tpm=2\n", "sk-x 0 0 a b\n", "sk-x 0 0 a tpm=-1\n",
                               "sk-x 0 0 a tpm=1 c\n"}) {
    auto r = client_keys::parse(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_NE(r.err().message.find("line 1"), std::string::npos);
    EXPECT_EQ(r.err().message.find("sk-x"), std::string::npos);
  }
}

TEST(ClientKeys, TokensPerMinuteReservesTheEstimateAndSettlesToTheUse) {
  manual_clock clock;
  auto keys = client_keys::parse("sk-t 0 0 t tpm=600\n", clock.fn()).value();  // 10 tokens a second
  auto t = keys.authenticate("sk-t").value();
  {
    auto r = keys.decide(t, 400);
    ASSERT_TRUE(std::holds_alternative<key_permit>(r));
    ASSERT_TRUE(permit_of(r).headers.tokens);
    EXPECT_EQ(permit_of(r).headers.tokens->limit, 600u);
    EXPECT_EQ(permit_of(r).headers.tokens->remaining, 200u);
    EXPECT_FALSE(permit_of(r).headers.requests);
    auto refused = keys.decide(t, 300);  // 200 left: refused, charging nothing
    ASSERT_TRUE(std::holds_alternative<rate_refusal>(refused));
    EXPECT_EQ(refusal_of(refused).which, rate_limit_kind::tpm);
    EXPECT_EQ(refusal_of(refused).retry_after, 10s);  // 100 more tokens at 10 a second
    EXPECT_EQ(refusal_of(refused).headers.tokens->remaining, 200u);
    std::get<key_permit>(r).used_tokens(100);  // used a quarter of its estimate: 300 come back
  }
  auto r = keys.decide(t, 500);
  ASSERT_TRUE(std::holds_alternative<key_permit>(r));
  EXPECT_EQ(permit_of(r).headers.tokens->remaining, 0u);
  std::get<key_permit>(r).used_tokens(700);  // more than reserved: 200 more are charged (a debt)
  std::get<key_permit>(r).reset();
  auto debt = keys.decide(t, 1);
  ASSERT_TRUE(std::holds_alternative<rate_refusal>(debt));
  EXPECT_EQ(refusal_of(debt).retry_after, 21s);  // the debt of 200, then 1 token, at 10 a second
  clock.advance(21s);
  EXPECT_TRUE(std::holds_alternative<key_permit>(keys.decide(t, 1)));
}

TEST(ClientKeys, AnEstimateAboveTheWholeBudgetWaitsForAFullBucketThenGoesIntoDebt) {
  manual_clock clock;
  auto keys = client_keys::parse("sk-t 0 0 t tpm=100\n", clock.fn()).value();
  auto t = keys.authenticate("sk-t").value();
  EXPECT_TRUE(std::holds_alternative<key_permit>(keys.decide(t, 5000)));  // full: let through
  EXPECT_TRUE(std::holds_alternative<rate_refusal>(keys.decide(t, 1)));
}

TEST(ClientKeys, DividedSharesEveryLimitRoundedUpAndKeepsNamesAndOrder) {
  manual_clock clock;
  auto keys = client_keys::parse("sk-a 4 12 a tpm=1000\nsk-b 0 5 b\nsk-c 1 0\n", clock.fn()).value();
  auto third = keys.divided(3);
  ASSERT_EQ(third.size(), 3u);
  EXPECT_EQ(third.at(0).name(), "a");
  EXPECT_EQ(third.at(0).max_streams(), 2u);
  EXPECT_EQ(third.at(0).rpm(), 4u);
  EXPECT_EQ(third.at(0).tpm(), 334u);
  EXPECT_EQ(third.at(1).max_streams(), 0u);  // unlimited stays unlimited
  EXPECT_EQ(third.at(1).rpm(), 2u);
  EXPECT_EQ(third.at(2).max_streams(), 1u);
  EXPECT_EQ(third.at(2).index(), 2u);
  // Authentication sees the same keys, and the counters are the copy's own.
  auto a = third.authenticate("sk-a").value();
  EXPECT_EQ(a.index(), 0u);
  auto p1 = third.decide(a, 1), p2 = third.decide(a, 1);
  EXPECT_TRUE(std::holds_alternative<key_permit>(p1));
  EXPECT_TRUE(std::holds_alternative<key_permit>(p2));
  EXPECT_TRUE(std::holds_alternative<rate_refusal>(third.decide(a, 1)));
  EXPECT_EQ(keys.at(0).in_use(), 0u);
  // A request admitted by the share waits in the same queue lane as one admitted by the whole.
  EXPECT_EQ(a.identity(), keys.authenticate("sk-a")->identity());
  EXPECT_EQ(std::get<key_permit>(p1).identity(), keys.at(0).identity());
}

TEST(ClientKeys, IdentityIsTheKeysOwnForItsHandlesAndPermits) {
  manual_clock clock;
  auto keys = load(clock);
  auto alpha = keys.authenticate("sk-alpha-0123456789").value();
  auto alpha_again = keys.authenticate_header("Bearer sk-alpha-0123456789").value();
  auto beta = keys.authenticate("sk-beta-xyz").value();
  EXPECT_NE(alpha.identity(), nullptr);
  EXPECT_EQ(alpha.identity(), alpha_again.identity());
  EXPECT_NE(alpha.identity(), beta.identity());
  EXPECT_EQ(key_handle{}.identity(), nullptr);
  auto r = keys.decide(alpha, 0);
  key_permit p = std::move(std::get<key_permit>(r));
  EXPECT_EQ(p.identity(), alpha.identity());  // the lane the pipeline queues this request in
  p.reset();
  EXPECT_EQ(p.identity(), nullptr);
}

TEST(ClientKeys, TwoKeysMayNotShareAName) {
  auto r = client_keys::parse("sk-one 1 1 team\nsk-two 1 1 team\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.err().message.find("line 2"), std::string::npos) << r.err().message;
  EXPECT_NE(r.err().message.find("line 1"), std::string::npos) << r.err().message;
  EXPECT_EQ(r.err().message.find("sk-"), std::string::npos) << "never the key";
  // An explicit name equal to another line's default name.
  r = client_keys::parse("sk-one 1 1 key-2\nsk-two 1 1\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.err().message.find("'key-2'"), std::string::npos) << r.err().message;
}

TEST(ClientKeys, ATenantIsTheKeysNotItsNameOrLine) {
  auto before = client_keys::parse("sk-alice-000000 1 1\nsk-bob-0000000 1 1\n");
  auto after = client_keys::parse("sk-carol-00000 1 1\nsk-alice-000000 1 1 renamed\nsk-bob-0000000 1 1\n");
  ASSERT_TRUE(before.has_value());
  ASSERT_TRUE(after.has_value());
  const auto alice = before->authenticate("sk-alice-000000")->tenant();
  EXPECT_EQ(alice.size(), 32u);
  EXPECT_EQ(alice.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(after->authenticate("sk-alice-000000")->tenant(), alice) << "renamed and moved down a line: the same tenant";
  EXPECT_EQ(after->authenticate("sk-carol-00000")->name(), "key-1") << "carol now has alice's old default name";
  EXPECT_NE(after->authenticate("sk-carol-00000")->tenant(), alice) << "but not her tenant";
  EXPECT_NE(before->authenticate("sk-bob-0000000")->tenant(), alice);
  // A credential's tenant is the same with a keys file or without one.
  EXPECT_EQ(tenant_of_credential("sk-alice-000000"), alice);
  EXPECT_EQ(alice.find("sk-"), std::string::npos);
  // A divided copy (a replica's share) keeps the tenants.
  EXPECT_EQ(before->divided(3).authenticate("sk-alice-000000")->tenant(), alice);
}

TEST(ClientKeys, AByteOrderMarkAtTheTopIsNotPartOfTheFirstKey) {
  auto r = client_keys::parse("\xEF\xBB\xBFsk-first 1 1 first\nsk-second 1 1\n");
  ASSERT_TRUE(r.has_value()) << r.err().message;
  ASSERT_TRUE(r->authenticate("sk-first").has_value()) << "the first key works";
  EXPECT_EQ(r->authenticate("sk-first")->name(), "first");
}

TEST(ClientKeys, BearerCredential) {
  EXPECT_EQ(bearer_credential("Bearer sk-x"), "sk-x");
  EXPECT_EQ(bearer_credential("  bearer\tsk-x  "), "sk-x");
  EXPECT_EQ(bearer_credential("Basic sk-x"), "");
  EXPECT_EQ(bearer_credential("Bearer"), "");
}
