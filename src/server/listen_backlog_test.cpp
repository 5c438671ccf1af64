// raise_listen_backlog: a socket that listens with httplib's backlog takes a burst of connections
// only once raised (nothing accepts here, so the backlog alone decides who gets in).
#include "server/listen_backlog.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <vector>

namespace glass::server {
namespace {

// A loopback socket listening with `backlog`, on a free port; its port.
int listen_on_loopback(int backlog, int& port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(listen(fd, backlog), 0);
  socklen_t len = sizeof(a);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  port = ntohs(a.sin_port);
  return fd;
}

// How many of n clients connecting at once complete their handshake within the time bound.
int connected_of(int port, int n) {
  std::vector<int> fds;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  for (int i = 0; i < n; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    (void)connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    fds.push_back(fd);
  }
  // 300 ms: a dropped SYN is sent again after 1 s, so a client shut out by the backlog stays out.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  std::vector<bool> done(fds.size(), false);
  int ok = 0;
  while (std::chrono::steady_clock::now() < deadline && ok < n) {
    for (size_t i = 0; i < fds.size(); ++i) {
      if (done[i]) continue;
      pollfd p{.fd = fds[i], .events = POLLOUT, .revents = 0};
      if (poll(&p, 1, 0) == 1 && (p.revents & POLLOUT) != 0) {
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(fds[i], SOL_SOCKET, SO_ERROR, &err, &len);
        done[i] = true;
        if (err == 0) ++ok;
      }
    }
    usleep(1000);
  }
  for (int fd : fds) close(fd);
  return ok;
}

TEST(ListenBacklog, ABurstOfConnectionsGetsInOnceRaised) {
  constexpr int kClients = 20;
  int port = 0;
  const int narrow = listen_on_loopback(1, port);
  EXPECT_LT(connected_of(port, kClients), kClients)
      << "backlog 1 took every client: the check proves nothing";
  close(narrow);

  const int fd = listen_on_loopback(1, port);
  EXPECT_EQ(raise_listen_backlog(port, 128), 1);
  EXPECT_EQ(connected_of(port, kClients), kClients);
  EXPECT_EQ(raise_listen_backlog(port + 1 == 65536 ? port - 1 : port + 1, 128), 0) << "another port's socket";
  close(fd);
}

}  // namespace
}  // namespace glass::server
