// Beast vocabulary for the downstream HTTP server. Header-only aliases.
#pragma once

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/beast/http/status.hpp>

#include "runtime/asio.hpp"

namespace sluice::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using request = bhttp::request<bhttp::string_body>;
using response = bhttp::response<bhttp::string_body>;

}  // namespace sluice::http
