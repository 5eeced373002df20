// Internal to http_server.cc: one HTTP/1.1 connection (plain TCP or TLS) as a chain of asynchronous steps on
// its own strand. Phases: idle (waiting for a request's first byte, closed by the idle timeout or shed),
// request (headers and body under one deadline, the body admitted by the body budget), answer (written under
// the write timeout). No step blocks, so a connection holds no thread while it waits for its client.
#pragma once

#include <malloc.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "absl/strings/str_cat.h"
#include "http_admission.h"
#include "http_routes.h"
#include "http_server.h"

namespace rackwise::k8s::internal {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;

// What every connection shares. Outlives the connections (see ExtenderHttpServer::Impl).
struct FrontEnd {
  FrontEnd(ExtenderService* service, const HttpServerOptions& opts)
      : options(opts),
        routes(service, opts.mode, opts.now_ms, opts.serve_verbs),
        slots(opts.max_connections),
        budget(opts.body_budget_bytes),
        metrics(&service->metrics()) {
    if (opts.decision_log) routes.set_decision_log(opts.decision_log);
  }
  const HttpServerOptions& options;
  ExtenderRoutes routes;
  asio::thread_pool* blocking = nullptr;  // where requests that may block are answered (null: on the I/O thread)
  ConnectionSlots slots;
  BodyBudget budget;
  ExtenderMetrics* metrics;
  std::atomic<uint64_t> next_ticket{1};
};

template <class Stream>
class HttpSession : public Sheddable, public std::enable_shared_from_this<HttpSession<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;
  static constexpr size_t kReadChunk = 16 << 10;
  // Bodies under this are not charged to the body budget: a 5,000-name NodeNames list is ~100 KB, and their
  // memory is bounded by max_connections anyway.
  static constexpr size_t kSmallBody = 1 << 20;

 public:
  HttpSession(FrontEnd* front, Stream stream)
      : front_(front), stream_(std::move(stream)), deadline_(stream_.get_executor()) {}
  ~HttpSession() override {
    ReleaseBudget();
    front_->slots.Leave(slot_);
  }

  auto executor() { return stream_.get_executor(); }

  void Start(uint64_t slot) {
    slot_ = slot;
    if constexpr (kTls) {
      StartDeadline();  // a handshake that never finishes is a request that never arrives
      stream_.async_handshake(asio::ssl::stream_base::server, Bind(&HttpSession::OnHandshake));
    } else {
      AwaitRequest();
    }
  }
  // From any thread: close at once (the slot was given to a newcomer).
  void Shed() override {
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] {
      beast::error_code ec;
      self->Socket().close(ec);
      self->deadline_.cancel();
    });
  }

 private:
  template <typename F>
  auto Bind(F f) {
    return beast::bind_front_handler(f, this->shared_from_this());
  }
  auto& Lowest() { return beast::get_lowest_layer(stream_); }
  auto& Socket() { return Lowest().socket(); }

  void OnHandshake(beast::error_code ec) {
    deadline_.cancel();
    if (ec || timed_out_) return;  // no certificate, a wrong one, or not TLS: nothing to answer
    AwaitRequest();
  }

  // Idle: wait for the first byte of the next request (already here when the client pipelines).
  void AwaitRequest() {
    front_->slots.SetIdle(slot_, true);
    if (buffer_.size() > 0) return StartRequest();
    Lowest().expires_after(std::chrono::milliseconds(front_->options.idle_timeout_ms));
    stream_.async_read_some(buffer_.prepare(kReadChunk), Bind(&HttpSession::OnFirstBytes));
  }
  void OnFirstBytes(beast::error_code ec, size_t n) {
    if (ec) return;  // idle timeout, closed by the client, or shed: the connection ends
    buffer_.commit(n);
    StartRequest();
  }

  void StartRequest() {
    front_->slots.SetIdle(slot_, false);
    Lowest().expires_never();
    StartDeadline();
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(front_->options.max_header_bytes));
    parser_->body_limit(front_->options.max_body_bytes);
    http::async_read_header(stream_, buffer_, *parser_, Bind(&HttpSession::OnHeader));
  }

  void OnHeader(beast::error_code ec, size_t) {
    if (ec) return Fail(ec);
    const size_t max_body = front_->options.max_body_bytes;
    const auto length = parser_->content_length();  // boost::optional<uint64_t>
    if (length && *length > max_body) return RefuseTooLarge();
    if (parser_->is_done()) return OnBody({}, 0);
    const size_t need = length ? static_cast<size_t>(*length) : max_body;
    if (need < kSmallBody) return OnBodyAdmitted();  // kube-scheduler's usual bodies never wait behind large ones
    const uint64_t ticket = front_->next_ticket.fetch_add(1);
    // The waiting request holds its session: no read or write is pending meanwhile to keep it alive.
    auto grant = [self = this->shared_from_this()] {
      asio::post(self->stream_.get_executor(), [self] { self->OnBodyAdmitted(); });
    };
    wanted_ = need;
    if (front_->budget.Acquire(need, ticket, std::move(grant))) return OnBodyAdmitted();
    waiting_ticket_ = ticket;  // the deadline keeps running while we wait
  }

  void OnBodyAdmitted() {
    waiting_ticket_ = 0;
    held_ = wanted_;
    if (timed_out_) return Refuse(503, BusyMessage());
    if (parser_->get()[http::field::expect] == "100-continue") {
      // curl and some proxies wait for this before sending a large body.
      continue_.emplace(http::status::continue_, 11);
      return http::async_write(stream_, *continue_, Bind(&HttpSession::OnContinueSent));
    }
    http::async_read(stream_, buffer_, *parser_, Bind(&HttpSession::OnBody));
  }
  void OnContinueSent(beast::error_code ec, size_t) {
    continue_.reset();
    if (ec) return Fail(ec);
    http::async_read(stream_, buffer_, *parser_, Bind(&HttpSession::OnBody));
  }

  void OnBody(beast::error_code ec, size_t) {
    if (ec) return Fail(ec);
    deadline_.cancel();
    http::request<http::string_body> request = parser_->release();
    parser_.reset();
    const auto target = request.target();
    const bool long_running = ExtenderRoutes::MayBlock(absl::string_view(target.data(), target.size())) ||
                              request.body().size() >= kSmallBody;
    if (front_->blocking != nullptr && long_running) {
      // A bind (it waits on the API server) or a large body (milliseconds of decoding) is answered on the worker
      // pool and written back on this connection's strand: the I/O thread, which serves other connections too,
      // never waits for it. The connection reads nothing meanwhile (answers stay in order).
      asio::post(*front_->blocking, [self = this->shared_from_this(), request = std::move(request)]() mutable {
        const bool keep_alive = request.keep_alive();
        HttpAnswer answer = self->Answer(std::move(request));
        asio::post(self->executor(), [self, answer = std::move(answer), keep_alive]() mutable {
          self->Write(std::move(answer), keep_alive);
        });
      });
      return;
    }
    const bool keep_alive = request.keep_alive();
    Write(Answer(std::move(request)), keep_alive);
  }

  // The routes' answer; the body's memory goes back before the answer is written.
  HttpAnswer Answer(http::request<http::string_body> request) {
    const auto method = request.method_string();
    const auto target = request.target();
    return front_->routes.Handle(absl::string_view(method.data(), method.size()),
                                 absl::string_view(target.data(), target.size()), request.body());
  }

  // 413, from the declared length (Beast refuses it with the headers) or once a chunked body grows past it.
  void RefuseTooLarge() {
    const auto length = parser_ ? parser_->content_length() : boost::none;
    Refuse(413, absl::StrCat("rackwise: request body ", length ? absl::StrCat("of ", *length, " bytes ") : "",
                             "is over the limit of ", front_->options.max_body_bytes, " bytes (--max-body-bytes)"));
  }

  // A request that cannot be answered normally: one error, counted once, then the connection closes.
  void Refuse(int status, const std::string& message) {
    deadline_.cancel();
    front_->metrics->CountHttpError(status);
    Write(HttpAnswer{status, kJsonType, JsonErrorBody(message)}, /*keep_alive=*/false);
  }

  void Write(HttpAnswer answer, bool keep_alive) {
    response_.emplace(static_cast<http::status>(answer.status), 11);
    response_->set(http::field::content_type, answer.content_type);
    if (answer.allow) response_->set(http::field::allow, answer.allow);
    response_->body() = std::move(answer.body);
    response_->keep_alive(keep_alive);
    response_->prepare_payload();
    Lowest().expires_after(std::chrono::milliseconds(front_->options.write_timeout_ms));
    http::async_write(stream_, *response_, Bind(&HttpSession::OnWritten));
  }
  void OnWritten(beast::error_code ec, size_t) {
    const bool keep_alive = response_->keep_alive();
    response_.reset();
    ReleaseBudget();
    if (ec) return;
    if (keep_alive) return AwaitRequest();
    Linger();
  }

  // Closing at once while the client still sends (a refused body) would reset the connection and could
  // destroy the error answer before the client reads it; so stop sending, drain briefly, then close.
  void Linger() {
    beast::error_code ec;
    Socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    if (ec) return;
    Lowest().expires_after(std::chrono::seconds(1));  // the TCP layer's expiry bounds the drain
    Lowest().async_read_some(asio::buffer(drain_), Bind(&HttpSession::OnDrained));
  }
  void OnDrained(beast::error_code ec, size_t) {
    if (ec) return;
    Lowest().async_read_some(asio::buffer(drain_), Bind(&HttpSession::OnDrained));
  }

  void Fail(beast::error_code ec) {
    if (timed_out_) {
      return Refuse(408,
                    absl::StrCat("rackwise: request not received within ", front_->options.request_timeout_ms, " ms"));
    }
    if (ec == http::error::body_limit) return RefuseTooLarge();
    if (ec == http::error::header_limit) {
      return Refuse(431, absl::StrCat("rackwise: request headers over ", front_->options.max_header_bytes, " bytes"));
    }
    if (ec.category() == http::make_error_code(http::error::bad_method).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message) {
      return Refuse(400, absl::StrCat("rackwise: malformed HTTP request: ", ec.message()));
    }
    deadline_.cancel();  // the client went away (or was shed): nobody to answer
  }

  void StartDeadline() {
    timed_out_ = false;
    deadline_.expires_after(std::chrono::milliseconds(front_->options.request_timeout_ms));
    std::weak_ptr<HttpSession> weak = this->shared_from_this();
    deadline_.async_wait([weak](beast::error_code ec) {
      if (ec) return;
      if (auto self = weak.lock()) self->OnDeadline();
    });
  }
  void OnDeadline() {
    timed_out_ = true;
    if (waiting_ticket_ != 0) {
      if (front_->budget.Withdraw(waiting_ticket_)) {
        waiting_ticket_ = 0;
        return Refuse(503, BusyMessage());
      }
      return;  // granted meanwhile: OnBodyAdmitted answers 503
    }
    beast::error_code ignored;
    Socket().cancel(ignored);  // the pending read ends with operation_aborted; Fail answers 408
  }
  std::string BusyMessage() const {
    return absl::StrCat("rackwise: busy: other large requests held the body budget (",
                        front_->options.body_budget_bytes, " bytes) for ", front_->options.request_timeout_ms,
                        " ms; retry");
  }

  void ReleaseBudget() {
    if (waiting_ticket_ != 0) front_->budget.Withdraw(waiting_ticket_);
    waiting_ticket_ = 0;
    if (held_ == 0) return;
    // A large request's decoded DOM was freed into this thread's malloc arena; glibc keeps it there, so four
    // I/O threads would each keep the peak of one large request. Give it back before the next one starts.
    ::malloc_trim(0);
    front_->budget.Release(held_);
    held_ = 0;
  }

  FrontEnd* front_;
  Stream stream_;
  asio::steady_timer deadline_;
  uint64_t slot_ = 0;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::empty_body>> continue_;
  std::optional<http::response<http::string_body>> response_;
  bool timed_out_ = false;
  uint64_t waiting_ticket_ = 0;
  size_t wanted_ = 0, held_ = 0;
  char drain_[4096];
};

}  // namespace rackwise::k8s::internal
