#include "server/http_message.h"

#include <algorithm>
#include <utility>

namespace glass::server {
namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

template <class Headers>
const std::string* find_header(const Headers& headers, std::string_view name) {
  for (const auto& [k, v] : headers)
    if (same_header_name(k, name)) return &v;
  return nullptr;
}

}  // namespace

bool same_header_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

void ClientWatch::on_gone(std::function<void()> f) {
  std::unique_lock lk(mu_);
  if (gone_.load()) {
    lk.unlock();
    if (f) f();
    return;
  }
  callback_ = std::move(f);
}

void ClientWatch::clear() {
  std::lock_guard lk(mu_);
  callback_ = nullptr;
}

// The callback runs under the lock, so that clear() returns only once it is over (it may reach into
// the handler's frame).
void ClientWatch::mark_gone() {
  std::lock_guard lk(mu_);
  if (gone_.exchange(true)) return;
  if (callback_) std::exchange(callback_, nullptr)();
}

std::string HttpRequest::get_header_value(std::string_view name) const {
  const std::string* v = find_header(headers, name);
  return v ? *v : std::string();
}

bool HttpRequest::has_header(std::string_view name) const { return find_header(headers, name) != nullptr; }

void HttpResponse::set_header(std::string name, std::string value) {
  for (auto& [k, v] : headers)
    if (same_header_name(k, name)) {
      v = std::move(value);
      return;
    }
  headers.emplace_back(std::move(name), std::move(value));
}

std::string HttpResponse::get_header_value(std::string_view name) const {
  const std::string* v = find_header(headers, name);
  return v ? *v : std::string();
}

void HttpResponse::set_content(std::string content, std::string_view content_type) {
  body = std::move(content);
  set_header("Content-Type", std::string(content_type));
}

void HttpResponse::set_chunked_content_provider(std::string_view content_type, ContentProvider p,
                                                ContentReleaser r) {
  set_header("Content-Type", std::string(content_type));
  provider = std::move(p);
  releaser = std::move(r);
}

}  // namespace glass::server
