#pragma once
// cpp-httplib 0.11 listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, compiled into Debian's
// libcpp-httplib.so). When more clients connect at once than its one accepting thread takes in time
// (16 streams opening together while the compute threads hold both cores), the kernel drops the
// extra SYNs and each such client waits for its retransmission: a first token 1 s late.
namespace glass::server {

// Calls listen(fd, backlog) again on this process's listening TCP sockets bound to `port` (Linux
// takes the new backlog for a socket that listens already). Returns how many sockets it raised.
int raise_listen_backlog(int port, int backlog);

}  // namespace glass::server
