// musacoder port-suite --kernelbench-dir DIR --out DIR: the MUSA-ported KernelBench (every levelN task,
// same ids and file names) with out/manifest.json recording what changed per task. Exit 1 when a task
// keeps a CUDA name no rule maps.
#include <iostream>
#include <string>

#include "command.h"
#include "commands.h"
#include "musa/musa.h"

namespace musacoder::tool {
namespace {

struct PortSuiteFlags {
  std::string kernelbench_dir, out;
};

int run_port_suite(const PortSuiteFlags& f) {
  auto manifest = musa::port_kernelbench_suite(f.kernelbench_dir, f.out);
  if (!manifest.ok()) return fail("port-suite", manifest.status());
  int warned = 0;
  for (const auto& t : manifest->at("tasks")) {
    warned += !t.at("warnings").empty();
    for (const auto& u : t.at("unmapped"))
      std::cerr << t.at("file").get<std::string>() << ":" << u.at("line") << ": unmapped: "
                << u.at("symbol").get<std::string>() << "\n";
  }
  std::cerr << "musacoder port-suite: " << manifest->at("tasks").size() << " tasks ported to " << f.out << " ("
            << manifest->at("changed") << " changed, " << warned << " with warnings, " << manifest->at("unmapped")
            << " unmapped names); manifest.json lists the changes\n";
  return manifest->at("unmapped").get<int>() > 0 ? 1 : 0;
}

}  // namespace

Command add_port_suite_command(CLI::App& app) {
  auto flags = std::make_shared<PortSuiteFlags>();
  CLI::App* sub = app.add_subcommand("port-suite", "port a KernelBench checkout's tasks to MUSA (with a manifest)");
  sub->add_option("--kernelbench-dir", flags->kernelbench_dir, "KernelBench checkout (or its KernelBench/ folder)")
      ->required();
  sub->add_option("--out", flags->out, "output directory (levelN/ + manifest.json)")->required();
  return {sub, [flags] { return run_port_suite(*flags); }};
}

}  // namespace musacoder::tool
