// The one translation unit that compiles Asio, Asio.SSL and Beast (BOOST_*_SEPARATE_COMPILATION),
// so the rest of the tree only includes declarations and builds fast.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
