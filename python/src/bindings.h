#pragma once
// The extension module glass._glass: pybind11 over the public C++ API (include/glass/ only). The
// Python package (python/glass/__init__.py) wraps these objects with keyword signatures, the graph
// as Python objects and the numpy analysis helpers.
//
// GIL: every call into the library that computes (load, eval, generation) runs with the GIL
// released. Generation re-takes it only to call a Python piece callback and, on the main thread, to
// run Python's signal handlers between pieces, so that Ctrl-C cancels the generation (it ends at
// the next piece) and then raises KeyboardInterrupt.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "glass/llm.h"

namespace glass::python {

namespace py = pybind11;

// A glass::Error on its way to Python: the translator (module.cpp) raises the glass.Error subclass
// of its code with its message.
struct ErrorException {
  Error error;
};

template <class T>
T unwrap(Result<T>&& r) {
  if (!r) throw ErrorException{r.error()};
  return std::move(r.value());
}
inline void unwrap(const Status& s) {
  if (!s) throw ErrorException{s.error()};
}
inline void unwrap(Status&& s) {
  if (!s) throw ErrorException{s.error()};
}

// UTF-8 text from the library as str; bytes that are not UTF-8 (a model may emit any byte) read as
// U+FFFD, never as an exception.
py::str to_str(std::string_view s);
// A list of ints or an integer ndarray as token ids.
std::vector<int32_t> to_ids(py::handle ids);
// A list of {"role": ..., "content": ...} dicts; other keys go to ChatMessage::extra_json.
std::vector<ChatMessage> to_messages(py::handle messages);

// A loaded model and the sessions it lends to model-level calls (generate, chat, log_likelihood),
// reset before each use, so that repeated calls neither allocate a KV cache nor share one between
// threads.
struct ModelHandle {
  std::shared_ptr<Model> model;
  std::mutex mu;
  std::vector<std::unique_ptr<Session>> idle;

  std::unique_ptr<Session> take();
  void give(std::unique_ptr<Session> s);
};

// A session as Python holds it. Sessions are not thread-safe: a second thread using one while a
// call runs gets a RuntimeError instead of a corrupted cache.
struct SessionHandle {
  std::shared_ptr<ModelHandle> owner;
  std::unique_ptr<Session> session;
  std::atomic<bool> busy{false};
};

// Marks a session busy for a scope (or for a stream's life).
class SessionLease {
 public:
  SessionLease() = default;
  explicit SessionLease(std::shared_ptr<SessionHandle> h);  // throws RuntimeError when busy
  // A session lent by the model for one call.
  explicit SessionLease(std::shared_ptr<ModelHandle> m) : model_(std::move(m)), own_(model_->take()) {}
  SessionLease(SessionLease&&) = default;
  SessionLease& operator=(SessionLease&& o) noexcept;
  ~SessionLease() { release(); }
  Session& operator*() const { return handle_ ? *handle_->session : *own_; }
  void release();

 private:
  std::shared_ptr<SessionHandle> handle_;
  std::shared_ptr<ModelHandle> model_;
  std::unique_ptr<Session> own_;
};

// What one generation call runs, given the piece callback to stream through.
using GenerateFn = std::function<Result<GenerateResult>(Session& s, const PieceCallback& on_piece)>;
// A generation from a str (tokenized with BOS when the session is empty) or from token ids.
GenerateFn generate_fn(py::handle prompt, GenerateConfig config);
GenerateFn chat_fn(py::handle messages, GenerateConfig config);

// Runs `fn` on the calling thread with the GIL released; `on_piece` (None or a callable taking a
// str; returning False cancels) is called under the GIL.
GenerateResult run_generation(Session& s, const GenerateFn& fn, py::object on_piece);
// Starts `fn` on a thread of its own and returns the glass.Stream iterating its pieces; `cancel` is
// the flag of the config `fn` holds (set by Stream.close).
py::object start_stream(SessionLease lease, GenerateFn fn, std::shared_ptr<std::atomic<bool>> cancel);

void bind_results(py::module_& m);
void bind_stream(py::module_& m);
void bind_model(py::module_& m);

// True on the thread Python runs signal handlers on (the main thread).
bool on_main_thread();
void set_main_thread(unsigned long ident);
void add_errors(py::module_& m);
void bind_load_options(py::module_& m);
void bind_generate_config(py::module_& m);

}  // namespace glass::python
