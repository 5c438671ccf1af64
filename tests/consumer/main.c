// The same through the C API, from C.
#include <stdio.h>

#include "glass/glass.h"

int main(int argc, char** argv) {
  glass_model* model = NULL;
  glass_session* session = NULL;
  glass_request* request = NULL;
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
    return 2;
  }
  if (glass_model_load(argv[1], NULL, &model) != GLASS_OK || glass_session_new(model, &session) != GLASS_OK ||
      glass_request_new(&request) != GLASS_OK) {
    fprintf(stderr, "error: %s\n", glass_last_error());
    return 1;
  }
  glass_generate_params params = glass_generate_params_default();
  params.max_tokens = 8;
  params.temperature = 0;
  if (glass_generate(session, "Once upon a time", &params, NULL, NULL, request) != GLASS_OK) {
    fprintf(stderr, "error: %s\n", glass_last_error());
    return 1;
  }
  size_t len = 0;
  const char* text = glass_request_text(request, &len);
  if (len == 0) {
    fprintf(stderr, "error: generated no text\n");
    return 1;
  }
  printf("[c] %s\n", text);
  glass_request_free(request);
  glass_session_free(session);
  glass_model_free(model);
  return 0;
}
