// A socket read that tells Asio's epoll reactor when it emptied the socket, so the next read of
// a paced stream waits for the next edge instead of first trying recvmsg and getting EAGAIN.
//
// Why: Asio (1.81) starts every read op with a speculative recvmsg unless the descriptor's
// `try_speculative_` flag is off, and it turns that off only after a read of 0 bytes (the end of
// the stream). A paced upstream stream sends one event, the relay reads it, writes it, and starts
// the next read: that speculative recvmsg fails with EAGAIN every time, one system call per event
// of four (epoll_wait, recvmsg, sendmsg, recvmsg/EAGAIN) where nginx makes three. With epoll in
// edge-triggered mode (Asio registers every socket with EPOLLET), a read that returned fewer bytes
// than it asked for left the socket empty, and any byte that arrives later raises a new edge, so
// skipping the speculative read is safe: the op waits in the reactor and is performed on the edge.
//
// How: `drained_read_buffer` is a one-buffer MutableBufferSequence of its own type, and the
// reactor's recv op base is specialised for it (the only change: a short read reports
// `done_and_exhausted`, as a 0-byte read does). Everything else (handler allocation, completion,
// cancellation, close) is Asio's own code path. The specialisation reaches into Asio's detail
// namespace, so it is tied to the Boost release it was written against: another release builds the
// ordinary read instead (same results, the extra recvmsg back), and says so at configure time.
// ADR 0024.
#pragma once

#include <cstddef>

#include <boost/version.hpp>

#include "runtime/asio.hpp"

namespace sluice::runtime {

// The buffer a drained-aware read fills: a net::mutable_buffer under a type of its own.
struct drained_read_buffer : net::mutable_buffer {
  drained_read_buffer() = default;
  explicit drained_read_buffer(net::mutable_buffer b) noexcept : net::mutable_buffer(b) {}
};

#if BOOST_VERSION == 108100 && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT) && defined(BOOST_ASIO_HAS_EPOLL)
inline constexpr bool drained_reads_skip_eagain = true;
#else
inline constexpr bool drained_reads_skip_eagain = false;
#endif

}  // namespace sluice::runtime

#if BOOST_VERSION == 108100 && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT) && defined(BOOST_ASIO_HAS_EPOLL)
#include <boost/asio/detail/reactive_socket_recv_op.hpp>

namespace boost::asio::detail {

// Asio's reactive_socket_recv_op_base, for a drained_read_buffer: the same perform, plus a short
// read on a stream socket counted as exhausting it (see the top of this file).
template <>
class reactive_socket_recv_op_base<sluice::runtime::drained_read_buffer> : public reactor_op {
 public:
  reactive_socket_recv_op_base(const boost::system::error_code& success_ec, socket_type socket,
                               socket_ops::state_type state, const sluice::runtime::drained_read_buffer& buffer,
                               socket_base::message_flags flags, func_type complete_func)
      : reactor_op(success_ec, &reactive_socket_recv_op_base::do_perform, complete_func),
        socket_(socket),
        state_(state),
        buffer_(buffer),
        flags_(flags) {}

  static status do_perform(reactor_op* base) {
    auto* o = static_cast<reactive_socket_recv_op_base*>(base);
    const bool stream = (o->state_ & socket_ops::stream_oriented) != 0;
    if (!socket_ops::non_blocking_recv1(o->socket_, o->buffer_.data(), o->buffer_.size(), o->flags_, stream, o->ec_,
                                        o->bytes_transferred_))
      return not_done;
    // A stream socket that gave fewer bytes than asked for is empty now: the next read waits for
    // the next edge. (Asio's own rule is the case of 0 bytes: the end of the stream, or an error.)
    return stream && o->bytes_transferred_ < o->buffer_.size() ? done_and_exhausted : done;
  }

 private:
  socket_type socket_;
  socket_ops::state_type state_;
  sluice::runtime::drained_read_buffer buffer_;
  socket_base::message_flags flags_;
};

}  // namespace boost::asio::detail
#endif
