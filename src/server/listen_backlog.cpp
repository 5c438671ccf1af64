#include "server/listen_backlog.h"

#include "server/sockets.h"

namespace glass::server {

int raise_listen_backlog(int port, int backlog) {
  int raised = 0;
  for_each_socket([&](int fd, const sockaddr_storage& local, socklen_t) {
    int listening = 0;
    socklen_t len = sizeof(listening);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening != 0 &&
        port_of(local) == port && listen(fd, backlog) == 0)
      ++raised;
    return false;
  });
  return raised;
}

}  // namespace glass::server
