// The C API used from C (built as C99): load the bundled model, tokenize, eval, generate with a
// streaming callback, cancel, and the error paths. Usage: glass_capi_c_test MODEL.gguf
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glass/glass.h"

static int failures = 0;

#define CHECK(cond)                                                                            \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
              glass_last_error());                                                             \
      ++failures;                                                                              \
    }                                                                                          \
  } while (0)

// What a generation's callback saw.
typedef struct pieces {
  char text[8192];
  size_t len;
  int n_calls;
  int stop_after;         // return nonzero on this call (0: never)
  glass_request* cancel;  // cancel this request on the first call (NULL: never)
} pieces;

static int collect(const char* piece, size_t len, void* user) {
  pieces* p = (pieces*)user;
  if (p->len + len < sizeof p->text) {
    memcpy(p->text + p->len, piece, len);
    p->len += len;
    p->text[p->len] = '\0';
  }
  ++p->n_calls;
  if (p->cancel != NULL && p->n_calls == 1) glass_request_cancel(p->cancel);
  return p->stop_after > 0 && p->n_calls >= p->stop_after;
}

static int contains(const char* haystack, const char* needle) { return strstr(haystack, needle) != NULL; }

static void test_errors(const char* path) {
  glass_model* model = (glass_model*)&failures;  // overwritten with NULL on failure
  const char* missing = "/nonexistent/glass-capi-test.gguf";
  glass_status st = glass_model_load(missing, NULL, &model);
  CHECK(st != GLASS_OK);
  CHECK(model == NULL);
  CHECK(contains(glass_last_error(), missing));
  CHECK(contains(glass_last_error(), "glass_model_load"));

  CHECK(glass_model_load(NULL, NULL, &model) == GLASS_ERR_INVALID_ARGUMENT);
  CHECK(contains(glass_last_error(), "path is NULL"));
  CHECK(glass_model_load(path, NULL, NULL) == GLASS_ERR_INVALID_ARGUMENT);
  CHECK(contains(glass_last_error(), "model is NULL"));

  glass_load_options opt = glass_load_options_default();
  opt.backend = "no-such-backend";
  CHECK(glass_model_load(path, &opt, &model) != GLASS_OK);
  CHECK(contains(glass_last_error(), "no-such-backend"));
  CHECK(contains(glass_last_error(), path));
  opt = glass_load_options_default();
  opt.cache_type = (glass_cache_type)7;
  CHECK(glass_model_load(path, &opt, &model) == GLASS_ERR_INVALID_ARGUMENT);
  CHECK(contains(glass_last_error(), "cache_type"));

  size_t n = 99;
  int32_t ids[4];
  CHECK(glass_tokenize(NULL, "a", 1, 1, 1, ids, 4, &n) == GLASS_ERR_INVALID_ARGUMENT);
  CHECK(n == 0);
  glass_session* session = NULL;
  CHECK(glass_session_new(NULL, &session) == GLASS_ERR_INVALID_ARGUMENT);
  CHECK(glass_session_eval(NULL, ids, 1) == GLASS_ERR_INVALID_ARGUMENT);
  CHECK(glass_generate(NULL, "x", NULL, NULL, NULL, NULL) == GLASS_ERR_INVALID_ARGUMENT);
  CHECK(contains(glass_last_error(), "glass_generate: session is NULL"));
  CHECK(glass_model_get_info(NULL, NULL) == GLASS_ERR_INVALID_ARGUMENT);
  CHECK(glass_session_n_past(NULL) == 0);
  CHECK(glass_token_is_end_of_generation(NULL, 2) == 0);
  CHECK(glass_request_finish_reason(NULL) == GLASS_FINISH_LENGTH);
  CHECK(strcmp(glass_request_text(NULL, &n), "") == 0 && n == 0);
  glass_request_cancel(NULL);
  glass_request_free(NULL);
  glass_session_free(NULL);
  glass_model_free(NULL);
  CHECK(strcmp(glass_status_name(GLASS_ERR_BUFFER_TOO_SMALL), "buffer_too_small") == 0);
}

static void test_tokens_and_logits(glass_model* model) {
  glass_model_info info;
  CHECK(glass_model_get_info(model, &info) == GLASS_OK);
  CHECK(strcmp(info.architecture, "llama") == 0);
  CHECK(info.vocab_size == 512);
  CHECK(info.n_ctx == 256);
  CHECK(info.n_layers > 0);
  CHECK(strncmp(info.backend, "cpu", 3) == 0);
  CHECK(glass_token_is_end_of_generation(model, 2) == 1);  // stories260K's EOS
  CHECK(glass_token_is_end_of_generation(model, 403) == 0);
  CHECK(glass_token_is_end_of_generation(model, -5) == 0);

  const char* prompt = "Once upon a time";
  size_t n = 0;
  CHECK(glass_tokenize(model, prompt, strlen(prompt), 1, 1, NULL, 0, &n) == GLASS_ERR_BUFFER_TOO_SMALL);
  CHECK(n > 1 && n < 64);
  CHECK(contains(glass_last_error(), "buffer holds 0"));
  int32_t ids[64];
  size_t n_ids = 0;
  CHECK(glass_tokenize(model, prompt, strlen(prompt), 1, 1, ids, 64, &n_ids) == GLASS_OK);
  CHECK(n_ids == n);

  // Without the BOS the first token's leading space is stripped (llama.cpp's rule), so the text
  // reads back as it was.
  char text[256];
  size_t len = 0;
  CHECK(glass_detokenize(model, ids + 1, n_ids - 1, text, 4, &len) == GLASS_ERR_BUFFER_TOO_SMALL);
  CHECK(len == strlen(prompt));
  CHECK(glass_detokenize(model, ids + 1, n_ids - 1, text, sizeof text, &len) == GLASS_OK);
  CHECK(strcmp(text, prompt) == 0);
  const int32_t bad = 512;
  CHECK(glass_detokenize(model, &bad, 1, text, sizeof text, &len) == GLASS_ERR_INVALID_ARGUMENT);
  CHECK(contains(glass_last_error(), "tokens[0] = 512"));

  glass_session* session = NULL;
  CHECK(glass_session_new(model, &session) == GLASS_OK);
  const float* logits = NULL;
  size_t n_logits = 0;
  CHECK(glass_session_logits(session, &logits, &n_logits) == GLASS_ERR_INVALID_ARGUMENT);
  CHECK(glass_session_eval(session, ids, n_ids) == GLASS_OK);
  CHECK(glass_session_n_past(session) == (int64_t)n_ids);
  CHECK(glass_session_logits(session, &logits, &n_logits) == GLASS_OK);
  CHECK(n_logits == 512);
  int finite = 1;
  for (size_t i = 0; i < n_logits; ++i) finite = finite && isfinite(logits[i]);
  CHECK(finite);
  CHECK(glass_session_eval(session, &bad, 1) == GLASS_ERR_INVALID_ARGUMENT);
  CHECK(contains(glass_last_error(), "512"));

  // Every token's logits: the last row is the last token's.
  glass_session* scorer = NULL;
  CHECK(glass_session_new(model, &scorer) == GLASS_OK);
  float* all = (float*)malloc(n_ids * 512 * sizeof(float));
  CHECK(glass_session_eval_all(scorer, ids, n_ids, all, n_ids * 512 - 1) == GLASS_ERR_BUFFER_TOO_SMALL);
  CHECK(glass_session_n_past(scorer) == 0);
  CHECK(glass_session_eval_all(scorer, ids, n_ids, all, n_ids * 512) == GLASS_OK);
  float max_diff = 0;
  for (size_t i = 0; i < 512; ++i) {
    const float d = fabsf(all[(n_ids - 1) * 512 + i] - logits[i]);
    if (d > max_diff) max_diff = d;
  }
  CHECK(max_diff < 1e-3f);
  free(all);
  glass_session_free(scorer);

  // A session with its own cache (a small f16 pool in blocks of 4) over the same model: the same
  // prediction, within what the f16 cache changes.
  glass_session_options so = glass_session_options_default();
  so.kv_size = 64;
  so.kv_block_size = 4;
  so.cache_type = GLASS_CACHE_F16;
  glass_session* small = NULL;
  CHECK(glass_session_new_with(model, &so, &small) == GLASS_OK);
  CHECK(glass_session_eval(small, ids, n_ids) == GLASS_OK);
  const float* small_logits = NULL;
  size_t n_small = 0;
  CHECK(glass_session_logits(small, &small_logits, &n_small) == GLASS_OK);
  CHECK(n_small == 512);
  float small_diff = 0;
  for (size_t i = 0; i < 512; ++i) {
    const float d = fabsf(small_logits[i] - logits[i]);
    if (d > small_diff) small_diff = d;
  }
  CHECK(small_diff < 0.05f);
  glass_session_free(small);
  so.cache_type = 7;
  CHECK(glass_session_new_with(model, &so, &small) == GLASS_ERR_INVALID_ARGUMENT);
  CHECK(contains(glass_last_error(), "cache_type 7"));
  so = glass_session_options_default();
  so.kv_size = -1;
  CHECK(glass_session_new_with(model, &so, &small) == GLASS_ERR_INVALID_ARGUMENT);
  CHECK(contains(glass_last_error(), "kv_size"));
  CHECK(small == NULL);

  CHECK(glass_session_truncate(session, 2) == GLASS_OK);
  CHECK(glass_session_n_past(session) == 2);
  CHECK(glass_session_logits(session, &logits, &n_logits) == GLASS_ERR_INVALID_ARGUMENT);
  CHECK(glass_session_truncate(session, 5) == GLASS_ERR_INVALID_ARGUMENT);
  CHECK(glass_session_reset(session) == GLASS_OK);
  CHECK(glass_session_n_past(session) == 0);
  glass_session_free(session);
}

// Greedy generation; returns its text in `out`.
static void generate_greedy(glass_model* model, pieces* out) {
  glass_session* session = NULL;
  glass_request* request = NULL;
  CHECK(glass_session_new(model, &session) == GLASS_OK);
  CHECK(glass_request_new(&request) == GLASS_OK);
  glass_generate_params params = glass_generate_params_default();
  params.temperature = 0;
  params.max_tokens = 24;
  memset(out, 0, sizeof *out);
  CHECK(glass_generate(session, "Once upon a time", &params, collect, out, request) == GLASS_OK);
  size_t len = 0, n_tokens = 0;
  const char* text = glass_request_text(request, &len);
  CHECK(glass_request_tokens(request, &n_tokens) != NULL);
  CHECK(n_tokens > 0 && n_tokens <= 24);
  CHECK(len > 0 && len == out->len);
  CHECK(strcmp(text, out->text) == 0);
  CHECK(out->n_calls > 0);
  CHECK(glass_request_finish_reason(request) != GLASS_FINISH_CANCELLED);
  CHECK(glass_session_n_past(session) > 0);
  const float* logits = NULL;
  size_t n_logits = 0;
  CHECK(glass_session_logits(session, &logits, &n_logits) == GLASS_OK);
  glass_request_free(request);
  glass_session_free(session);
}

static void test_generate(glass_model* model) {
  pieces greedy, again;
  generate_greedy(model, &greedy);
  generate_greedy(model, &again);
  CHECK(strcmp(greedy.text, again.text) == 0);
  printf("greedy: %s\n", greedy.text);

  glass_session* session = NULL;
  glass_request* request = NULL;
  CHECK(glass_session_new(model, &session) == GLASS_OK);
  glass_generate_params params = glass_generate_params_default();
  params.temperature = 0;
  params.max_tokens = 24;

  // A stop string taken from the greedy text: generation ends before its first occurrence.
  const char* space = strchr(greedy.text + 1, ' ');
  CHECK(space != NULL && strlen(space) > 3);
  if (space != NULL && strlen(space) > 3) {
    char stop[4];
    memcpy(stop, space, 3);
    stop[3] = '\0';
    const char* stops[1];
    stops[0] = stop;
    params.stop = stops;
    params.n_stop = 1;
    pieces p;
    memset(&p, 0, sizeof p);
    CHECK(glass_request_new(&request) == GLASS_OK);
    CHECK(glass_generate(session, "Once upon a time", &params, collect, &p, request) == GLASS_OK);
    CHECK(glass_request_finish_reason(request) == GLASS_FINISH_STOP);
    const size_t want = (size_t)(strstr(greedy.text, stop) - greedy.text);
    CHECK(p.len == want && strncmp(p.text, greedy.text, want) == 0);
    CHECK(strcmp(glass_request_text(request, NULL), p.text) == 0);
    glass_request_free(request);
    params.stop = NULL;
    params.n_stop = 0;
  }
  const char* null_stop[1] = {NULL};
  params.stop = null_stop;
  params.n_stop = 1;
  CHECK(glass_generate(session, "x", &params, NULL, NULL, NULL) == GLASS_ERR_INVALID_ARGUMENT);
  CHECK(contains(glass_last_error(), "params->stop[0] is NULL"));
  params.stop = NULL;
  params.n_stop = 0;

  // Cancelled from the callback through the request: the token streamed is the last one.
  pieces p;
  memset(&p, 0, sizeof p);
  CHECK(glass_session_reset(session) == GLASS_OK);
  CHECK(glass_request_new(&request) == GLASS_OK);
  p.cancel = request;
  CHECK(glass_generate(session, "Once upon a time", &params, collect, &p, request) == GLASS_OK);
  CHECK(glass_request_finish_reason(request) == GLASS_FINISH_CANCELLED);
  size_t n_tokens = 0;
  glass_request_tokens(request, &n_tokens);
  CHECK(n_tokens == 1);
  CHECK(strcmp(glass_request_text(request, NULL), p.text) == 0);
  // The flag stays set: the request's next generation stops before its first token.
  CHECK(glass_generate(session, " and", &params, NULL, NULL, request) == GLASS_OK);
  CHECK(glass_request_finish_reason(request) == GLASS_FINISH_CANCELLED);
  glass_request_tokens(request, &n_tokens);
  CHECK(n_tokens == 0);
  glass_request_free(request);

  // The callback asks to stop after three pieces.
  memset(&p, 0, sizeof p);
  p.stop_after = 3;
  CHECK(glass_session_reset(session) == GLASS_OK);
  CHECK(glass_request_new(&request) == GLASS_OK);
  CHECK(glass_generate(session, "Once upon a time", &params, collect, &p, request) == GLASS_OK);
  CHECK(glass_request_finish_reason(request) == GLASS_FINISH_CANCELLED);
  CHECK(p.n_calls == 3);
  CHECK(strcmp(glass_request_text(request, NULL), p.text) == 0);
  CHECK(strncmp(p.text, greedy.text, p.len) == 0);
  glass_request_free(request);

  // Token ids in, continuing the session.
  const int32_t more[2] = {1, 403};
  CHECK(glass_session_reset(session) == GLASS_OK);
  CHECK(glass_generate_tokens(session, more, 2, &params, NULL, NULL, NULL) == GLASS_OK);
  CHECK(glass_generate_tokens(session, NULL, 0, &params, NULL, NULL, NULL) == GLASS_OK);
  CHECK(glass_generate_tokens(session, NULL, 1, &params, NULL, NULL, NULL) == GLASS_ERR_INVALID_ARGUMENT);
  glass_session_free(session);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
    return 2;
  }
  test_errors(argv[1]);

  glass_load_options opt = glass_load_options_default();
  opt.n_ctx = 256;
  opt.n_threads = 2;
  glass_model* model = NULL;
  if (glass_model_load(argv[1], &opt, &model) != GLASS_OK) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], glass_last_error());
    return 1;
  }
  test_tokens_and_logits(model);
  test_generate(model);
  glass_model_free(model);
  if (failures > 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
