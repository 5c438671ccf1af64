// Generation from Python: on the caller's thread with the GIL released (pieces reach a Python
// callback under the GIL), or on a thread of its own behind the glass.Stream iterator.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <thread>

#include "bindings.h"

namespace glass::python {
namespace {

// The piece callback of a call made with the GIL released: takes the GIL only when there is Python
// to run (a user callback, or signal handlers on the main thread). A Python exception (the
// callback's, or KeyboardInterrupt from a handler) cancels the generation and is raised once it
// has returned.
struct PieceRelay {
  py::object user;  // None or a callable(str) -> bool | None
  bool signals = false;
  std::optional<py::error_already_set> error;

  bool operator()(std::string_view piece) {
    if (user.is_none() && !signals) return true;
    py::gil_scoped_acquire gil;
    if (signals && PyErr_CheckSignals() != 0) {
      error.emplace();
      return false;
    }
    if (user.is_none()) return true;
    try {
      const py::object r = user(to_str(piece));
      return !(py::isinstance<py::bool_>(r) && !r.cast<bool>());
    } catch (py::error_already_set& e) {
      error.emplace(std::move(e));
      return false;
    }
  }
};

// A generation running on its own thread; the iterator takes its pieces from a queue. The thread
// never touches Python objects, so it needs no GIL and the iterator's holder can join it anywhere.
class Stream {
 public:
  Stream(SessionLease lease, GenerateFn fn, std::shared_ptr<std::atomic<bool>> cancel)
      : lease_(std::move(lease)), cancel_(std::move(cancel)) {
    worker_ = std::thread([this, fn = std::move(fn)] {
      auto r = fn(*lease_, [this](std::string_view piece) {
        {
          const std::lock_guard<std::mutex> lock(mu_);
          pieces_.emplace_back(piece);
        }
        cv_.notify_one();
        return !cancel_->load();
      });
      {
        const std::lock_guard<std::mutex> lock(mu_);
        outcome_.emplace(std::move(r));
      }
      cv_.notify_one();
    });
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    py::gil_scoped_release nogil;
    stop();
  }

  py::str next() {
    for (;;) {
      std::optional<std::string> piece;
      bool ended = false;
      {
        py::gil_scoped_release nogil;
        std::unique_lock<std::mutex> lock(mu_);
        // Woken at least every 50 ms to run Python's signal handlers (Ctrl-C) on the main thread.
        cv_.wait_for(lock, std::chrono::milliseconds(50), [this] { return !pieces_.empty() || outcome_; });
        if (!pieces_.empty()) {
          piece = std::move(pieces_.front());
          pieces_.pop_front();
          text_ += *piece;
        }
        ended = !piece && outcome_.has_value();
      }
      if (piece) return to_str(*piece);
      if (done_ || ended) {
        finish();
        throw py::stop_iteration();
      }
      if (on_main_thread() && PyErr_CheckSignals() != 0) {
        py::error_already_set interrupted;
        close();
        throw interrupted;
      }
    }
  }

  // Cancels (keeping what was generated: the result's finish_reason is "cancelled") and waits; the
  // pieces not taken yet are dropped. An error the generation ended with is not raised.
  void close() {
    {
      py::gil_scoped_release nogil;
      stop();
    }
    pieces_.clear();
    if (done_) return;
    done_ = true;
    if (outcome_ && outcome_->ok()) result_ = py::cast(std::move(outcome_->value()));
  }

  py::object result() const { return result_; }
  bool done() const { return done_; }
  py::str text() const { return to_str(text_); }

 private:
  void stop() {
    cancel_->store(true);
    if (worker_.joinable()) worker_.join();
    lease_.release();
  }
  // The iteration ended: keep the worker's result or raise its error (once).
  void finish() {
    if (done_) return;
    {
      py::gil_scoped_release nogil;
      stop();
    }
    done_ = true;
    if (!outcome_->ok()) throw ErrorException{outcome_->error()};
    result_ = py::cast(std::move(outcome_->value()));
  }

  SessionLease lease_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> pieces_;
  std::optional<Result<GenerateResult>> outcome_;
  std::string text_;  // the pieces taken so far
  std::thread worker_;
  py::object result_ = py::none();
  bool done_ = false;
};

}  // namespace

GenerateFn generate_fn(py::handle prompt, GenerateConfig config) {
  if (py::isinstance<py::str>(prompt))
    return
        [text = prompt.cast<std::string>(), config = std::move(config)](Session& s, const PieceCallback& cb) {
          return generate(s, std::string_view(text), config, cb);
        };
  return [ids = to_ids(prompt), config = std::move(config)](Session& s, const PieceCallback& cb) {
    return generate(s, ids, config, cb);
  };
}

GenerateFn chat_fn(py::handle messages, GenerateConfig config) {
  return [msgs = to_messages(messages), config = std::move(config)](Session& s, const PieceCallback& cb) {
    return s.chat(msgs, config, cb);
  };
}

GenerateResult run_generation(Session& s, const GenerateFn& fn, py::object on_piece) {
  PieceRelay relay{std::move(on_piece), on_main_thread(), std::nullopt};
  std::optional<Result<GenerateResult>> r;
  {
    py::gil_scoped_release nogil;
    r.emplace(fn(s, [&relay](std::string_view piece) { return relay(piece); }));
  }
  if (relay.error) throw std::move(*relay.error);
  return unwrap(std::move(*r));
}

py::object start_stream(SessionLease lease, GenerateFn fn, std::shared_ptr<std::atomic<bool>> cancel) {
  return py::cast(std::make_unique<Stream>(std::move(lease), std::move(fn), std::move(cancel)));
}

void bind_stream(py::module_& m) {
  py::class_<Stream>(m, "Stream", R"(An iterator over the text pieces of a generation running on a thread
of its own (generate(..., stream=True) / chat(..., stream=True)).

Iterating yields each piece (str) as soon as glass emits it. When the iterator is exhausted,
`result` holds the GenerateResult (its text equals the pieces joined); an error of the generation
is raised by the call to next() that would have ended the iteration. close() (or leaving a `with`
block, or dropping the stream) cancels a generation still running and waits for it: `result` then
has finish_reason 'cancelled' and the text generated so far. Ctrl-C while waiting for a piece
cancels the generation the same way and raises KeyboardInterrupt.)")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &Stream::next)
      .def("close", &Stream::close, "Cancel the generation if it still runs, and wait for it.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](Stream& s, py::args) { s.close(); })
      .def_property_readonly("result", &Stream::result,
                             "The GenerateResult once the iteration ended or close() returned; None before.")
      .def_property_readonly("done", &Stream::done)
      .def_property_readonly("text", &Stream::text, "The pieces yielded so far, joined.");
}

}  // namespace glass::python
