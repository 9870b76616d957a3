// musacoder compare RUN_A RUN_B: two eval-model runs side by side (their summary.json), as Markdown.
#include <cstdio>
#include <memory>

#include "command.h"
#include "commands.h"
#include "core/files.h"
#include "kernelbench/report.h"

namespace musacoder::tool {
namespace {

struct CompareFlags {
  std::string a, b;
};

Result<nlohmann::json> read_summary(const std::string& dir) {
  auto text = read_file(std::filesystem::path(dir) / "summary.json");
  if (!text.ok()) return text.status();
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.contains("views")) return invalid_argument(dir + "/summary.json is not an eval-model summary");
  return j;
}

int run_compare(const CompareFlags& f) {
  auto a = read_summary(f.a);
  if (!a.ok()) return fail("compare", a.status());
  auto b = read_summary(f.b);
  if (!b.ok()) return fail("compare", b.status());
  std::printf("%s", kernelbench::compare_markdown(*a, *b, f.a, f.b).c_str());
  return 0;
}

}  // namespace

Command add_compare_command(CLI::App& app) {
  auto f = std::make_shared<CompareFlags>();
  CLI::App* sub = app.add_subcommand("compare", "two eval-model runs side by side");
  sub->add_option("RUN_A", f->a, "an eval-model --out dir")->required();
  sub->add_option("RUN_B", f->b, "another")->required();
  return {sub, [f] { return run_compare(*f); }};
}

}  // namespace musacoder::tool
