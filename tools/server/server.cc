#include "tools/server/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace roundtable::server {

struct Server::Connection {
  int fd = -1;
  Session session;
  RequestParser parser;
  Request request;
  std::string in;
  size_t in_start = 0;  // bytes of `in` already run
  size_t needed = 0;    // bytes from in_start the next request needs
  std::string out;
  size_t out_sent = 0;
  bool paused = false;   // its replies pile up: not read until they drain
  bool closing = false;  // closed once its replies are out
  bool synced_reply = false;  // holds a write's reply this round
  uint32_t events = 0;   // its epoll interest

  explicit Connection(const RequestLimits& limits) : parser(limits) {}
  size_t unsent() const { return out.size() - out_sent; }
};

class Server::Connections {
 public:
  absl::flat_hash_map<int, std::unique_ptr<Connection>> by_fd;
};

namespace {

absl::Status Errno(const std::string& what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// Whether the peer's address is the loopback (127.0.0.0/8, ::1, or
// IPv4-mapped loopback).
bool IsLoopback(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
  }
  if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    if (IN6_IS_ADDR_LOOPBACK(&a->sin6_addr)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) return a->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

std::string AddressText(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
  }
  return absl::StrCat(host, ":", port);
}

// Writes a last reply to a client refused at accept and closes it.
void Refuse(int fd, std::string_view reply) {
  (void)!send(fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  close(fd);
}

}  // namespace

Server::Server(Table* table, ServerConfig config)
    : table_(table),
      config_(std::move(config)),
      commands_(table, &config_, &stats_,
                [this] {
                  std::vector<const Session*> sessions;
                  for (auto& [fd, c] : connections_->by_fd) {
                    sessions.push_back(&c->session);
                  }
                  return sessions;
                }),
      connections_(std::make_unique<Connections>()) {}

Server::~Server() {
  for (auto& [fd, c] : connections_->by_fd) close(fd);
  if (listen_fd_ >= 0) close(listen_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
}

absl::StatusOr<std::unique_ptr<Server>> Server::Listen(Table* table,
                                                       ServerConfig config) {
  std::unique_ptr<Server> server(new Server(table, std::move(config)));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = absl::StrCat(server->config_.port);
  const int rc = getaddrinfo(server->config_.bind.c_str(), port.c_str(),
                             &hints, &found);
  if (rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bind address ", server->config_.bind, ": ",
                     gai_strerror(rc)));
  }
  absl::Status status = absl::UnavailableError("no address to listen on");
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK |
                                            SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      status = Errno("socket");
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 511) != 0) {
      status = Errno(absl::StrCat("listen on ", server->config_.bind, ":",
                                  port));
      close(fd);
      continue;
    }
    server->listen_fd_ = fd;
    break;
  }
  freeaddrinfo(found);
  if (server->listen_fd_ < 0) return status;
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  getsockname(server->listen_fd_, reinterpret_cast<sockaddr*>(&bound),
              &length);
  server->config_.port =
      bound.ss_family == AF_INET6
          ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
          : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);

  server->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  server->stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (server->epoll_fd_ < 0 || server->stop_fd_ < 0) return Errno("epoll");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = server->listen_fd_;
  epoll_ctl(server->epoll_fd_, EPOLL_CTL_ADD, server->listen_fd_, &ev);
  ev.data.fd = server->stop_fd_;
  epoll_ctl(server->epoll_fd_, EPOLL_CTL_ADD, server->stop_fd_, &ev);
  return server;
}

void Server::Stop() {
  stopping_.store(true, std::memory_order_relaxed);
  const uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof one);
}

void Server::Accept() {
  while (true) {
    sockaddr_storage peer{};
    socklen_t length = sizeof peer;
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer),
                           &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN, or out of descriptors: the next round tries again
    }
    ++stats_.connections_received;
    if (connections_->by_fd.size() >= config_.maxclients) {
      ++stats_.rejected_connections;
      Refuse(fd, "-ERR max number of clients reached\r\n");
      continue;
    }
    if (config_.protected_mode && config_.requirepass.empty() &&
        !IsLoopback(peer)) {
      ++stats_.rejected_connections;
      Refuse(fd,
             "-DENIED roundtable is running in protected mode: no password "
             "is set, so only loopback clients are served. Set one with "
             "--requirepass, or turn protection off with "
             "--protected_mode=false (docs/server.md).\r\n");
      continue;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Connection>(config_.limits);
    c->fd = fd;
    c->session.id = next_id_++;
    c->session.address = AddressText(peer);
    c->session.connected = std::chrono::steady_clock::now();
    Connection& added = *c;
    connections_->by_fd.emplace(fd, std::move(c));
    stats_.connected_clients = connections_->by_fd.size();
    Watch(added);
  }
}

void Server::Watch(Connection& c) {
  uint32_t events = 0;
  if (!c.paused && !c.closing) events |= EPOLLIN;
  if (c.unsent() > 0) events |= EPOLLOUT;
  if (events == c.events) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = c.fd;
  epoll_ctl(epoll_fd_, c.events == 0 && events != 0 ? EPOLL_CTL_ADD
                       : events == 0                ? EPOLL_CTL_DEL
                                                    : EPOLL_CTL_MOD,
            c.fd, &ev);
  c.events = events;
}

void Server::Read(Connection& c) {
  // At most 1 MiB a round from one client, so that one sending without
  // pause does not starve the others (epoll is level-triggered: the rest
  // is read next round).
  size_t budget = 1 << 20;
  while (budget > 0) {
    const size_t want = std::max<size_t>(
        sizeof(receive_), std::min<size_t>(c.needed, budget));
    // Small reads land in the server's buffer and are appended; a large
    // request's bytes go straight to the end of the client's (which zeroes
    // them first: a small cost beside theirs).
    ssize_t n;
    if (want == sizeof(receive_)) {
      n = recv(c.fd, receive_, want, 0);
      if (n > 0) c.in.append(receive_, static_cast<size_t>(n));
    } else {
      const size_t old = c.in.size();
      c.in.resize(old + want);
      n = recv(c.fd, c.in.data() + old, want, 0);
      c.in.resize(old + std::max<ssize_t>(n, 0));
    }
    if (n == 0) {
      c.closing = true;
      c.out.clear();
      c.out_sent = 0;
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        c.closing = true;
        c.out.clear();
        c.out_sent = 0;
      }
      break;
    }
    stats_.net_input_bytes += static_cast<uint64_t>(n);
    budget -= std::min<size_t>(budget, static_cast<size_t>(n));
    if (static_cast<size_t>(n) < want) break;
  }
  RunRequests(c);
}

void Server::RunRequests(Connection& c) {
  while (!c.paused && !c.closing) {
    const std::string_view pending =
        std::string_view(c.in).substr(c.in_start);
    if (pending.empty() || pending.size() < c.needed) break;
    const auto outcome = c.parser.Parse(pending, &c.request);
    if (outcome == RequestParser::Outcome::kIncomplete) {
      c.needed = c.parser.needed();
      if (pending.size() > config_.client_query_limit) {
        ReplyWriter(&c.out, c.session.protocol)
            .Error("ERR client query buffer limit reached: request too "
                   "large (client-query-buffer-limit)");
        c.closing = true;
      }
      break;
    }
    if (outcome == RequestParser::Outcome::kError) {
      ReplyWriter(&c.out, c.session.protocol).Error(c.parser.error());
      c.closing = true;
      break;
    }
    c.needed = 0;
    if (!c.request.empty()) {
      if (commands_.Execute(c.session, c.request.args(), &c.out)) {
        wrote_ = true;
        c.synced_reply = true;
      }
      if (c.session.close_after_reply) c.closing = true;
    }
    c.in_start += c.parser.consumed();
    if (c.unsent() > config_.client_output_limit) c.paused = true;
  }
  if (c.in_start == c.in.size()) {
    c.in.clear();
    c.in_start = 0;
  } else if (c.in_start > (64 << 10) && c.in_start > c.in.size() / 2) {
    c.in.erase(0, c.in_start);
    c.in_start = 0;
  }
}

bool Server::Flush(Connection& c) {
  while (c.unsent() > 0) {
    const ssize_t n = send(c.fd, c.out.data() + c.out_sent, c.unsent(),
                           MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      Close(c);
      return false;
    }
    stats_.net_output_bytes += static_cast<uint64_t>(n);
    c.out_sent += static_cast<size_t>(n);
  }
  if (c.unsent() == 0) {
    c.out.clear();
    c.out_sent = 0;
  } else if (c.out_sent > (1 << 20) && c.out_sent > c.out.size() / 2) {
    c.out.erase(0, c.out_sent);
    c.out_sent = 0;
  }
  if (c.closing && c.unsent() == 0) {
    Close(c);
    return false;
  }
  if (c.paused && c.unsent() <= config_.client_output_limit / 2) {
    c.paused = false;
    RunRequests(c);  // what it sent meanwhile; replies go next round
  }
  Watch(c);
  return true;
}

void Server::Close(Connection& c) {
  const int fd = c.fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  connections_->by_fd.erase(fd);
  stats_.connected_clients = connections_->by_fd.size();
}

absl::Status Server::Run() {
  std::mutex mu;
  std::condition_variable wake;
  bool done = false;
  std::thread syncer;
  if (config_.fsync == FsyncPolicy::kEverySec) {
    syncer = std::thread([&] {
      std::unique_lock<std::mutex> lock(mu);
      while (!wake.wait_for(lock, std::chrono::seconds(1),
                            [&] { return done; })) {
        lock.unlock();
        const absl::Status s = table_->Sync();
        lock.lock();
        (s.ok() ? syncs_ : sync_errors_)
            .fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  std::vector<epoll_event> events(256);
  std::vector<int> touched;
  while (!stopping_.load(std::memory_order_relaxed)) {
    const int n = epoll_wait(epoll_fd_, events.data(),
                             static_cast<int>(events.size()), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    stats_.syncs = syncs_.load(std::memory_order_relaxed);
    stats_.sync_errors = sync_errors_.load(std::memory_order_relaxed);
    touched.clear();
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == stop_fd_) continue;
      if (fd == listen_fd_) {
        Accept();
        continue;
      }
      auto it = connections_->by_fd.find(fd);
      if (it == connections_->by_fd.end()) continue;
      Connection& c = *it->second;
      if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) Read(c);
      touched.push_back(fd);
    }
    // Under kAlways no reply of a write goes before the log is synced: one
    // sync for every write of the round. A failed sync sends none of them:
    // their clients are disconnected (the table refuses writes from then).
    if (wrote_ && config_.fsync == FsyncPolicy::kAlways) {
      wrote_ = false;
      const absl::Status s = table_->Sync();
      (s.ok() ? syncs_ : sync_errors_).fetch_add(1, std::memory_order_relaxed);
      if (!s.ok()) {
        for (int fd : touched) {
          auto it = connections_->by_fd.find(fd);
          if (it != connections_->by_fd.end() && it->second->synced_reply) {
            Close(*it->second);
          }
        }
      }
    }
    for (int fd : touched) {
      auto it = connections_->by_fd.find(fd);
      if (it == connections_->by_fd.end()) continue;
      it->second->synced_reply = false;
      Flush(*it->second);
    }
  }
  if (syncer.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
    }
    wake.notify_all();
    syncer.join();
  }
  // Replies already made go out where the client takes them at once.
  while (!connections_->by_fd.empty()) {
    Connection& c = *connections_->by_fd.begin()->second;
    c.closing = true;
    if (Flush(c)) Close(c);
  }
  return table_->Sync();
}

}  // namespace roundtable::server
