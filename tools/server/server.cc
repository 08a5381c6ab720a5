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

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "io/base/status_macros.h"

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

// One event loop: its epoll set, the clients it accepted, and what it
// counts. Its thread alone runs its methods; another thread reads its
// connections (AppendSessions) only under the server's sessions_mu_,
// which the loop holds to add or remove one.
class Server::Loop {
 public:
  explicit Loop(Server& server) : server_(server) {}
  ~Loop() {
    for (auto& [fd, c] : by_fd_) close(fd);
    for (auto& c : adopted_) close(c->fd);
    if (epoll_fd_ >= 0) close(epoll_fd_);
    if (wake_fd_ >= 0) close(wake_fd_);
  }

  // Its epoll set, watching the listening socket (each accept wakes one
  // loop) and the stop eventfd (which wakes them all).
  absl::Status Open(int listen_fd, int stop_fd);
  // Serves until the server stops, then sends what its clients have
  // waiting where they take it at once and closes them.
  void Run();
  // Takes a client another loop accepted for it (any thread).
  void Adopt(std::unique_ptr<Connection> c);
  // Appends copies of its clients' sessions. REQUIRES: sessions_mu_.
  void AppendSessions(std::vector<Session>* out) const {
    for (const auto& [fd, c] : by_fd_) out->push_back(c->session);
  }

  LoopCounters counters;

 private:
  // Accepts what clients wait, each for the next loop in turn.
  void Accept();
  void Add(std::unique_ptr<Connection> c);
  // Reads what the client sent and runs its whole requests.
  void Read(Connection& c);
  void RunRequests(Connection& c);
  // Before the request parsed into c.request runs, when it is a GET and
  // more requests follow it in `rest` (a pipeline of other commands is
  // not parsed twice): parses up to kReadAhead - 1 of them and reads the
  // blocks of the GETs' keys among all these in one batch
  // (Commands::ReadAhead). Returns the number of requests of `rest` it
  // parsed.
  size_t ReadAhead(Connection& c, std::string_view rest);
  static constexpr size_t kReadAhead = 32;
  // Writes what the client has waiting; false when it closed.
  bool Flush(Connection& c);
  void Close(Connection& c);
  void Watch(Connection& c);  // epoll interest from the connection's state

  Server& server_;
  const ServerConfig& config_ = server_.config_;
  int epoll_fd_ = -1;
  absl::flat_hash_map<int, std::unique_ptr<Connection>> by_fd_;
  // Clients accepted for it by other loops, and the eventfd that wakes it
  // for them.
  int wake_fd_ = -1;
  std::mutex adopted_mu_;
  std::vector<std::unique_ptr<Connection>> adopted_;
  // What one recv takes from a client, unless a request needs more.
  char receive_[16 << 10];
  // ReadAhead's parser and the keys it gathers.
  RequestParser ahead_parser_{config_.limits};
  Request ahead_request_;
  std::vector<std::string_view> ahead_keys_;
  // Whether a command changed the table since the last sync (kAlways
  // syncs it before any reply goes).
  bool wrote_ = false;
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
      commands_(table, &config_,
                {[this] { return Clients(); }, [this] { return Stats(); },
                 [this] { ResetStats(); }}) {}

Server::~Server() {
  loops_.clear();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
}

absl::Status Server::CheckConfig(const ServerConfig& config) {
  if (config.event_loops < 1 ||
      config.event_loops > ServerConfig::kMaxEventLoops) {
    return absl::InvalidArgumentError(
        absl::StrCat("--event_loops: ", config.event_loops,
                     " is not between 1 and ", ServerConfig::kMaxEventLoops));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Server>> Server::Listen(Table* table,
                                                       ServerConfig config) {
  RT_RETURN_IF_ERROR(CheckConfig(config));
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

  server->stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (server->stop_fd_ < 0) return Errno("eventfd");
  for (int i = 0; i < server->config_.event_loops; ++i) {
    server->loops_.push_back(std::make_unique<Loop>(*server));
    RT_RETURN_IF_ERROR(
        server->loops_.back()->Open(server->listen_fd_, server->stop_fd_));
  }
  return server;
}

absl::Status Server::Loop::Open(int listen_fd, int stop_fd) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return Errno("epoll");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  ev.events = EPOLLIN | EPOLLEXCLUSIVE;
  ev.data.fd = listen_fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd, &ev);
  ev.events = EPOLLIN;
  ev.data.fd = stop_fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stop_fd, &ev);
  return absl::OkStatus();
}

void Server::Stop() {
  stopping_.store(true, std::memory_order_relaxed);
  const uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof one);
}

void Server::Loop::Accept() {
  while (true) {
    sockaddr_storage peer{};
    socklen_t length = sizeof peer;
    const int fd =
        accept4(server_.listen_fd_, reinterpret_cast<sockaddr*>(&peer),
                &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN, or out of descriptors: the next round tries again
    }
    counters.connections_received.Add();
    if (config_.protected_mode && config_.requirepass.empty() &&
        !IsLoopback(peer)) {
      counters.rejected_connections.Add();
      Refuse(fd,
             "-DENIED roundtable is running in protected mode: no password "
             "is set, so only loopback clients are served. Set one with "
             "--requirepass, or turn protection off with "
             "--protected_mode=false (docs/server.md).\r\n");
      continue;
    }
    if (server_.connected_.fetch_add(1) >= config_.maxclients) {
      server_.connected_.fetch_sub(1);
      counters.rejected_connections.Add();
      Refuse(fd, "-ERR max number of clients reached\r\n");
      continue;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Connection>(config_.limits);
    c->fd = fd;
    c->session.id = server_.next_id_.fetch_add(1);
    c->session.address = AddressText(peer);
    c->session.connected = std::chrono::steady_clock::now();
    // Whichever loop wakes takes every waiting client: they are dealt
    // out in turn, so that the loops share them.
    Loop& owner = *server_.loops_[server_.next_loop_.fetch_add(1) %
                                  server_.loops_.size()];
    if (&owner == this) {
      Add(std::move(c));
    } else {
      owner.Adopt(std::move(c));
    }
  }
}

void Server::Loop::Add(std::unique_ptr<Connection> c) {
  Connection& added = *c;
  {
    std::lock_guard<std::mutex> lock(server_.sessions_mu_);
    by_fd_.emplace(added.fd, std::move(c));
  }
  Watch(added);
}

void Server::Loop::Adopt(std::unique_ptr<Connection> c) {
  {
    std::lock_guard<std::mutex> lock(adopted_mu_);
    adopted_.push_back(std::move(c));
  }
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
}

void Server::Loop::Watch(Connection& c) {
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

void Server::Loop::Read(Connection& c) {
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
    counters.net_input_bytes.Add(static_cast<uint64_t>(n));
    budget -= std::min<size_t>(budget, static_cast<size_t>(n));
    if (static_cast<size_t>(n) < want) break;
  }
  RunRequests(c);
}

void Server::Loop::RunRequests(Connection& c) {
  Commands::Turn turn(server_.commands_);
  size_t read_ahead = 0;  // requests parsed ahead and not yet run
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
    if (read_ahead > 0) {
      --read_ahead;
    } else if (pending.size() > c.parser.consumed() &&
               !Commands::ReadAheadKey(c.request.args()).empty()) {
      read_ahead = ReadAhead(c, pending.substr(c.parser.consumed()));
    }
    if (!c.request.empty()) {
      if (server_.commands_.Execute(c.session, c.request.args(), &c.out,
                                    counters, turn)) {
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

size_t Server::Loop::ReadAhead(Connection& c, std::string_view rest) {
  ahead_keys_.clear();
  // A key of an inline request may lie in the request's own storage,
  // which the next parse reuses: only those in the client's bytes.
  const std::string_view bytes = c.in;
  const std::less_equal<const char*> at_or_before;
  auto gather = [&](const Request& request) {
    const std::string_view key = Commands::ReadAheadKey(request.args());
    if (!key.empty() && at_or_before(bytes.data(), key.data()) &&
        at_or_before(key.data() + key.size(), bytes.data() + bytes.size())) {
      ahead_keys_.push_back(key);
    }
  };
  gather(c.request);
  size_t parsed = 0;
  while (parsed + 1 < kReadAhead &&
         ahead_parser_.Parse(rest, &ahead_request_) ==
             RequestParser::Outcome::kRequest) {
    ++parsed;
    gather(ahead_request_);
    rest.remove_prefix(ahead_parser_.consumed());
  }
  if (ahead_keys_.size() > 1) {
    server_.commands_.ReadAhead(c.session, ahead_keys_);
  }
  return parsed;
}

bool Server::Loop::Flush(Connection& c) {
  while (c.unsent() > 0) {
    const ssize_t n = send(c.fd, c.out.data() + c.out_sent, c.unsent(),
                           MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      Close(c);
      return false;
    }
    counters.net_output_bytes.Add(static_cast<uint64_t>(n));
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

void Server::Loop::Close(Connection& c) {
  const int fd = c.fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  {
    std::lock_guard<std::mutex> lock(server_.sessions_mu_);
    by_fd_.erase(fd);
  }
  server_.connected_.fetch_sub(1);
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
  std::vector<std::thread> others;
  for (size_t i = 1; i < loops_.size(); ++i) {
    others.emplace_back([loop = loops_[i].get()] { loop->Run(); });
  }
  loops_[0]->Run();
  for (std::thread& t : others) t.join();
  if (syncer.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
    }
    wake.notify_all();
    syncer.join();
  }
  return table_->Sync();
}

void Server::Loop::Run() {
  std::vector<epoll_event> events(256);
  std::vector<int> touched;
  while (!server_.stopping_.load(std::memory_order_relaxed)) {
    const int n = epoll_wait(epoll_fd_, events.data(),
                             static_cast<int>(events.size()), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    touched.clear();
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == server_.stop_fd_) continue;
      if (fd == server_.listen_fd_) {
        Accept();
        continue;
      }
      if (fd == wake_fd_) {
        uint64_t count;
        (void)!read(wake_fd_, &count, sizeof count);
        std::vector<std::unique_ptr<Connection>> adopted;
        {
          std::lock_guard<std::mutex> lock(adopted_mu_);
          adopted.swap(adopted_);
        }
        for (auto& c : adopted) Add(std::move(c));
        continue;
      }
      auto it = by_fd_.find(fd);
      if (it == by_fd_.end()) continue;
      Connection& c = *it->second;
      if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) Read(c);
      touched.push_back(fd);
    }
    // Under kAlways no reply of a write goes before the log is synced: one
    // sync for every write of the round. A failed sync sends none of them:
    // their clients are disconnected (the table refuses writes from then).
    if (wrote_ && config_.fsync == FsyncPolicy::kAlways) {
      wrote_ = false;
      const absl::Status s = server_.table_->Sync();
      (s.ok() ? server_.syncs_ : server_.sync_errors_)
          .fetch_add(1, std::memory_order_relaxed);
      if (!s.ok()) {
        for (int fd : touched) {
          auto it = by_fd_.find(fd);
          if (it != by_fd_.end() && it->second->synced_reply) {
            Close(*it->second);
          }
        }
      }
    }
    for (int fd : touched) {
      auto it = by_fd_.find(fd);
      if (it == by_fd_.end()) continue;
      it->second->synced_reply = false;
      Flush(*it->second);
    }
  }
  // Replies already made go out where the client takes them at once.
  while (!by_fd_.empty()) {
    Connection& c = *by_fd_.begin()->second;
    c.closing = true;
    if (Flush(c)) Close(c);
  }
}

ServerStats Server::Stats() {
  ServerStats s;
  for (const auto& loop : loops_) {
    const LoopCounters& c = loop->counters;
    s.connections_received += c.connections_received.Get();
    s.rejected_connections += c.rejected_connections.Get();
    s.commands_processed += c.commands_processed.Get();
    s.keyspace_hits += c.keyspace_hits.Get();
    s.keyspace_misses += c.keyspace_misses.Get();
    s.net_input_bytes += c.net_input_bytes.Get();
    s.net_output_bytes += c.net_output_bytes.Get();
  }
  s.rejected_connections -= reset_at_.rejected_connections;
  s.commands_processed -= reset_at_.commands_processed;
  s.keyspace_hits -= reset_at_.keyspace_hits;
  s.keyspace_misses -= reset_at_.keyspace_misses;
  s.net_input_bytes -= reset_at_.net_input_bytes;
  s.net_output_bytes -= reset_at_.net_output_bytes;
  s.connected_clients = connected_.load();
  s.syncs = syncs_.load(std::memory_order_relaxed);
  s.sync_errors = sync_errors_.load(std::memory_order_relaxed);
  return s;
}

void Server::ResetStats() {
  // What the counters say now is zero from here on (the counts of
  // connections received and of syncs are kept, as Redis keeps them).
  reset_at_ = {};
  reset_at_ = Stats();
}

std::vector<Session> Server::Clients() {
  std::vector<Session> sessions;
  std::lock_guard<std::mutex> lock(sessions_mu_);
  for (const auto& loop : loops_) loop->AppendSessions(&sessions);
  return sessions;
}

}  // namespace roundtable::server
