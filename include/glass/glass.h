#pragma once
// glass C API: the runtime of glass/llm.h for C and for other languages' FFIs. C99; no C++ exception
// ever leaves a function of this header.
//
//   glass_model* model;
//   glass_load_options opt = glass_load_options_default();
//   if (glass_model_load("models/stories260K.gguf", &opt, &model) != GLASS_OK)
//     fprintf(stderr, "%s\n", glass_last_error());
//   glass_session* session;
//   glass_session_new(model, &session);
//   glass_generate_params params = glass_generate_params_default();
//   params.temperature = 0;  // greedy
//   glass_generate(session, "Once upon a time", &params, on_piece, NULL, NULL);
//   glass_session_free(session);
//   glass_model_free(model);
//
// Errors: every function that can fail returns a glass_status; GLASS_OK is 0. The message of the
// calling thread's most recent failure (naming the function and what was wrong) is
// glass_last_error(): it is kept per thread, so threads never see each other's, and stays until
// that thread's next failing call. A NULL handle or output pointer is GLASS_ERR_INVALID_ARGUMENT.
//
// Threads: a glass_model is immutable and may be used from any number of threads at once. A
// glass_session is used by one thread at a time. glass_request_cancel may be called from any thread.
//
// Structs: initialise options and parameters with their _default() function, then set fields, so
// that fields added later keep their defaults.
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum glass_status {
  GLASS_OK = 0,
  GLASS_ERR_INVALID_FILE = 1,       // a model file or directory that is malformed
  GLASS_ERR_INVALID_ARGUMENT = 2,   // a bad argument, option or parameter (NULL included)
  GLASS_ERR_UNSUPPORTED = 3,        // an architecture, tensor type or backend glass does not have
  GLASS_ERR_CAPACITY_EXCEEDED = 4,  // the context or the KV cache is full
  GLASS_ERR_IO = 5,                 // a file that cannot be opened or read
  GLASS_ERR_CANCELLED = 6,
  GLASS_ERR_INTERNAL = 7,  // a bug or out of memory
  // A caller's buffer is too small; the function's size output says how large it must be.
  GLASS_ERR_BUFFER_TOO_SMALL = 8
} glass_status;

// "ok", "invalid_argument", ...; never NULL.
const char* glass_status_name(glass_status status);
// The calling thread's most recent error message; "" before its first failure. Valid until that
// thread's next failing call.
const char* glass_last_error(void);

typedef struct glass_model glass_model;
typedef struct glass_session glass_session;
typedef struct glass_request glass_request;

// ---- Model ----

typedef enum glass_cache_type {
  GLASS_CACHE_F32 = 0,  // exact
  GLASS_CACHE_F16 = 1   // half the memory (llama.cpp's default)
} glass_cache_type;

typedef struct glass_load_options {
  const char* backend;  // "cpu" (the default; NULL means it too) or "ref", the reference interpreter
  int64_t n_ctx;        // positions a session may reach; 0: the training context as memory holds it (llm.h)
  int32_t n_threads;    // compute threads; 0: one per hardware thread
  int64_t kv_size;      // KV cache rows of a session; 0: n_ctx
  glass_cache_type cache_type;
} glass_load_options;

glass_load_options glass_load_options_default(void);

// Loads a GGUF file (any shard of a split model), a folder holding one GGUF model, or a Hugging Face
// model directory. options may be NULL (the defaults). On failure *model is NULL and the message
// names the path.
glass_status glass_model_load(const char* path, const glass_load_options* options, glass_model** model);
// NULL is allowed. Sessions keep their model alive: it may be freed before them.
void glass_model_free(glass_model* model);

typedef struct glass_model_info {
  const char* architecture;  // "llama", ...; valid while the model lives
  const char* backend;       // what the backend chose: "cpu (avx512, 2 threads)"; as architecture
  int64_t vocab_size;
  int64_t n_ctx;  // positions a session may reach
  int64_t n_ctx_train;
  int64_t n_layers;
} glass_model_info;

glass_status glass_model_get_info(const glass_model* model, glass_model_info* info);

// Text (text_len bytes; need not be NUL-terminated) -> token ids, as the model's tokenizer says
// (add_special: BOS where the model asks for it; parse_special: special tokens written in the text
// become their ids). *n_tokens is always set to the count; when it exceeds capacity nothing is
// written and the result is GLASS_ERR_BUFFER_TOO_SMALL (tokens may then be NULL: a size query).
glass_status glass_tokenize(const glass_model* model, const char* text, size_t text_len, int add_special,
                            int parse_special, int32_t* tokens, size_t capacity, size_t* n_tokens);
// Token ids -> text, written with a terminating NUL. *text_len is always set to the text's length
// without the NUL; when text_len + 1 exceeds capacity nothing is written and the result is
// GLASS_ERR_BUFFER_TOO_SMALL. An id outside [0, vocab_size) is GLASS_ERR_INVALID_ARGUMENT.
glass_status glass_detokenize(const glass_model* model, const int32_t* tokens, size_t n_tokens, char* text,
                              size_t capacity, size_t* text_len);
// 1 when generation ends at this token (EOS, EOT, ...), else 0 (also for a NULL model).
int glass_token_is_end_of_generation(const glass_model* model, int32_t token);

// ---- Session: a KV cache and the tokens it holds ----

glass_status glass_session_new(const glass_model* model, glass_session** session);

// A session's own KV cache, as llama.cpp's context parameters: one loaded model serves sessions of
// any cache size. Zero fields (and cache_type GLASS_CACHE_DEFAULT) take the model's load options.
typedef struct glass_session_options {
  int64_t kv_size;        // KV cache rows
  int64_t kv_block_size;  // rows per block
  int64_t n_seq_max;      // sequences one step may hold
  int32_t cache_type;     // GLASS_CACHE_F32, GLASS_CACHE_F16, or GLASS_CACHE_DEFAULT (-1)
} glass_session_options;
#define GLASS_CACHE_DEFAULT (-1)

glass_session_options glass_session_options_default(void);
// As glass_session_new with those options (NULL: the defaults). A field out of range is
// GLASS_ERR_INVALID_ARGUMENT naming it.
glass_status glass_session_new_with(const glass_model* model, const glass_session_options* options,
                                    glass_session** session);
void glass_session_free(glass_session* session);  // NULL is allowed

// Evaluates tokens at the session's next positions (nothing already cached is evaluated again).
// Only the last token's logits are computed; glass_session_logits gives them.
glass_status glass_session_eval(glass_session* session, const int32_t* tokens, size_t n_tokens);
// As glass_session_eval, and every token's logits into `logits`, row-major [n_tokens, vocab_size];
// capacity (in floats) below n_tokens * vocab_size is GLASS_ERR_BUFFER_TOO_SMALL before anything
// is evaluated.
glass_status glass_session_eval_all(glass_session* session, const int32_t* tokens, size_t n_tokens,
                                    float* logits, size_t capacity);
// The vocab_size logits of the last token the session evaluated (by eval or generate). The pointer
// is the session's and stays valid until the session's next eval, generate, truncate, reset or free.
// None after a truncate or reset, or before the first eval: GLASS_ERR_INVALID_ARGUMENT.
glass_status glass_session_logits(const glass_session* session, const float** logits, size_t* n_logits);
// Tokens the session's cache holds (its next position); 0 for a NULL session.
int64_t glass_session_n_past(const glass_session* session);
// Keeps the first n cached tokens and forgets the rest (n <= glass_session_n_past).
glass_status glass_session_truncate(glass_session* session, int64_t n);
// Forgets everything: the next eval starts at position 0.
glass_status glass_session_reset(glass_session* session);

// ---- Generation ----

#define GLASS_SEED_RANDOM UINT64_MAX  // as glass_generate_params.seed: draw a random seed

typedef struct glass_generate_params {
  int32_t max_tokens;  // 128
  float temperature;   // 0.8; <= 0: greedy (argmax)
  int32_t top_k;       // 40; <= 0: off
  float top_p;         // 0.95; >= 1: off
  float min_p;         // 0.05; <= 0: off
  uint64_t seed;       // 0xC0FFEE; GLASS_SEED_RANDOM: a random one
  // n_stop NUL-terminated strings that end generation, matched across token boundaries; the text
  // stops before the match. The array is read during the call only. NULL when n_stop is 0.
  const char* const* stop;
  size_t n_stop;
} glass_generate_params;

glass_generate_params glass_generate_params_default(void);

// Called with each new piece of generated text (len bytes, not NUL-terminated) as soon as it is
// valid UTF-8 and cannot be part of a stop string, on the thread that called glass_generate. Return
// 0 to go on, nonzero to stop: generation ends with GLASS_FINISH_CANCELLED. Text held back when
// generation ends (a possible stop string's start, a character's first bytes) comes as one last
// piece, so the pieces always add up to the result's text.
typedef int (*glass_piece_fn)(const char* piece, size_t len, void* user);

typedef enum glass_finish_reason {
  GLASS_FINISH_STOP = 0,      // an end-of-generation token or a stop string
  GLASS_FINISH_LENGTH = 1,    // max_tokens, or the context or KV cache is full
  GLASS_FINISH_CANCELLED = 2  // glass_request_cancel, or the piece callback returned nonzero
} glass_finish_reason;

// A request: one generation's cancel flag and, once it returns, its result.
glass_status glass_request_new(glass_request** request);
void glass_request_free(glass_request* request);  // NULL is allowed
// From any thread, at any time (before the generation too): the generation given this request
// stops before its next token. The flag stays set: every later generation given this request stops
// at once, so take a new request for the next one.
void glass_request_cancel(glass_request* request);

// Continues the session with the prompt and generates. glass_generate tokenizes `prompt` (a
// NUL-terminated string), adding BOS as the model says when the session is empty;
// glass_generate_tokens takes ids (n_prompt may be 0 when the session holds tokens). params NULL:
// the defaults. on_piece and request may be NULL. The request, when given, then holds the result.
glass_status glass_generate(glass_session* session, const char* prompt, const glass_generate_params* params,
                            glass_piece_fn on_piece, void* user, glass_request* request);
glass_status glass_generate_tokens(glass_session* session, const int32_t* prompt, size_t n_prompt,
                                   const glass_generate_params* params, glass_piece_fn on_piece, void* user,
                                   glass_request* request);

// The last generation's result (pointers valid until the request is given to another generation or
// freed). The text is NUL-terminated and equals the pieces streamed, joined; tokens excludes a
// stopping token. Before a generation: "", no tokens, GLASS_FINISH_LENGTH.
const char* glass_request_text(const glass_request* request, size_t* len);  // len may be NULL
const int32_t* glass_request_tokens(const glass_request* request, size_t* n_tokens);
glass_finish_reason glass_request_finish_reason(const glass_request* request);

#ifdef __cplusplus
}  // extern "C"
#endif
