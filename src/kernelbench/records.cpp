#include "kernelbench/records.h"

#include <sstream>

#include "core/files.h"

namespace musacoder::kernelbench {
namespace fs = std::filesystem;
using nlohmann::json;

json to_json(const TurnRecord& r) {
  return {{"schema", kSampleSchema},     {"task", r.task_id},
          {"level", r.level},            {"sample", r.sample},
          {"turn", r.turn},              {"prompt_hash", r.prompt_hash},
          {"response", r.response},      {"finish_reason", r.finish_reason},
          {"code_found", r.code_found},  {"verdict", r.verdict},
          {"infra", r.infra},            {"generate_seconds", r.generate_seconds},
          {"verify_seconds", r.verify_seconds}, {"chain_done", r.chain_done}};
}

Result<TurnRecord> turn_record_from_json(const json& j) {
  if (!j.is_object() || j.value("schema", "") != kSampleSchema)
    return invalid_argument(std::string("not a ") + kSampleSchema + " record");
  try {
    TurnRecord r;
    r.task_id = j.at("task").get<std::string>();
    r.level = j.at("level").get<int>();
    r.sample = j.at("sample").get<int>();
    r.turn = j.at("turn").get<int>();
    r.prompt_hash = j.value("prompt_hash", "");
    r.response = j.value("response", "");
    r.finish_reason = j.value("finish_reason", "");
    r.code_found = j.value("code_found", false);
    r.verdict = j.value("verdict", json::object());
    r.infra = j.value("infra", "");
    r.generate_seconds = j.value("generate_seconds", 0.0);
    r.verify_seconds = j.value("verify_seconds", 0.0);
    r.chain_done = j.value("chain_done", false);
    if (r.sample < 0 || r.turn < 1) return invalid_argument("record with a negative sample or turn < 1");
    return r;
  } catch (const json::exception& e) {
    return invalid_argument(std::string("malformed record: ") + e.what());
  }
}

namespace {

void insert(Chains& chains, TurnRecord r) {
  auto& turns = chains[{r.task_id, r.sample}];
  const std::size_t at = static_cast<std::size_t>(r.turn - 1);
  if (turns.size() > at) turns.resize(at);  // a retried turn replaces it and whatever followed
  if (turns.size() == at) turns.push_back(std::move(r));
}

// Parses `text`; *good_bytes gets the length of the prefix made of whole, valid lines.
Result<Chains> parse_lines(const std::string& text, std::size_t* good_bytes) {
  Chains chains;
  std::size_t pos = 0;
  *good_bytes = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    const bool last = nl == std::string::npos || nl + 1 >= text.size();
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    json j = json::parse(line, nullptr, false);
    auto r = j.is_discarded() ? Result<TurnRecord>(invalid_argument("not JSON")) : turn_record_from_json(j);
    if (!r.ok() || nl == std::string::npos) {
      if (last) break;  // torn tail
      return invalid_argument("line at byte " + std::to_string(pos) + ": " + r.status().message());
    }
    insert(chains, std::move(*r));
    pos = nl + 1;
    *good_bytes = pos;
  }
  return chains;
}

}  // namespace

Result<Chains> read_chains(const fs::path& path) {
  auto text = read_file(path, std::size_t{4} << 30);
  if (!text.ok()) return text.status();
  std::size_t good = 0;
  return parse_lines(*text, &good);
}

Result<std::unique_ptr<SampleLog>> SampleLog::open(const fs::path& path) {
  auto log = std::make_unique<SampleLog>();
  log->path_ = path;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    auto text = read_file(path, std::size_t{4} << 30);
    if (!text.ok()) return text.status();
    std::size_t good = 0;
    auto chains = parse_lines(*text, &good);
    if (!chains.ok()) return invalid_argument(path.string() + ": " + chains.status().message());
    log->chains_ = std::move(*chains);
    for (const auto& [k, turns] : log->chains_) log->lines_read_ += turns.size();
    if (good < text->size()) fs::resize_file(path, good, ec);
    if (ec) return internal_error("cannot cut the torn line off " + path.string() + ": " + ec.message());
  }
  log->out_.open(path, std::ios::app | std::ios::binary);
  if (!log->out_) return internal_error("cannot open " + path.string() + " for appending");
  return log;
}

Status SampleLog::append(const TurnRecord& r) {
  const std::string line = to_json(r).dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  std::lock_guard lock(mu_);
  out_ << line << std::flush;
  if (!out_) return internal_error("write to " + path_.string() + " failed");
  return Status::ok_status();
}

}  // namespace musacoder::kernelbench
