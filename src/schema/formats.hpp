// Internal: assertions for the `format` values sluice supports (RFC 3339 date/time, RFC 5321
// e-mail, RFC 4122 uuid, IPv4/IPv6 text forms, RFC 1123 hostnames, RFC 3986 absolute URIs).
// Pure functions over UTF-8 text, linear time, no allocation.
#pragma once

#include <string_view>

#include "schema/program.hpp"

namespace sluice::schema::detail {

bool check_format(format_kind f, std::string_view s) noexcept;
std::string_view format_name(format_kind f) noexcept;

bool is_date(std::string_view s) noexcept;
bool is_time(std::string_view s) noexcept;
bool is_date_time(std::string_view s) noexcept;
bool is_email(std::string_view s) noexcept;
bool is_uuid(std::string_view s) noexcept;
bool is_ipv4(std::string_view s) noexcept;
bool is_ipv6(std::string_view s) noexcept;
bool is_hostname(std::string_view s) noexcept;
bool is_uri(std::string_view s) noexcept;

}  // namespace sluice::schema::detail
