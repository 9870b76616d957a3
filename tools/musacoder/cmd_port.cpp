// musacoder port FILE|DIR [--to musa|cuda] [--out PATH] [--shim] [--shim-header FILE]: ports CUDA sources
// and KernelBench submissions to MUSA (torchada's rules + MusaCoder's additions, src/musa) or back.
// A file without --out goes to stdout; findings go to stderr. Exit 1 when a name of the source platform
// is left unmapped, 0 otherwise.
#include <cstdio>
#include <iostream>
#include <string>

#include "command.h"
#include "commands.h"
#include "core/files.h"
#include "musa/musa.h"

namespace musacoder::tool {
namespace {

struct PortFlags {
  std::string input, to = "musa", out, shim_header;
  bool shim = false;
};

void print_findings(const nlohmann::json& manifest) {
  for (const auto& f : manifest.at("files")) {
    for (const auto& w : f.at("warnings"))
      std::cerr << f.at("file").get<std::string>() << ":" << w.at("line") << ": warning: " << w.at("message").get<std::string>()
                << "\n";
    for (const auto& u : f.at("unmapped"))
      std::cerr << f.at("file").get<std::string>() << ":" << u.at("line") << ": unmapped: " << u.at("symbol").get<std::string>()
                << " (" << u.at("message").get<std::string>() << ")\n";
  }
}

int run_port(const PortFlags& f) {
  if (!f.shim_header.empty()) {
    if (auto s = write_file_atomic(f.shim_header, musa::shim_header()); !s.ok()) return fail("port", s);
    if (f.input.empty()) return 0;
  }
  if (f.input.empty()) return fail("port", invalid_argument("give a FILE or DIR to port"));
  auto direction = musa::parse_direction(f.to);
  if (!direction.ok()) return fail("port", direction.status());
  if (f.shim && *direction != musa::Direction::kToCuda)
    return fail("port", invalid_argument("--shim applies to --to cuda only"));
  std::error_code ec;
  const bool dir = std::filesystem::is_directory(f.input, ec);
  if (dir && f.out.empty()) return fail("port", invalid_argument("porting a directory needs --out DIR"));
  auto tmp = TempDir::create("musacoder-port");  // a file without --out is ported here and printed
  if (!tmp.ok()) return fail("port", tmp.status());
  const std::filesystem::path out = f.out.empty() ? tmp->path() / "ported" : std::filesystem::path(f.out);
  auto manifest = musa::port_tree(f.input, out, {*direction, f.shim});
  if (!manifest.ok()) return fail("port", manifest.status());
  print_findings(*manifest);
  if (f.out.empty()) {
    auto text = read_file(out);
    if (!text.ok()) return fail("port", text.status());
    std::fwrite(text->data(), 1, text->size(), stdout);
  } else {
    std::cerr << "musacoder port: " << manifest->at("files").size() << " file(s) ported to " << out.string()
              << (dir ? " (manifest: port_manifest.json)" : "") << "\n";
  }
  return manifest->at("unmapped").get<int>() > 0 ? 1 : 0;
}

}  // namespace

Command add_port_command(CLI::App& app) {
  auto flags = std::make_shared<PortFlags>();
  CLI::App* sub = app.add_subcommand("port", "port CUDA sources / KernelBench submissions to MUSA, or back");
  sub->add_option("input", flags->input, "a .py / .cu / C++ file, or a directory of them");
  sub->add_option("--to", flags->to, "musa | cuda")->capture_default_str();
  sub->add_option("--out", flags->out, "output file or directory (a file defaults to stdout)");
  sub->add_flag("--shim", flags->shim,
                "with --to cuda: make .py submissions run on CUDA through the reverse shim (MUSA names kept, "
                "compiled by nvcc) instead of mapping the text back");
  sub->add_option("--shim-header", flags->shim_header, "write the MUSA->CUDA shim header to this file");
  return {sub, [flags] { return run_port(*flags); }};
}

}  // namespace musacoder::tool
