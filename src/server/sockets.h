#pragma once
// The process's sockets as /proc/self/fd lists them, and the port of a socket address: what the
// server needs where httplib 0.11 hides its sockets (connections watched or shut down, the listening
// socket's backlog).
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>

namespace glass::server {

// The port of a socket address (-1 for families httplib does not serve).
inline int port_of(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&a)->sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&a)->sin6_port);
  return -1;
}

// Calls f(fd, local address, its length) for each socket of the process with a local address,
// until f returns true.
template <class F>
void for_each_socket(F f) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long v = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || v == dirfd(dir)) continue;
    const int fd = static_cast<int>(v);
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{};
    socklen_t local_len = sizeof(local);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) continue;
    if (f(fd, local, local_len)) break;
  }
  closedir(dir);
}

}  // namespace glass::server
