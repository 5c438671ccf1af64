// The C API (include/glass/glass.h) over the C++ one (glass/llm.h). Every entry point runs its body
// inside guard(), which turns a glass::Error into its status and any exception into
// GLASS_ERR_INTERNAL, so nothing unwinds into C; messages start with the function's name.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "glass/glass.h"
#include "glass/llm.h"

struct glass_model {
  std::shared_ptr<const glass::Model> model;
};

struct glass_session {
  std::unique_ptr<glass::Session> session;
  // last_logits() still holds the last evaluated row after truncate/reset; it is no longer the
  // logits of the session's last token, so the C API stops handing it out.
  bool has_logits = false;
};

struct glass_request {
  std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
  glass::GenerateResult result;
};

namespace {

// Per thread, so that concurrent callers (a model is shared between threads) keep their own.
thread_local std::string last_error;

glass_status status_of(glass::ErrorCode code) {
  switch (code) {
    case glass::ErrorCode::InvalidFile:
      return GLASS_ERR_INVALID_FILE;
    case glass::ErrorCode::InvalidArgument:
      return GLASS_ERR_INVALID_ARGUMENT;
    case glass::ErrorCode::Unsupported:
      return GLASS_ERR_UNSUPPORTED;
    case glass::ErrorCode::CapacityExceeded:
      return GLASS_ERR_CAPACITY_EXCEEDED;
    case glass::ErrorCode::Io:
      return GLASS_ERR_IO;
    case glass::ErrorCode::Cancelled:
      return GLASS_ERR_CANCELLED;
    case glass::ErrorCode::Internal:
      return GLASS_ERR_INTERNAL;
  }
  return GLASS_ERR_INTERNAL;
}

// Thrown inside guard() only, to leave a body from any depth with a status and message.
struct Failure {
  glass_status status;
  std::string message;
};

[[noreturn]] void fail(glass_status status, std::string message) {
  throw Failure{status, std::move(message)};
}

void check(const glass::Error& e) { fail(status_of(e.code), e.message); }
void check(const glass::Status& st) {
  if (!st) check(st.error());
}

template <class T>
void require(const T* p, const char* name) {
  if (p == nullptr) fail(GLASS_ERR_INVALID_ARGUMENT, fmt::format("{} is NULL", name));
}

glass_status record(const char* fn, glass_status status, std::string_view message) noexcept {
  try {
    last_error = fmt::format("{}: {}", fn, message);
  } catch (...) {
    // No memory for the message: an empty one beats an exception crossing into C.
    last_error.clear();
  }
  return status;
}

template <class F>
glass_status guard(const char* fn, F&& body) noexcept {
  try {
    body();
    return GLASS_OK;
  } catch (const Failure& f) {
    return record(fn, f.status, f.message);
  } catch (const std::bad_alloc&) {
    return record(fn, GLASS_ERR_INTERNAL, "out of memory");
  } catch (const std::exception& e) {
    return record(fn, GLASS_ERR_INTERNAL, fmt::format("unexpected exception: {}", e.what()));
  } catch (...) {
    return record(fn, GLASS_ERR_INTERNAL, "unexpected exception");
  }
}

glass::GenerateConfig config_of(const glass_generate_params* params) {
  const glass_generate_params p = params != nullptr ? *params : glass_generate_params_default();
  glass::GenerateConfig c;
  c.max_tokens = p.max_tokens;
  c.sampling.temperature = p.temperature;
  c.sampling.top_k = p.top_k;
  c.sampling.top_p = p.top_p;
  c.sampling.min_p = p.min_p;
  c.sampling.seed = p.seed;
  if (p.n_stop > 0) require(p.stop, "params->stop");
  for (size_t i = 0; i < p.n_stop; ++i) {
    if (p.stop[i] == nullptr) fail(GLASS_ERR_INVALID_ARGUMENT, fmt::format("params->stop[{}] is NULL", i));
    c.stop.emplace_back(p.stop[i]);
  }
  return c;
}

// Runs generation with the C callback; afterwards streams the text generate held back at the end
// (it adds that tail to the result without calling back), so the pieces add up to the text.
void generate_into(glass_session* session, const std::vector<int32_t>* ids, std::string_view prompt,
                   const glass_generate_params* params, glass_piece_fn on_piece, void* user,
                   glass_request* request) {
  glass::GenerateConfig config = config_of(params);
  if (request != nullptr) {
    request->result = {};
    config.cancel = request->cancel;
  }
  size_t streamed = 0;
  bool stopped = false;
  glass::PieceCallback callback;
  if (on_piece != nullptr)
    callback = [&](std::string_view piece) {
      streamed += piece.size();
      stopped = on_piece(piece.data(), piece.size(), user) != 0;
      return !stopped;
    };
  session->has_logits = false;
  auto r = ids != nullptr ? glass::generate(*session->session, *ids, config, callback)
                          : glass::generate(*session->session, prompt, config, callback);
  if (!r) check(r.error());
  session->has_logits = session->session->n_past() > 0;
  if (on_piece != nullptr && !stopped && r->text.size() > streamed)
    on_piece(r->text.data() + streamed, r->text.size() - streamed, user);
  if (request != nullptr) request->result = std::move(*r);
}

}  // namespace

extern "C" {

const char* glass_status_name(glass_status status) {
  switch (status) {
    case GLASS_OK:
      return "ok";
    case GLASS_ERR_INVALID_FILE:
      return "invalid_file";
    case GLASS_ERR_INVALID_ARGUMENT:
      return "invalid_argument";
    case GLASS_ERR_UNSUPPORTED:
      return "unsupported";
    case GLASS_ERR_CAPACITY_EXCEEDED:
      return "capacity_exceeded";
    case GLASS_ERR_IO:
      return "io";
    case GLASS_ERR_CANCELLED:
      return "cancelled";
    case GLASS_ERR_INTERNAL:
      return "internal";
    case GLASS_ERR_BUFFER_TOO_SMALL:
      return "buffer_too_small";
  }
  return "unknown";
}

const char* glass_last_error(void) { return last_error.c_str(); }

glass_load_options glass_load_options_default(void) {
  const glass::LoadOptions d;
  glass_load_options o;
  o.backend = nullptr;
  o.n_ctx = d.n_ctx;
  o.n_threads = d.n_threads;
  o.kv_size = d.kv_size;
  o.cache_type = d.cache_type == glass::CacheType::F16 ? GLASS_CACHE_F16 : GLASS_CACHE_F32;
  return o;
}

glass_status glass_model_load(const char* path, const glass_load_options* options, glass_model** model) {
  return guard("glass_model_load", [&] {
    require(model, "model");
    *model = nullptr;
    require(path, "path");
    const glass_load_options o = options != nullptr ? *options : glass_load_options_default();
    glass::LoadOptions lo;
    if (o.backend != nullptr) lo.backend = o.backend;
    lo.n_ctx = o.n_ctx;
    lo.n_threads = o.n_threads;
    lo.kv_size = o.kv_size;
    switch (o.cache_type) {
      case GLASS_CACHE_F32:
        lo.cache_type = glass::CacheType::F32;
        break;
      case GLASS_CACHE_F16:
        lo.cache_type = glass::CacheType::F16;
        break;
      default:
        fail(GLASS_ERR_INVALID_ARGUMENT,
             fmt::format("options->cache_type {} is neither GLASS_CACHE_F32 nor GLASS_CACHE_F16",
                         static_cast<int>(o.cache_type)));
    }
    if (o.n_threads < 0)
      fail(GLASS_ERR_INVALID_ARGUMENT, fmt::format("options->n_threads {} is negative", o.n_threads));
    auto m = glass::load_llm(path, lo);
    if (!m) {
      const auto& e = m.error();
      // Most loader messages name the file; those that do not (a bad option) get it here.
      if (e.message.find(path) == std::string::npos)
        fail(status_of(e.code), fmt::format("{}: {}", path, e.message));
      check(e);
    }
    *model = new glass_model{std::move(*m)};
  });
}

void glass_model_free(glass_model* model) { delete model; }

glass_status glass_model_get_info(const glass_model* model, glass_model_info* info) {
  return guard("glass_model_get_info", [&] {
    require(model, "model");
    require(info, "info");
    const glass::ModelInfo& i = model->model->info();
    info->architecture = i.architecture.c_str();
    info->backend = i.backend.c_str();
    info->vocab_size = i.vocab_size;
    info->n_ctx = i.n_ctx;
    info->n_ctx_train = i.n_ctx_train;
    info->n_layers = i.n_layers;
  });
}

glass_status glass_tokenize(const glass_model* model, const char* text, size_t text_len, int add_special,
                            int parse_special, int32_t* tokens, size_t capacity, size_t* n_tokens) {
  return guard("glass_tokenize", [&] {
    require(n_tokens, "n_tokens");
    *n_tokens = 0;
    require(model, "model");
    if (text_len > 0) require(text, "text");
    auto ids = model->model->tokenize(std::string_view(text_len > 0 ? text : "", text_len), add_special != 0,
                                      parse_special != 0);
    if (!ids) check(ids.error());
    *n_tokens = ids->size();
    if (ids->size() > capacity)
      fail(GLASS_ERR_BUFFER_TOO_SMALL,
           fmt::format("the text is {} tokens, the buffer holds {}", ids->size(), capacity));
    if (!ids->empty()) {
      require(tokens, "tokens");
      std::copy(ids->begin(), ids->end(), tokens);
    }
  });
}

glass_status glass_detokenize(const glass_model* model, const int32_t* tokens, size_t n_tokens, char* text,
                              size_t capacity, size_t* text_len) {
  return guard("glass_detokenize", [&] {
    require(text_len, "text_len");
    *text_len = 0;
    require(model, "model");
    if (n_tokens > 0) require(tokens, "tokens");
    const int64_t vocab = model->model->info().vocab_size;
    for (size_t i = 0; i < n_tokens; ++i)
      if (tokens[i] < 0 || tokens[i] >= vocab)
        fail(GLASS_ERR_INVALID_ARGUMENT,
             fmt::format("tokens[{}] = {} is outside the vocabulary [0, {})", i, tokens[i], vocab));
    const std::string s = model->model->detokenize(std::vector<int32_t>(tokens, tokens + n_tokens));
    *text_len = s.size();
    if (s.size() + 1 > capacity)
      fail(GLASS_ERR_BUFFER_TOO_SMALL,
           fmt::format("the text is {} bytes and a NUL, the buffer holds {}", s.size(), capacity));
    require(text, "text");
    std::copy(s.begin(), s.end(), text);
    text[s.size()] = '\0';
  });
}

int glass_token_is_end_of_generation(const glass_model* model, int32_t token) {
  return model != nullptr && model->model->is_end_of_generation(token) ? 1 : 0;
}

glass_status glass_session_new(const glass_model* model, glass_session** session) {
  return glass_session_new_with(model, nullptr, session);
}

glass_session_options glass_session_options_default(void) {
  glass_session_options o;
  o.kv_size = 0;
  o.kv_block_size = 0;
  o.n_seq_max = 0;
  o.cache_type = GLASS_CACHE_DEFAULT;
  return o;
}

glass_status glass_session_new_with(const glass_model* model, const glass_session_options* options,
                                    glass_session** session) {
  return guard("glass_session_new", [&] {
    require(session, "session");
    *session = nullptr;
    require(model, "model");
    const glass_session_options o = options != nullptr ? *options : glass_session_options_default();
    glass::SessionOptions so;
    so.kv_size = o.kv_size;
    so.kv_block_size = o.kv_block_size;
    so.n_seq_max = o.n_seq_max;
    switch (o.cache_type) {
      case GLASS_CACHE_DEFAULT:
        break;
      case GLASS_CACHE_F32:
        so.cache_type = glass::CacheType::F32;
        break;
      case GLASS_CACHE_F16:
        so.cache_type = glass::CacheType::F16;
        break;
      default:
        fail(GLASS_ERR_INVALID_ARGUMENT,
             fmt::format("options->cache_type {} is none of GLASS_CACHE_F32, GLASS_CACHE_F16, "
                         "GLASS_CACHE_DEFAULT",
                         o.cache_type));
    }
    auto s = model->model->new_session(so);
    if (!s) check(s.error());
    *session = new glass_session{std::move(*s)};
  });
}

void glass_session_free(glass_session* session) { delete session; }

glass_status glass_session_eval(glass_session* session, const int32_t* tokens, size_t n_tokens) {
  return glass_session_eval_all(session, tokens, n_tokens, nullptr, 0);
}

glass_status glass_session_eval_all(glass_session* session, const int32_t* tokens, size_t n_tokens,
                                    float* logits, size_t capacity) {
  return guard(logits != nullptr ? "glass_session_eval_all" : "glass_session_eval", [&] {
    require(session, "session");
    require(tokens, "tokens");
    std::span<float> all;
    if (logits != nullptr) {
      const auto vocab = static_cast<size_t>(session->session->model().info().vocab_size);
      if (n_tokens > SIZE_MAX / vocab)
        fail(GLASS_ERR_INVALID_ARGUMENT, fmt::format("n_tokens {} times the vocabulary overflows", n_tokens));
      const size_t need = n_tokens * vocab;
      if (capacity < need)
        fail(GLASS_ERR_BUFFER_TOO_SMALL,
             fmt::format("{} tokens' logits are {} floats, the buffer holds {}", n_tokens, need, capacity));
      all = std::span<float>(logits, need);
    }
    check(session->session->eval(std::span<const int32_t>(tokens, n_tokens), all));
    session->has_logits = true;
  });
}

glass_status glass_session_logits(const glass_session* session, const float** logits, size_t* n_logits) {
  return guard("glass_session_logits", [&] {
    require(logits, "logits");
    require(n_logits, "n_logits");
    *logits = nullptr;
    *n_logits = 0;
    require(session, "session");
    if (!session->has_logits)
      fail(GLASS_ERR_INVALID_ARGUMENT,
           "no logits: nothing evaluated since the session began, a truncate or a reset");
    const std::span<const float> last = session->session->last_logits();
    *logits = last.data();
    *n_logits = last.size();
  });
}

int64_t glass_session_n_past(const glass_session* session) {
  return session != nullptr ? session->session->n_past() : 0;
}

glass_status glass_session_truncate(glass_session* session, int64_t n) {
  return guard("glass_session_truncate", [&] {
    require(session, "session");
    session->has_logits = false;
    check(session->session->truncate(n));
  });
}

glass_status glass_session_reset(glass_session* session) {
  return guard("glass_session_reset", [&] {
    require(session, "session");
    session->has_logits = false;
    session->session->reset();
  });
}

glass_generate_params glass_generate_params_default(void) {
  const glass::GenerateConfig d;
  glass_generate_params p;
  p.max_tokens = d.max_tokens;
  p.temperature = d.sampling.temperature;
  p.top_k = d.sampling.top_k;
  p.top_p = d.sampling.top_p;
  p.min_p = d.sampling.min_p;
  p.seed = d.sampling.seed;
  p.stop = nullptr;
  p.n_stop = 0;
  return p;
}

glass_status glass_request_new(glass_request** request) {
  return guard("glass_request_new", [&] {
    require(request, "request");
    *request = new glass_request;
  });
}

void glass_request_free(glass_request* request) { delete request; }

void glass_request_cancel(glass_request* request) {
  if (request != nullptr) request->cancel->store(true);
}

glass_status glass_generate(glass_session* session, const char* prompt, const glass_generate_params* params,
                            glass_piece_fn on_piece, void* user, glass_request* request) {
  return guard("glass_generate", [&] {
    require(session, "session");
    require(prompt, "prompt");
    generate_into(session, nullptr, prompt, params, on_piece, user, request);
  });
}

glass_status glass_generate_tokens(glass_session* session, const int32_t* prompt, size_t n_prompt,
                                   const glass_generate_params* params, glass_piece_fn on_piece, void* user,
                                   glass_request* request) {
  return guard("glass_generate_tokens", [&] {
    require(session, "session");
    if (n_prompt > 0) require(prompt, "prompt");
    const std::vector<int32_t> ids(prompt, prompt + n_prompt);
    generate_into(session, &ids, {}, params, on_piece, user, request);
  });
}

const char* glass_request_text(const glass_request* request, size_t* len) {
  if (request == nullptr) {
    if (len != nullptr) *len = 0;
    return "";
  }
  if (len != nullptr) *len = request->result.text.size();
  return request->result.text.c_str();
}

const int32_t* glass_request_tokens(const glass_request* request, size_t* n_tokens) {
  const bool any = request != nullptr && !request->result.tokens.empty();
  if (n_tokens != nullptr) *n_tokens = any ? request->result.tokens.size() : 0;
  return any ? request->result.tokens.data() : nullptr;
}

glass_finish_reason glass_request_finish_reason(const glass_request* request) {
  if (request == nullptr) return GLASS_FINISH_LENGTH;
  switch (request->result.finish) {
    case glass::FinishReason::Stop:
      return GLASS_FINISH_STOP;
    case glass::FinishReason::Length:
      return GLASS_FINISH_LENGTH;
    case glass::FinishReason::Cancelled:
      return GLASS_FINISH_CANCELLED;
  }
  return GLASS_FINISH_LENGTH;
}

}  // extern "C"
