// RetryBuffer checkpointing: save_state() / restore_state() as JSON. Kept apart from retry_buffer.cpp so the
// buffer's rules read without the (defensive) parsing code.
#include <nlohmann/json.hpp>

#include "rl/retry_buffer.h"

namespace musacoder::rl {
namespace {

constexpr const char* kFormat = "musacoder.rl.retry_buffer";
constexpr int kVersion = 1;

using nlohmann::json;

// Field readers: return false (and say why) instead of throwing on a missing or mistyped field.
class Reader {
 public:
  bool field(const json& object, const char* key, const json*& out) {
    if (!object.is_object()) return fail(std::string("expected an object around '") + key + "'");
    auto it = object.find(key);
    if (it == object.end()) return fail(std::string("missing field '") + key + "'");
    out = &*it;
    return true;
  }
  bool unsigned_field(const json& object, const char* key, std::uint64_t& out) {
    const json* value = nullptr;
    if (!field(object, key, value)) return false;
    if (!value->is_number_unsigned())
      return fail(std::string("field '") + key + "' is not an unsigned integer");
    out = value->get<std::uint64_t>();
    return true;
  }
  bool size_field(const json& object, const char* key, std::size_t& out) {
    std::uint64_t value = 0;
    if (!unsigned_field(object, key, value)) return false;
    out = static_cast<std::size_t>(value);
    return true;
  }
  bool string_field(const json& object, const char* key, std::string& out) {
    const json* value = nullptr;
    if (!field(object, key, value)) return false;
    if (!value->is_string()) return fail(std::string("field '") + key + "' is not a string");
    out = value->get<std::string>();
    return true;
  }
  bool number_field(const json& object, const char* key, double& out) {
    const json* value = nullptr;
    if (!field(object, key, value)) return false;
    if (!value->is_number()) return fail(std::string("field '") + key + "' is not a number");
    out = value->get<double>();
    return true;
  }
  bool array_field(const json& object, const char* key, const json*& out) {
    if (!field(object, key, out)) return false;
    if (!out->is_array()) return fail(std::string("field '") + key + "' is not an array");
    return true;
  }
  bool fail(std::string why) {
    error = std::move(why);
    return false;
  }

  std::string error;
};

json counters_to_json(const RetryBufferCounters& c) {
  return {{"entered", c.entered},
          {"refreshed", c.refreshed},
          {"retries", c.retries},
          {"recovered_groups", c.recovered_groups},
          {"solved_in_stream", c.solved_in_stream},
          {"evicted_stale", c.evicted_stale},
          {"evicted_capacity", c.evicted_capacity},
          {"update_groups", c.update_groups}};
}

bool counters_from_json(const json& j, Reader& r, RetryBufferCounters& c) {
  return r.size_field(j, "entered", c.entered) && r.size_field(j, "refreshed", c.refreshed) &&
         r.size_field(j, "retries", c.retries) && r.size_field(j, "recovered_groups", c.recovered_groups) &&
         r.size_field(j, "solved_in_stream", c.solved_in_stream) &&
         r.size_field(j, "evicted_stale", c.evicted_stale) &&
         r.size_field(j, "evicted_capacity", c.evicted_capacity) &&
         r.size_field(j, "update_groups", c.update_groups);
}

json entry_to_json(const BufferedPrompt& e) {
  json attempts = json::array();
  for (const Attempt& a : e.failed_attempts) {
    attempts.push_back({{"code", a.code}, {"verdict", a.verdict}, {"score", a.score}});
  }
  return {{"prompt_id", e.prompt_id},           {"entered_epoch", e.entered_epoch},
          {"entered_seq", e.entered_seq},       {"last_touched_seq", e.last_touched_seq},
          {"attempts_total", e.attempts_total}, {"retries", e.retries},
          {"failed_attempts", attempts}};
}

bool entry_from_json(const json& j, Reader& r, BufferedPrompt& e) {
  const json* attempts = nullptr;
  if (!(r.string_field(j, "prompt_id", e.prompt_id) && r.size_field(j, "entered_epoch", e.entered_epoch) &&
        r.unsigned_field(j, "entered_seq", e.entered_seq) &&
        r.unsigned_field(j, "last_touched_seq", e.last_touched_seq) &&
        r.size_field(j, "attempts_total", e.attempts_total) && r.size_field(j, "retries", e.retries) &&
        r.array_field(j, "failed_attempts", attempts))) {
    return false;
  }
  if (e.prompt_id.empty()) return r.fail("empty prompt_id");
  for (const json& aj : *attempts) {
    Attempt a;
    if (!(r.string_field(aj, "code", a.code) && r.string_field(aj, "verdict", a.verdict) &&
          r.number_field(aj, "score", a.score))) {
      return false;
    }
    e.failed_attempts.push_back(std::move(a));
  }
  return true;
}

}  // namespace

std::string RetryBuffer::save_state() const {
  json entries = json::array();
  for (const auto& [id, entry] : state_.entries) entries.push_back(entry_to_json(entry));
  json out_of_domain = json::array();
  for (const std::string& id : state_.out_of_domain) out_of_domain.push_back(id);
  const json state = {{"format", kFormat},
                      {"version", kVersion},
                      {"epoch", state_.epoch},
                      {"seq", state_.seq},
                      {"counters", counters_to_json(state_.counters)},
                      {"entries", entries},
                      {"out_of_domain", out_of_domain}};
  return state.dump();
}

Status RetryBuffer::restore_state(std::string_view text) {
  // parse() without exceptions yields a "discarded" value on bad input; get<>() is only called after a
  // type check, and the catch is the boundary for anything nlohmann throws regardless.
  try {
    const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return invalid_argument("RetryBuffer::restore_state: not valid JSON");
    Reader r;
    auto reject = [](const std::string& why) { return invalid_argument("RetryBuffer::restore_state: " + why); };
    auto fail = [&r, &reject]() { return reject(r.error); };
    std::string format;
    std::uint64_t version = 0;
    if (!r.string_field(j, "format", format) || !r.unsigned_field(j, "version", version)) return fail();
    if (format != kFormat || version != static_cast<std::uint64_t>(kVersion)) {
      return reject("unsupported snapshot '" + format + "' version " + std::to_string(version));
    }
    State next;
    const json* counters = nullptr;
    const json* entries = nullptr;
    const json* out_of_domain = nullptr;
    if (!(r.size_field(j, "epoch", next.epoch) && r.unsigned_field(j, "seq", next.seq) &&
          r.field(j, "counters", counters) && counters_from_json(*counters, r, next.counters) &&
          r.array_field(j, "entries", entries) && r.array_field(j, "out_of_domain", out_of_domain))) {
      return fail();
    }
    for (const json& id : *out_of_domain) {
      if (!id.is_string()) return reject("out_of_domain holds a non-string");
      next.out_of_domain.insert(id.get<std::string>());
    }
    for (const json& ej : *entries) {
      BufferedPrompt entry;
      if (!entry_from_json(ej, r, entry)) return fail();
      if (entry.entered_epoch > next.epoch) {
        return reject("prompt '" + entry.prompt_id + "' entered after the snapshot's epoch");
      }
      if (entry.entered_seq > next.seq || entry.last_touched_seq > next.seq) {
        return reject("prompt '" + entry.prompt_id + "' has a sequence number beyond seq");
      }
      if (next.out_of_domain.contains(entry.prompt_id)) {
        return reject("prompt '" + entry.prompt_id + "' is both buffered and out-of-domain");
      }
      if (entry.failed_attempts.size() > options_.max_attempts_kept) {
        entry.failed_attempts.resize(options_.max_attempts_kept);
      }
      const std::string id = entry.prompt_id;
      if (!next.entries.emplace(id, std::move(entry)).second) {
        return reject("duplicate prompt '" + id + "'");
      }
    }
    state_ = std::move(next);
    enforce_limits();
    return Status();
  } catch (const std::exception& e) {
    return invalid_argument(std::string("RetryBuffer::restore_state: ") + e.what());
  }
}

}  // namespace musacoder::rl
