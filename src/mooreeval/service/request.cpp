#include "mooreeval/service/request.h"

#include <array>

#include "core/text.h"
#include "mooreeval/service/job.h"

namespace musacoder::service {

using nlohmann::json;

namespace {

// Deepest nesting of [ and { outside strings; stops counting past `limit`.
std::size_t json_depth(std::string_view s, std::size_t limit) {
  std::size_t depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : s) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
      if (max_depth > limit) return max_depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return max_depth;
}

std::string type_name(const json& j) {
  return j.type_name();
}

Parsed<JobRequest> bad(const std::string& where, const std::string& message) {
  return Parsed<JobRequest>::fail(400, "invalid_request", where + message);
}

bool only_keys(const json& j, std::initializer_list<const char*> allowed, std::string& unknown) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool found = false;
    for (const char* a : allowed) found |= it.key() == a;
    if (!found) {
      unknown = it.key();
      return false;
    }
  }
  return true;
}

}  // namespace

Parsed<json> parse_body(std::string_view body, const ServiceLimits& limits) {
  if (body.size() > limits.max_body_bytes)
    return Parsed<json>::fail(413, "too_large",
                              "request body of " + std::to_string(body.size()) +
                                  " bytes exceeds the limit of " + std::to_string(limits.max_body_bytes));
  if (body.empty())
    return Parsed<json>::fail(400, "invalid_json", "empty request body; expected a JSON object");
  if (json_depth(body, limits.max_json_depth) > limits.max_json_depth)
    return Parsed<json>::fail(400, "invalid_json",
                              "JSON nested deeper than " + std::to_string(limits.max_json_depth) + " levels");
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return Parsed<json>::fail(400, "invalid_json", "request body is not valid JSON (or not valid UTF-8)");
  if (!j.is_object())
    return Parsed<json>::fail(400, "invalid_request",
                              "request body must be a JSON object, got " + type_name(j));
  return {std::move(j), {}};
}

Parsed<JobRequest> parse_job(const json& j, const ServiceLimits& limits, const TaskLookup& known,
                             const std::string& where) {
  if (!j.is_object()) return bad(where, "a job must be a JSON object, got " + type_name(j));
  std::string unknown;
  if (!only_keys(j, {"task", "candidate", "candidate_b64", "label", "deadline_seconds", "cancel_on_deadline"},
                 unknown))
    return bad(where, "unknown field '" + sanitize_utf8(unknown.substr(0, 64)) + "'");
  auto task = j.find("task");
  if (task == j.end()) return bad(where, "missing field 'task'");
  if (!task->is_string()) return bad(where, "'task' must be a string, got " + type_name(*task));
  JobRequest r;
  r.task_id = task->get<std::string>();
  if (r.task_id.empty()) return bad(where, "'task' is empty");
  if (r.task_id.size() > limits.max_task_id_bytes)
    return Parsed<JobRequest>::fail(404, "unknown_task", where + "no such task (id longer than any task id)");
  if (!known(r.task_id))
    return Parsed<JobRequest>::fail(
        404, "unknown_task", where + "no task '" + r.task_id + "' in this service's suite (GET /v1/tasks)");

  auto text = j.find("candidate"), b64 = j.find("candidate_b64");
  if ((text == j.end()) == (b64 == j.end()))
    return bad(where, "exactly one of 'candidate' (text) or 'candidate_b64' (base64 bytes) is required");
  auto too_large = [&](std::size_t n) {
    return Parsed<JobRequest>::fail(413, "too_large",
                                    where + "candidate of " + std::to_string(n) +
                                        " bytes exceeds the limit of " +
                                        std::to_string(limits.max_candidate_bytes));
  };
  if (text != j.end()) {
    if (!text->is_string()) return bad(where, "'candidate' must be a string, got " + type_name(*text));
    r.candidate = text->get<std::string>();
  } else {
    if (!b64->is_string()) return bad(where, "'candidate_b64' must be a string, got " + type_name(*b64));
    const auto& s = b64->get_ref<const std::string&>();
    if (s.size() / 4 * 3 > limits.max_candidate_bytes + 2) return too_large(s.size() / 4 * 3);
    auto decoded = decode_base64(s);
    if (!decoded) return bad(where, "'candidate_b64' is not valid base64");
    r.candidate = std::move(*decoded);
  }
  if (r.candidate.size() > limits.max_candidate_bytes) return too_large(r.candidate.size());

  if (auto label = j.find("label"); label != j.end()) {
    if (!label->is_string()) return bad(where, "'label' must be a string, got " + type_name(*label));
    r.label = label->get<std::string>();
    if (r.label.size() > limits.max_label_bytes)
      return Parsed<JobRequest>::fail(
          413, "too_large", where + "label longer than " + std::to_string(limits.max_label_bytes) + " bytes");
  }
  return {std::move(r), {}};
}

Parsed<std::vector<JobRequest>> parse_batch(const json& j, const ServiceLimits& limits,
                                            const TaskLookup& known) {
  using P = Parsed<std::vector<JobRequest>>;
  std::string unknown;
  if (!only_keys(j, {"jobs"}, unknown))
    return P::fail(400, "invalid_request", "unknown field '" + sanitize_utf8(unknown.substr(0, 64)) + "'");
  auto jobs = j.find("jobs");
  if (jobs == j.end()) return P::fail(400, "invalid_request", "missing field 'jobs'");
  if (!jobs->is_array())
    return P::fail(400, "invalid_request", "'jobs' must be an array, got " + type_name(*jobs));
  if (jobs->empty()) return P::fail(400, "invalid_request", "'jobs' is empty");
  if (jobs->size() > limits.max_batch_jobs)
    return P::fail(413, "too_large",
                   "batch of " + std::to_string(jobs->size()) + " jobs exceeds the limit of " +
                       std::to_string(limits.max_batch_jobs));
  std::vector<JobRequest> out;
  out.reserve(jobs->size());
  for (std::size_t i = 0; i < jobs->size(); ++i) {
    auto one = parse_job((*jobs)[i], limits, known, "jobs[" + std::to_string(i) + "]: ");
    if (!one.ok()) return {std::nullopt, one.error};
    if ((*jobs)[i].contains("deadline_seconds") || (*jobs)[i].contains("cancel_on_deadline"))
      return P::fail(400, "invalid_request",
                     "jobs[" + std::to_string(i) + "]: deadlines apply to POST /v1/evaluate only");
    out.push_back(std::move(*one.value));
  }
  return {std::move(out), {}};
}

Parsed<EvaluateRequest> parse_evaluate(const json& j, const ServiceLimits& limits, const TaskLookup& known) {
  using P = Parsed<EvaluateRequest>;
  auto job = parse_job(j, limits, known);
  if (!job.ok()) return {std::nullopt, job.error};
  EvaluateRequest r;
  r.job = std::move(*job.value);
  r.deadline_seconds = limits.default_deadline_seconds;
  if (auto d = j.find("deadline_seconds"); d != j.end()) {
    if (!d->is_number()) return P::fail(400, "invalid_request", "'deadline_seconds' must be a number");
    r.deadline_seconds = d->get<double>();
    if (!(r.deadline_seconds > 0 && r.deadline_seconds <= limits.max_deadline_seconds))
      return P::fail(
          400, "invalid_request",
          "'deadline_seconds' must be in (0, " + std::to_string(limits.max_deadline_seconds) + "]");
  }
  if (auto c = j.find("cancel_on_deadline"); c != j.end()) {
    if (!c->is_boolean()) return P::fail(400, "invalid_request", "'cancel_on_deadline' must be a boolean");
    r.cancel_on_deadline = c->get<bool>();
  }
  return {std::move(r), {}};
}

Parsed<std::vector<std::string>> parse_lookup(const json& j, const ServiceLimits& limits) {
  using P = Parsed<std::vector<std::string>>;
  std::string unknown;
  if (!only_keys(j, {"job_ids"}, unknown))
    return P::fail(400, "invalid_request", "unknown field '" + sanitize_utf8(unknown.substr(0, 64)) + "'");
  auto ids = j.find("job_ids");
  if (ids == j.end() || !ids->is_array())
    return P::fail(400, "invalid_request", "'job_ids' must be an array");
  if (ids->empty()) return P::fail(400, "invalid_request", "'job_ids' is empty");
  if (ids->size() > limits.max_batch_jobs)
    return P::fail(413, "too_large", "more than " + std::to_string(limits.max_batch_jobs) + " job ids");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < ids->size(); ++i) {
    const auto& id = (*ids)[i];
    if (!id.is_string() || !is_job_id(id.get<std::string>()))
      return P::fail(400, "invalid_request",
                     "job_ids[" + std::to_string(i) + "] is not a job id (32 hex digits)");
    out.push_back(id.get<std::string>());
  }
  return {std::move(out), {}};
}

namespace {
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::optional<std::string> decode_base64(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::array<int, 256> value;
  value.fill(-1);
  for (int i = 0; i < 64; ++i) value[static_cast<unsigned char>(kAlphabet[i])] = i;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = text[i + static_cast<std::size_t>(k)];
      // '=' only in the last one or two positions of the last quantum.
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return std::nullopt;
      v[k] = value[static_cast<unsigned char>(c)];
      if (v[k] < 0) return std::nullopt;
    }
    const uint32_t triple = (static_cast<uint32_t>(v[0]) << 18) | (static_cast<uint32_t>(v[1]) << 12) |
                            (static_cast<uint32_t>(v[2]) << 6) | static_cast<uint32_t>(v[3]);
    out.push_back(static_cast<char>((triple >> 16) & 0xff));
    if (pad < 2) out.push_back(static_cast<char>((triple >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(triple & 0xff));
  }
  return out;
}

std::string encode_base64(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 2]));
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back(i + 2 < bytes.size() ? kAlphabet[n & 63] : '=');
  }
  return out;
}

}  // namespace musacoder::service
