#pragma once
// Running one validated completion or chat request on the engine and answering it: the prompt's
// tokens, the submit (busy → 429), then either the whole reply as JSON or a stream of server-sent
// events. A streamed request whose client goes away (a write to it fails, or the response is dropped
// before its end) is cancelled in the engine at once and gets no further bytes.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "glass/engine.h"
#include "server/http_message.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/reasoning.h"
#include "server/tool_calls.h"

namespace glass::server {

// The loaded model and the engine serving it.
struct Served {
  std::shared_ptr<const Model> model;
  std::unique_ptr<Engine> engine;
  std::string name;       // the alias, else the file name: what responses and /v1/models say
  std::string file_name;  // also accepted as "model"
  int64_t created = 0;    // when it was attached (unix seconds), /v1/models' "created"
  ModelLimits limits;
};

// Requests running now, so that stopping the server can cancel them (a stream would otherwise hold
// its connection, and with it the shutdown, until its last token).
class Inflight {
 public:
  // Registers `h` and returns its id for remove(); once stopping, cancels it instead (and returns 0).
  uint64_t add(const std::shared_ptr<RequestHandle>& h);
  void remove(uint64_t id);
  void cancel_all();  // and refuse (cancel) everything added from now on

 private:
  std::mutex mu_;
  bool stopping_ = false;
  uint64_t next_ = 1;
  std::unordered_map<uint64_t, std::weak_ptr<RequestHandle>> handles_;
};

struct GenerationContext {
  std::shared_ptr<Served> served;
  Metrics* metrics = nullptr;
  Inflight* inflight = nullptr;
};

// The prompt of a chat request: the conversation through the model's chat template (with the
// request's tools and chat_template_kwargs), with BOS once (from the template when it writes one,
// else from the tokenizer), as Session::chat does. `text`: the rendered prompt.
struct ChatPrompt {
  std::vector<int32_t> ids;
  std::string text;
};
std::optional<ApiError> chat_prompt(const Model& model, const ChatRequest& request, ChatPrompt& out);

// How a chat reply is read back: tool calls in the template's syntax (None: the request offered no
// tools), thoughts as the template and the prompt's end say (server/reasoning.h).
struct ReplyFormat {
  ToolFamily tools = ToolFamily::None;
  std::string tools_json;  // the request's tools (Qwen XML types parameter values by them)
  ReplyReading reading;
  // The text carries its control tokens (harmony's markers: read, or returned as written under
  // reasoning format "none").
  bool control_text = false;
};

// `prompt_param` names the request field the prompt came from ("prompt", "messages") for errors the
// engine finds in it (too long for the context or the KV pool). fields.n choices are submitted as
// as many engine requests. Completions ignore `format`: their text is returned as generated.
void respond_generation(const GenerationContext& ctx, Endpoint endpoint, std::vector<int32_t> prompt,
                        GenerationFields fields, const char* prompt_param, HttpResponse& res,
                        ReplyFormat format = {});

// Writes `e` as the response.
void respond_error(const ApiError& e, HttpResponse& res);

}  // namespace glass::server
