// The extender's HTTP(S) front end on Boost.Beast: the acceptor, the I/O threads and the TLS context. One
// connection is an HttpSession (http_session.h); what a request gets is ExtenderRoutes' business.
#include "http_server.h"

#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "http_session.h"

namespace rackwise::k8s {

using internal::FrontEnd;
using internal::HttpSession;
namespace asio = internal::asio;
namespace beast = internal::beast;
using tcp = asio::ip::tcp;

class ExtenderHttpServer::Impl {
 public:
  // Declaration order is destruction order reversed: the I/O contexts (and with them every connection) go
  // before the TLS context and the shared front end they use.
  Impl(ExtenderService* service, const HttpServerOptions& options)
      : front_(service, options), iocs_(MakeContexts(options.threads)) {
    if (options.blocking_threads > 0) {
      front_.blocking = &blocking_.emplace(static_cast<size_t>(options.blocking_threads));
    }
  }
  ~Impl() { Stop(); }

  absl::Status Start(int* port) {
    const HttpServerOptions& o = front_.options;
    if (!o.cert_file.empty()) {
      if (absl::Status s = LoadTls(); !s.ok()) return s;
    }
    beast::error_code ec;
    tcp::endpoint endpoint(asio::ip::make_address(o.host, ec), static_cast<uint16_t>(o.port));
    if (ec) return absl::InvalidArgumentError(absl::StrCat("cannot listen on ", o.host, ": ", ec.message()));
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return absl::UnavailableError(absl::StrCat("cannot bind ", o.host, ":", o.port, ": ", ec.message()));
    *port = acceptor_.local_endpoint().port();
    Accept();
    for (auto& ioc : iocs_) {
      guards_.push_back(asio::make_work_guard(*ioc));  // a context without connections keeps its thread
      threads_.emplace_back([ioc = ioc.get()] { ioc->run(); });
    }
    return absl::OkStatus();
  }

  void Stop() {
    if (stopped_) return;
    stopped_ = true;
    asio::post(acceptor_.get_executor(), [this] {
      beast::error_code ec;
      acceptor_.close(ec);
    });
    for (auto& ioc : iocs_) ioc->stop();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    guards_.clear();
    // Binds and large requests in flight finish (the API client's own timeouts bound binds); what they post
    // back to the stopped contexts is destroyed with them, after this.
    if (blocking_) blocking_->join();
  }

  HttpServerStats stats() const {
    return HttpServerStats{front_.slots.open(), front_.slots.idle(), front_.slots.shed(), front_.slots.refused(),
                           front_.budget.in_use()};
  }

 private:
  absl::Status LoadTls() {
    const HttpServerOptions& o = front_.options;
    tls_.emplace(asio::ssl::context::tls_server);
    beast::error_code ec;
    tls_->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                          asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1,
                      ec);
    tls_->use_certificate_chain_file(o.cert_file, ec);
    if (!ec) tls_->use_private_key_file(o.key_file, asio::ssl::context::pem, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot load the TLS certificate ", o.cert_file, " or key ", o.key_file, ": ", ec.message()));
    }
    if (!o.client_ca_file.empty()) {
      tls_->load_verify_file(o.client_ca_file, ec);
      if (ec) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot load the client CA ", o.client_ca_file, ": ", ec.message()));
      }
      tls_->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
    }
    return absl::OkStatus();
  }

  void Accept() {
    // Connections go to the I/O threads in turn and stay there: no handler of a connection ever wakes another
    // thread (one shared context made every completion a cross-thread hand-off on a 2-core machine).
    asio::io_context& next = *iocs_[next_ioc_++ % iocs_.size()];
    acceptor_.async_accept(asio::make_strand(next), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
      if (ec) {
        // Out of file descriptors, most likely: try again shortly instead of spinning.
        retry_.expires_after(std::chrono::milliseconds(50));
        retry_.async_wait([this](beast::error_code e) {
          if (!e) Accept();
        });
        return;
      }
      socket.set_option(tcp::no_delay(true), ec);
      if (tls_) {
        Admit(std::make_shared<HttpSession<beast::ssl_stream<beast::tcp_stream>>>(
            &front_, beast::ssl_stream<beast::tcp_stream>(std::move(socket), *tls_)));
      } else {
        Admit(std::make_shared<HttpSession<beast::tcp_stream>>(&front_, beast::tcp_stream(std::move(socket))));
      }
      Accept();
    });
  }

  template <class Session>
  void Admit(std::shared_ptr<Session> session) {
    uint64_t slot = front_.slots.Admit(session);
    if (slot == 0) {
      // Every slot is busy inside a request: refuse the newcomer; it may retry. Counted as a 503.
      front_.metrics->CountHttpError(503);
      return;  // the socket closes with the session
    }
    // Started on its own I/O thread, so that every step of the connection runs there.
    asio::post(session->executor(), [session, slot] { session->Start(slot); });
  }

  // One single-threaded I/O context per I/O thread (`threads`, 0: one per core).
  static std::vector<std::unique_ptr<asio::io_context>> MakeContexts(int threads) {
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::unique_ptr<asio::io_context>> out;
    for (int i = 0; i < threads; ++i) out.push_back(std::make_unique<asio::io_context>(1));
    return out;
  }

  FrontEnd front_;
  std::optional<asio::ssl::context> tls_;
  std::vector<std::unique_ptr<asio::io_context>> iocs_;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  size_t next_ioc_ = 0;  // touched only by the acceptor's handler
  tcp::acceptor acceptor_{asio::make_strand(*iocs_[0])};
  asio::steady_timer retry_{acceptor_.get_executor()};
  std::vector<std::thread> threads_;
  // The worker pool (HttpServerOptions::blocking_threads > 0). Joined in Stop, before the I/O contexts go: its
  // tasks hold connections of those contexts.
  std::optional<asio::thread_pool> blocking_;
  bool stopped_ = false;
};

int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ExtenderHttpServer::ExtenderHttpServer(ExtenderService* service, HttpServerOptions options)
    : service_(service), options_(std::move(options)) {
  if (!options_.now_ms) options_.now_ms = SteadyNowMs;
}

ExtenderHttpServer::~ExtenderHttpServer() { Stop(); }

absl::Status ExtenderHttpServer::Start() {
  if (options_.cert_file.empty() != options_.key_file.empty()) {
    return absl::InvalidArgumentError("HTTPS needs both a certificate and a key");
  }
  if (!options_.client_ca_file.empty() && options_.cert_file.empty()) {
    return absl::InvalidArgumentError("a client CA needs HTTPS (a certificate and a key)");
  }
  impl_ = std::make_unique<Impl>(service_, options_);
  absl::Status s = impl_->Start(&port_);
  if (!s.ok()) impl_.reset();
  return s;
}

void ExtenderHttpServer::Stop() {
  if (impl_) impl_->Stop();
  impl_.reset();
}

HttpServerStats ExtenderHttpServer::stats() const { return impl_ ? impl_->stats() : HttpServerStats{}; }

}  // namespace rackwise::k8s
