// glass._glass: the exception hierarchy, the plain result types and the configuration objects.
#include <array>
#include <cstring>

#include "bindings.h"

namespace glass::python {
namespace {

constexpr std::array kCodes = {
    ErrorCode::InvalidFile, ErrorCode::InvalidArgument, ErrorCode::Unsupported, ErrorCode::CapacityExceeded,
    ErrorCode::Io,          ErrorCode::Cancelled,       ErrorCode::Internal};

// The class of each ErrorCode, indexed as ErrorCode (created once, when the module is imported; the
// module keeps a reference to each).
std::array<PyObject*, kCodes.size()> error_types{};

struct ErrorClass {
  ErrorCode code;
  const char* name;
  PyObject* extra_base;  // a builtin a caller may catch instead, or null
  const char* doc;
};

unsigned long main_thread_ident = 0;  // set once, at import

py::dict info_dict(const ModelInfo& i) {
  py::dict d;
  d["path"] = i.path;
  d["architecture"] = i.architecture;
  d["summary"] = i.summary;
  d["backend"] = i.backend;
  d["vocab_size"] = i.vocab_size;
  d["n_ctx"] = i.n_ctx;
  d["n_ctx_train"] = i.n_ctx_train;
  d["n_layers"] = i.n_layers;
  d["n_batch"] = i.n_batch;
  d["kv_size"] = i.kv_size;
  d["kv_bytes_per_row"] = i.kv_bytes_per_row;
  d["kv_block_size"] = i.kv_block_size;
  d["n_seq_max"] = i.n_seq_max;
  d["kv_size_window"] = i.kv_size_window;
  d["file_bytes"] = i.file_bytes;
  d["n_params"] = i.n_params;
  d["weight_bytes"] = i.weight_bytes;
  d["weight_type"] = i.weight_type;
  d["file_type"] = i.file_type;
  d["load_ms"] = i.load_ms;
  return d;
}

}  // namespace

void add_errors(py::module_& m) {
  PyObject* base = PyErr_NewExceptionWithDoc(
      "glass.Error",
      "Base of every error glass raises. str(e) is glass's message (module, subject, expected versus "
      "got); the class says the kind, also as the class attribute `code` (e.g. 'invalid_file').",
      PyExc_Exception, nullptr);
  m.add_object("Error", py::reinterpret_steal<py::object>(base));
  const ErrorClass classes[] = {
      {ErrorCode::InvalidFile, "InvalidFileError", nullptr,
       "A model file that is malformed or inconsistent."},
      {ErrorCode::InvalidArgument, "InvalidArgumentError", PyExc_ValueError,
       "An argument out of range or of the wrong kind (also a ValueError)."},
      {ErrorCode::Unsupported, "UnsupportedError", nullptr,
       "An architecture, tensor type, backend or feature glass does not have."},
      {ErrorCode::CapacityExceeded, "CapacityExceededError", nullptr,
       "The context or the KV cache pool is too small for the request."},
      {ErrorCode::Io, "IoError", PyExc_OSError, "A file that cannot be read or written (also an OSError)."},
      {ErrorCode::Cancelled, "CancelledError", nullptr, "An operation that was cancelled."},
      {ErrorCode::Internal, "InternalError", nullptr, "A failure inside glass (a bug: please report it)."},
  };
  for (const ErrorClass& c : classes) {
    const py::object bases = c.extra_base != nullptr
                                 ? py::object(py::make_tuple(py::handle(base), py::handle(c.extra_base)))
                                 : py::reinterpret_borrow<py::object>(base);
    const std::string qualified = std::string("glass.") + c.name;
    PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), c.doc, bases.ptr(), nullptr);
    if (type == nullptr) throw py::error_already_set();
    py::handle(type).attr("code") = error_code_name(c.code);
    error_types[static_cast<size_t>(c.code)] = type;
    m.add_object(c.name, py::reinterpret_steal<py::object>(type));
  }
  py::handle(base).attr("code") = "error";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ErrorException& e) {
      PyErr_SetString(error_types[static_cast<size_t>(e.error.code)], e.error.message.c_str());
    }
  });
}

void bind_load_options(py::module_& m) {
  py::class_<LoadOptions>(m, "LoadOptions", "glass::LoadOptions (glass.load fills it from its arguments).")
      .def(py::init<>())
      .def_readwrite("backend", &LoadOptions::backend)
      .def_readwrite("n_ctx", &LoadOptions::n_ctx)
      .def_readwrite("min_ctx", &LoadOptions::min_ctx)
      .def_readwrite("n_batch", &LoadOptions::n_batch)
      .def_property(
          "cache_type", [](const LoadOptions& o) { return o.cache_type == CacheType::F16 ? "f16" : "f32"; },
          [](LoadOptions& o, const std::string& t) {
            if (t != "f32" && t != "f16")
              throw ErrorException{make_error(ErrorCode::InvalidArgument,
                                              "load: cache_type must be 'f32' or 'f16', got '" + t + "'")};
            o.cache_type = t == "f16" ? CacheType::F16 : CacheType::F32;
          })
      .def_readwrite("kv_size", &LoadOptions::kv_size)
      .def_readwrite("kv_block_size", &LoadOptions::kv_block_size)
      .def_readwrite("n_seq_max", &LoadOptions::n_seq_max)
      .def_readwrite("decompose", &LoadOptions::decompose)
      .def_readwrite("fuse", &LoadOptions::fuse)
      .def_readwrite("n_threads", &LoadOptions::n_threads)
      .def_readwrite("isa", &LoadOptions::isa)
      .def_readwrite("decode_strategy", &LoadOptions::decode_strategy)
      .def_readwrite("repack_weights", &LoadOptions::repack_weights)
      .def_readwrite("chat_template", &LoadOptions::chat_template);
}

void bind_generate_config(py::module_& m) {
  using C = GenerateConfig;
  py::class_<C>(m, "GenerateConfig",
                "glass::GenerateConfig with its sampling fields flattened (the generate methods fill it "
                "from their keyword arguments).")
      .def(py::init<>())
      .def_readwrite("max_tokens", &C::max_tokens)
      .def_property(
          "temperature", [](const C& c) { return c.sampling.temperature; },
          [](C& c, float v) { c.sampling.temperature = v; })
      .def_property(
          "top_k", [](const C& c) { return c.sampling.top_k; }, [](C& c, int32_t v) { c.sampling.top_k = v; })
      .def_property(
          "top_p", [](const C& c) { return c.sampling.top_p; }, [](C& c, float v) { c.sampling.top_p = v; })
      .def_property(
          "min_p", [](const C& c) { return c.sampling.min_p; }, [](C& c, float v) { c.sampling.min_p = v; })
      .def_property(
          "typical_p", [](const C& c) { return c.sampling.typical_p; },
          [](C& c, float v) { c.sampling.typical_p = v; })
      .def_property(
          "repeat_penalty", [](const C& c) { return c.sampling.repeat_penalty; },
          [](C& c, float v) { c.sampling.repeat_penalty = v; })
      .def_property(
          "presence_penalty", [](const C& c) { return c.sampling.presence_penalty; },
          [](C& c, float v) { c.sampling.presence_penalty = v; })
      .def_property(
          "frequency_penalty", [](const C& c) { return c.sampling.frequency_penalty; },
          [](C& c, float v) { c.sampling.frequency_penalty = v; })
      .def_property(
          "penalty_last_n", [](const C& c) { return c.sampling.penalty_last_n; },
          [](C& c, int32_t v) { c.sampling.penalty_last_n = v; })
      .def_property(
          "logit_bias", [](const C& c) { return c.sampling.logit_bias; },
          [](C& c, std::vector<std::pair<int32_t, float>> v) { c.sampling.logit_bias = std::move(v); })
      // None or a negative seed: a random one, reported in the result's `seed`.
      .def_property(
          "seed",
          [](const C& c) -> py::object {
            if (c.sampling.seed == SamplingConfig::kRandomSeed) return py::none();
            return py::int_(c.sampling.seed);
          },
          [](C& c, py::object v) {
            c.sampling.seed =
                v.is_none() || v.cast<int64_t>() < 0 ? SamplingConfig::kRandomSeed : v.cast<uint64_t>();
          })
      .def_readwrite("stop", &C::stop)
      .def_readwrite("stop_token_ids", &C::stop_token_ids)
      .def_readwrite("stop_at_end_of_generation", &C::stop_at_end_of_generation)
      .def_readwrite("logprobs", &C::logprobs)
      .def_readwrite("top_logprobs", &C::top_logprobs);
}

bool on_main_thread() { return PyThread_get_thread_ident() == main_thread_ident; }
void set_main_thread(unsigned long ident) { main_thread_ident = ident; }

py::str to_str(std::string_view s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

std::vector<int32_t> to_ids(py::handle ids) {
  if (py::isinstance<py::array>(ids)) {
    const auto a = py::array::ensure(ids);
    if (a.ndim() != 1 || (a.dtype().kind() != 'i' && a.dtype().kind() != 'u'))
      throw ErrorException{
          make_error(ErrorCode::InvalidArgument, "token ids: a 1-D integer array is needed")};
    const auto i32 = py::array_t<int32_t, py::array::c_style | py::array::forcecast>::ensure(a);
    return std::vector<int32_t>(i32.data(), i32.data() + i32.size());
  }
  if (py::isinstance<py::str>(ids) || py::isinstance<py::bytes>(ids))
    throw ErrorException{
        make_error(ErrorCode::InvalidArgument, "token ids: a list of ints is needed, not text")};
  return ids.cast<std::vector<int32_t>>();
}

std::vector<ChatMessage> to_messages(py::handle messages) {
  std::vector<ChatMessage> out;
  const py::object dumps = py::module_::import("json").attr("dumps");
  size_t i = 0;
  for (py::handle h : messages) {
    if (!py::isinstance<py::dict>(h))
      throw ErrorException{
          make_error(ErrorCode::InvalidArgument, "chat: messages[" + std::to_string(i) + "] is not a dict")};
    const auto d = py::reinterpret_borrow<py::dict>(h);
    if (!d.contains("role"))
      throw ErrorException{
          make_error(ErrorCode::InvalidArgument, "chat: messages[" + std::to_string(i) + "] has no 'role'")};
    ChatMessage msg;
    msg.role = d["role"].cast<std::string>();
    if (d.contains("content") && !d["content"].is_none()) msg.content = d["content"].cast<std::string>();
    py::dict extra;
    for (auto [k, v] : d) {
      const std::string key = k.cast<std::string>();
      if (key != "role" && key != "content") extra[k] = v;
    }
    if (!extra.empty()) msg.extra_json = dumps(extra).cast<std::string>();
    out.push_back(std::move(msg));
    ++i;
  }
  return out;
}

void bind_results(py::module_& m) {
  py::class_<ModelInfo>(m, "ModelInfo",
                        "What a loaded model is (glass::ModelInfo); as_dict() gives every field.")
      .def_readonly("path", &ModelInfo::path)
      .def_readonly("architecture", &ModelInfo::architecture)
      .def_readonly("summary", &ModelInfo::summary)
      .def_readonly("backend", &ModelInfo::backend)
      .def_readonly("vocab_size", &ModelInfo::vocab_size)
      .def_readonly("n_ctx", &ModelInfo::n_ctx)
      .def_readonly("n_ctx_train", &ModelInfo::n_ctx_train)
      .def_readonly("n_layers", &ModelInfo::n_layers)
      .def_readonly("n_batch", &ModelInfo::n_batch)
      .def_readonly("kv_size", &ModelInfo::kv_size)
      .def_readonly("kv_bytes_per_row", &ModelInfo::kv_bytes_per_row)
      .def_readonly("kv_block_size", &ModelInfo::kv_block_size)
      .def_readonly("n_seq_max", &ModelInfo::n_seq_max)
      .def_readonly("kv_size_window", &ModelInfo::kv_size_window)
      .def_readonly("file_bytes", &ModelInfo::file_bytes)
      .def_readonly("n_params", &ModelInfo::n_params)
      .def_readonly("weight_bytes", &ModelInfo::weight_bytes)
      .def_readonly("weight_type", &ModelInfo::weight_type)
      .def_readonly("file_type", &ModelInfo::file_type)
      .def_readonly("load_ms", &ModelInfo::load_ms)
      .def("as_dict", &info_dict)
      .def("__repr__", [](const ModelInfo& i) {
        return "ModelInfo(" + py::repr(info_dict(i)).cast<std::string>() + ")";
      });

  py::class_<TokenLogprob>(m, "TokenLogprob", "A token id and its log-probability at one step.")
      .def_readonly("id", &TokenLogprob::id)
      .def_readonly("logprob", &TokenLogprob::logprob)
      .def("__repr__", [](const TokenLogprob& t) {
        return "TokenLogprob(id=" + std::to_string(t.id) +
               ", logprob=" + py::repr(py::float_(t.logprob)).cast<std::string>() + ")";
      });
  py::class_<TokenLogprobs>(m, "TokenLogprobs",
                            "One generated token's log-probability (log-softmax of the raw logits) and its "
                            "top_logprobs most likely alternatives, most likely first.")
      .def_property_readonly("id", [](const TokenLogprobs& t) { return t.token.id; })
      .def_property_readonly("logprob", [](const TokenLogprobs& t) { return t.token.logprob; })
      .def_readonly("top", &TokenLogprobs::top)
      .def("__repr__", [](const TokenLogprobs& t) {
        return "TokenLogprobs(id=" + std::to_string(t.token.id) +
               ", logprob=" + py::repr(py::float_(t.token.logprob)).cast<std::string>() +
               ", top=" + std::to_string(t.top.size()) + " entries)";
      });

  py::class_<GenerateTimings>(m, "Timings", "Where a generation's time went, in milliseconds.")
      .def_readonly("prompt_ms", &GenerateTimings::prompt_ms)
      .def_readonly("ttft_ms", &GenerateTimings::ttft_ms)
      .def_readonly("decode_ms", &GenerateTimings::decode_ms)
      .def_readonly("n_prompt_tokens", &GenerateTimings::n_prompt_tokens)
      .def_readonly("n_decoded", &GenerateTimings::n_decoded)
      .def("__repr__", [](const GenerateTimings& t) {
        return "Timings(prompt_ms=" + std::to_string(t.prompt_ms) + ", ttft_ms=" + std::to_string(t.ttft_ms) +
               ", decode_ms=" + std::to_string(t.decode_ms) +
               ", n_prompt_tokens=" + std::to_string(t.n_prompt_tokens) +
               ", n_decoded=" + std::to_string(t.n_decoded) + ")";
      });

  py::class_<GenerateResult>(m, "GenerateResult", "The outcome of one generation (glass::GenerateResult).")
      .def_property_readonly("text", [](const GenerateResult& r) { return to_str(r.text); })
      .def_property_readonly("text_bytes", [](const GenerateResult& r) { return py::bytes(r.text); })
      .def_readonly("tokens", &GenerateResult::tokens)
      .def_property_readonly("finish_reason",
                             [](const GenerateResult& r) { return finish_reason_name(r.finish); })
      .def_readonly("seed", &GenerateResult::seed)
      .def_readonly("timings", &GenerateResult::timings)
      .def_readonly("logprobs", &GenerateResult::logprobs)
      .def_property_readonly("usage",
                             [](const GenerateResult& r) {
                               py::dict d;
                               d["prompt_tokens"] = r.timings.n_prompt_tokens;
                               d["completion_tokens"] = r.tokens.size();
                               d["total_tokens"] =
                                   static_cast<size_t>(r.timings.n_prompt_tokens) + r.tokens.size();
                               return d;
                             })
      .def_property_readonly("counters",
                             [](const GenerateResult& r) {
                               py::dict d;
                               d["plans_compiled"] = r.counters.plans_compiled;
                               d["kv_rows_written"] = r.counters.kv_rows_written;
                               d["prefix_tokens_recomputed"] = r.counters.prefix_tokens_recomputed;
                               return d;
                             })
      .def("__repr__", [](const GenerateResult& r) {
        return "GenerateResult(text=" + py::repr(to_str(r.text)).cast<std::string>() +
               ", tokens=" + std::to_string(r.tokens.size()) + ", finish_reason='" +
               finish_reason_name(r.finish) + "')";
      });
}

}  // namespace glass::python

PYBIND11_MODULE(_glass, m) {
  using namespace glass::python;
  m.doc() = "glass's C++ runtime (the glass package wraps it; import glass, not glass._glass).";
  m.attr("__version__") = GLASS_VERSION;
  set_main_thread(py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>());
  add_errors(m);
  bind_load_options(m);
  bind_generate_config(m);
  bind_results(m);
  bind_stream(m);
  bind_model(m);
}
