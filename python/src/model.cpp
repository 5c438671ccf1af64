// glass._glass.Model and Session: loading, tokens, logits as numpy arrays, weights, the graph as
// text, and the generation entry points (generate.cpp runs them).
#include <algorithm>

#include "bindings.h"

namespace glass::python {

std::unique_ptr<Session> ModelHandle::take() {
  {
    const std::lock_guard<std::mutex> lock(mu);
    if (!idle.empty()) {
      std::unique_ptr<Session> s = std::move(idle.back());
      idle.pop_back();
      s->reset();
      return s;
    }
  }
  return unwrap(model->new_session());
}

void ModelHandle::give(std::unique_ptr<Session> s) {
  if (!s) return;
  const std::lock_guard<std::mutex> lock(mu);
  idle.push_back(std::move(s));
}

SessionLease::SessionLease(std::shared_ptr<SessionHandle> h) : handle_(std::move(h)) {
  bool expected = false;
  if (!handle_->busy.compare_exchange_strong(expected, true)) {
    handle_.reset();
    throw std::runtime_error(
        "glass: this session is in use by another call (a session serves one thread at a time)");
  }
}

SessionLease& SessionLease::operator=(SessionLease&& o) noexcept {
  release();
  handle_ = std::move(o.handle_);
  model_ = std::move(o.model_);
  own_ = std::move(o.own_);
  return *this;
}

void SessionLease::release() {
  if (handle_) handle_->busy.store(false);
  if (model_) model_->give(std::move(own_));
  handle_.reset();
  model_.reset();
}

namespace {

using ModelPtr = std::shared_ptr<ModelHandle>;
using SessionPtr = std::shared_ptr<SessionHandle>;

std::shared_ptr<std::atomic<bool>> with_cancel_flag(GenerateConfig& c) {
  c.cancel = std::make_shared<std::atomic<bool>>(false);
  return c.cancel;
}

void check_ids(const Model& m, const std::vector<int32_t>& ids) {
  for (int32_t id : ids)
    if (id < 0 || id >= m.info().vocab_size)
      throw ErrorException{make_error(ErrorCode::InvalidArgument,
                                      "token id " + std::to_string(id) + " outside the vocabulary [0, " +
                                          std::to_string(m.info().vocab_size) + ")")};
}

// Logits into a new float32 array: [n, vocab] for every token, else [vocab] for the last.
py::array_t<float> eval_into_array(Session& s, const std::vector<int32_t>& ids, bool all_logits) {
  const auto vocab = static_cast<py::ssize_t>(s.model().info().vocab_size);
  if (all_logits) {
    py::array_t<float> out({static_cast<py::ssize_t>(ids.size()), vocab});
    float* data = out.mutable_data();
    Status st;
    {
      py::gil_scoped_release nogil;
      st = s.eval(ids, std::span<float>(data, ids.size() * static_cast<size_t>(vocab)));
    }
    unwrap(st);
    return out;
  }
  Status st;
  {
    py::gil_scoped_release nogil;
    st = s.eval(ids);
  }
  unwrap(st);
  py::array_t<float> out(vocab);
  std::copy(s.last_logits().begin(), s.last_logits().end(), out.mutable_data());
  return out;
}

py::dict captured_dict(const Session& s) {
  py::dict d;
  for (const Session::Captured& c : s.captured()) {
    std::vector<py::ssize_t> shape(c.shape.begin(), c.shape.end());
    py::array_t<float> a(shape);
    std::copy(c.values.begin(), c.values.end(), a.mutable_data());
    d[py::str(c.name)] = std::move(a);
  }
  return d;
}

GraphFormat graph_format(const std::string& f) {
  if (f == "text") return GraphFormat::Text;
  if (f == "dot") return GraphFormat::Dot;
  if (f == "json") return GraphFormat::Json;
  throw ErrorException{
      make_error(ErrorCode::InvalidArgument, "graph: format must be text, dot or json, got '" + f + "'")};
}

GenerateConfig make_config(int32_t max_tokens, float temperature, int32_t top_k, float top_p, float min_p,
                           float typical_p, float repeat_penalty, float presence_penalty,
                           float frequency_penalty, int32_t penalty_last_n, py::object seed,
                           std::vector<std::string> stop, std::vector<int32_t> stop_token_ids,
                           bool stop_at_end_of_generation, bool logprobs, int32_t top_logprobs,
                           py::object logit_bias) {
  GenerateConfig c;
  c.max_tokens = max_tokens;
  SamplingConfig& s = c.sampling;
  s.temperature = temperature;
  s.top_k = top_k;
  s.top_p = top_p;
  s.min_p = min_p;
  s.typical_p = typical_p;
  s.repeat_penalty = repeat_penalty;
  s.presence_penalty = presence_penalty;
  s.frequency_penalty = frequency_penalty;
  s.penalty_last_n = penalty_last_n;
  s.seed = seed.is_none() || seed.cast<int64_t>() < 0 ? SamplingConfig::kRandomSeed : seed.cast<uint64_t>();
  if (!logit_bias.is_none())
    for (auto [k, v] : logit_bias.cast<py::dict>())
      s.logit_bias.emplace_back(k.cast<int32_t>(), v.cast<float>());
  c.stop = std::move(stop);
  c.stop_token_ids = std::move(stop_token_ids);
  c.stop_at_end_of_generation = stop_at_end_of_generation;
  c.logprobs = logprobs;
  c.top_logprobs = top_logprobs;
  return c;
}

ModelPtr load(const std::string& path, const LoadOptions& options) {
  Result<std::shared_ptr<Model>> m = make_error(ErrorCode::Internal, "load: not run");
  {
    py::gil_scoped_release nogil;
    m = load_llm(path, options);
  }
  auto h = std::make_shared<ModelHandle>();
  h->model = unwrap(std::move(m));
  return h;
}

std::vector<GenerateResult> generate_batch(const ModelPtr& h, py::handle prompts,
                                           std::vector<GenerateConfig> configs, py::object on_piece) {
  std::vector<std::vector<int32_t>> ids;
  for (py::handle p : prompts) {
    if (py::isinstance<py::str>(p))
      ids.push_back(unwrap(h->model->tokenize(p.cast<std::string>(), /*add_special=*/true)));
    else
      ids.push_back(to_ids(p));
  }
  std::optional<py::error_already_set> error;
  const bool signals = on_main_thread();
  const bool relay = !on_piece.is_none() || signals;
  auto cb = [&](size_t index, std::string_view piece) {
    py::gil_scoped_acquire gil;
    if (error) return false;
    if (signals && PyErr_CheckSignals() != 0) {
      error.emplace();
      return false;
    }
    if (on_piece.is_none()) return true;
    try {
      const py::object r = on_piece(index, to_str(piece));
      return !(py::isinstance<py::bool_>(r) && !r.cast<bool>());
    } catch (py::error_already_set& e) {
      error.emplace(std::move(e));
      return false;
    }
  };
  Result<std::vector<GenerateResult>> r = make_error(ErrorCode::Internal, "generate_batch: not run");
  {
    py::gil_scoped_release nogil;
    r = glass::generate_batch(*h->model, ids, configs, relay ? BatchPieceCallback(cb) : BatchPieceCallback{});
  }
  if (error) throw std::move(*error);
  return unwrap(std::move(r));
}

}  // namespace

void bind_model(py::module_& m) {
  m.def("_load", &load, py::arg("path"), py::arg("options"));
  m.def("_config", &make_config);

  py::class_<ModelHandle, ModelPtr>(m, "Model", "A loaded model (glass::Model); see glass.Model.")
      .def_property_readonly("info", [](const ModelPtr& h) { return h->model->info(); })
      .def("tokenize",
           [](const ModelPtr& h, const std::string& text, bool add_special, bool parse_special,
              bool as_array) -> py::object {
             auto ids = unwrap(h->model->tokenize(text, add_special, parse_special));
             if (!as_array) return py::cast(ids);
             py::array_t<int32_t> a(static_cast<py::ssize_t>(ids.size()));
             std::copy(ids.begin(), ids.end(), a.mutable_data());
             return a;
           })
      .def("detokenize",
           [](const ModelPtr& h, py::handle ids) {
             const auto v = to_ids(ids);
             check_ids(*h->model, v);
             return to_str(h->model->detokenize(v));
           })
      .def("token_to_piece",
           [](const ModelPtr& h, int32_t id) {
             check_ids(*h->model, {id});
             return py::bytes(h->model->token_to_piece(id));
           })
      .def("is_end_of_generation",
           [](const ModelPtr& h, int32_t id) { return h->model->is_end_of_generation(id); })
      .def_property_readonly("chat_template", [](const ModelPtr& h) { return h->model->chat_template(); })
      .def("apply_chat_template",
           [](const ModelPtr& h, py::handle messages, bool add_generation_prompt, py::object tools,
              py::object kwargs) {
             ChatTemplateInputs in;
             in.add_generation_prompt = add_generation_prompt;
             py::object dumps = py::module_::import("json").attr("dumps");
             if (!tools.is_none()) in.tools_json = dumps(tools).cast<std::string>();
             // More template variables, as transformers' apply_chat_template(**kwargs) passes them.
             if (!kwargs.is_none()) in.kwargs_json = dumps(kwargs).cast<std::string>();
             return to_str(unwrap(h->model->apply_chat_template(to_messages(messages), in)));
           })
      .def("graph_text",
           [](const ModelPtr& h, const std::string& format, bool after_rewrites) {
             Result<std::string> text = make_error(ErrorCode::Internal, "graph: not run");
             {
               py::gil_scoped_release nogil;  // after_rewrites may compile the prefill plan
               text = h->model->graph(graph_format(format), after_rewrites);
             }
             return unwrap(std::move(text));
           })
      .def_property_readonly("plans_compiled", [](const ModelPtr& h) { return h->model->plans_compiled(); })
      .def("tensor",
           [](const ModelPtr& h, const std::string& name) {
             std::vector<int64_t> shape;
             Result<std::vector<float>> values = make_error(ErrorCode::Internal, "tensor: not run");
             {
               py::gil_scoped_release nogil;
               values = h->model->tensor_f32(name, &shape);
             }
             const std::vector<float> v = unwrap(std::move(values));
             py::array_t<float> a(std::vector<py::ssize_t>(shape.begin(), shape.end()));
             std::copy(v.begin(), v.end(), a.mutable_data());
             return a;
           })
      .def("tensor_names", [](const ModelPtr& h) { return h->model->tensor_names(); })
      .def(
          "session",
          [](const ModelPtr& h, int64_t kv_size, int64_t kv_block_size, int64_t n_seq_max,
             const std::string& cache_type, std::optional<bool> batch_invariant) {
            SessionOptions o;
            o.kv_size = kv_size;
            o.kv_block_size = kv_block_size;
            o.n_seq_max = n_seq_max;
            if (cache_type == "f32")
              o.cache_type = CacheType::F32;
            else if (cache_type == "f16")
              o.cache_type = CacheType::F16;
            else if (!cache_type.empty())
              throw py::value_error("glass: cache_type '" + cache_type + "' is neither 'f32' nor 'f16'");
            o.batch_invariant = batch_invariant;
            auto s = std::make_shared<SessionHandle>();
            s->owner = h;
            s->session = unwrap(h->model->new_session(o));
            return s;
          },
          py::arg("kv_size") = 0, py::arg("kv_block_size") = 0, py::arg("n_seq_max") = 0,
          py::arg("cache_type") = "", py::arg("batch_invariant") = std::nullopt)
      .def("all_logits",
           [](const ModelPtr& h, py::handle ids) {
             SessionLease lease(h);
             return eval_into_array(*lease, to_ids(ids), true);
           })
      .def("generate",
           [](const ModelPtr& h, py::handle prompt, GenerateConfig config, py::object on_piece) {
             SessionLease lease(h);
             return run_generation(*lease, generate_fn(prompt, std::move(config)), std::move(on_piece));
           })
      .def("stream",
           [](const ModelPtr& h, py::handle prompt, GenerateConfig config) {
             auto cancel = with_cancel_flag(config);
             auto fn = generate_fn(prompt, std::move(config));
             return start_stream(SessionLease(h), std::move(fn), std::move(cancel));
           })
      .def("chat",
           [](const ModelPtr& h, py::handle messages, GenerateConfig config, py::object on_piece) {
             SessionLease lease(h);
             return run_generation(*lease, chat_fn(messages, std::move(config)), std::move(on_piece));
           })
      .def("chat_stream",
           [](const ModelPtr& h, py::handle messages, GenerateConfig config) {
             auto cancel = with_cancel_flag(config);
             auto fn = chat_fn(messages, std::move(config));
             return start_stream(SessionLease(h), std::move(fn), std::move(cancel));
           })
      .def("generate_batch", &generate_batch);

  py::class_<SessionHandle, SessionPtr>(m, "Session", "A session (glass::Session); see glass.Session.")
      .def("eval",
           [](const SessionPtr& h, py::handle ids, bool all_logits) {
             SessionLease lease(h);
             return eval_into_array(*lease, to_ids(ids), all_logits);
           })
      .def("set_capture",
           [](const SessionPtr& h, const std::vector<std::string>& names) {
             SessionLease lease(h);
             unwrap((*lease).set_capture(names));
           })
      .def("captured",
           [](const SessionPtr& h) {
             SessionLease lease(h);
             return captured_dict(*lease);
           })
      .def_property_readonly("logits",
                             [](const SessionPtr& h) {
                               SessionLease lease(h);
                               const auto l = (*lease).last_logits();
                               py::array_t<float> a(static_cast<py::ssize_t>(l.size()));
                               std::copy(l.begin(), l.end(), a.mutable_data());
                               return a;
                             })
      .def_property_readonly("tokens",
                             [](const SessionPtr& h) {
                               SessionLease lease(h);
                               const auto t = (*lease).tokens();
                               return std::vector<int32_t>(t.begin(), t.end());
                             })
      .def_property_readonly("n_past",
                             [](const SessionPtr& h) {
                               SessionLease lease(h);
                               return (*lease).n_past();
                             })
      .def("truncate",
           [](const SessionPtr& h, int64_t n) {
             SessionLease lease(h);
             Status st;
             {
               py::gil_scoped_release nogil;
               st = (*lease).truncate(n);
             }
             unwrap(st);
           })
      .def("reset",
           [](const SessionPtr& h) {
             SessionLease lease(h);
             (*lease).reset();
           })
      .def_property_readonly("stats",
                             [](const SessionPtr& h) {
                               const SessionStats& s = h->session->stats();
                               py::dict d;
                               d["n_eval_calls"] = s.n_eval_calls;
                               d["n_tokens_evaluated"] = s.n_tokens_evaluated;
                               d["kv_rows_written"] = s.kv_rows_written;
                               d["prefix_tokens_recomputed"] = s.prefix_tokens_recomputed;
                               d["prefix_tokens_reused"] = s.prefix_tokens_reused;
                               return d;
                             })
      .def("generate",
           [](const SessionPtr& h, py::handle prompt, GenerateConfig config, py::object on_piece) {
             SessionLease lease(h);
             return run_generation(*lease, generate_fn(prompt, std::move(config)), std::move(on_piece));
           })
      .def("stream",
           [](const SessionPtr& h, py::handle prompt, GenerateConfig config) {
             auto cancel = with_cancel_flag(config);
             auto fn = generate_fn(prompt, std::move(config));
             return start_stream(SessionLease(h), std::move(fn), std::move(cancel));
           })
      .def("chat",
           [](const SessionPtr& h, py::handle messages, GenerateConfig config, py::object on_piece) {
             SessionLease lease(h);
             return run_generation(*lease, chat_fn(messages, std::move(config)), std::move(on_piece));
           })
      .def("chat_stream", [](const SessionPtr& h, py::handle messages, GenerateConfig config) {
        auto cancel = with_cancel_flag(config);
        auto fn = chat_fn(messages, std::move(config));
        return start_stream(SessionLease(h), std::move(fn), std::move(cancel));
      });
}

}  // namespace glass::python
