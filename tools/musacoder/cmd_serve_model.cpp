// musacoder serve-model --model DIR --port P: the OpenAI-compatible server (/v1/completions,
// /v1/chat/completions, /v1/models, /healthz, /metrics) until SIGINT or SIGTERM.
#include <csignal>
#include <cstdio>
#include <memory>

#include "command.h"
#include "commands.h"
#include "engine_flags.h"

namespace musacoder::tool {
namespace {

struct ServeFlags {
  EngineFlags engine;
  engine::ServerOptions server;
};

int run_serve(ServeFlags& f) {
  // Block the stop signals before any thread starts, so only sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  auto e = load_engine(f.engine);
  if (!e.ok()) return fail("serve-model", e.status());
  engine::OpenAiServer server(**e, f.server);
  if (Status st = server.start(); !st.ok()) return fail("serve-model", st);
  std::printf("serve-model: listening on http://%s:%d (model '%s', context %ld)\n", f.server.host.c_str(),
              server.port(), f.server.model_name.c_str(), static_cast<long>((*e)->max_model_len()));
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::printf("serve-model: signal %d, stopping\n", sig);
  server.stop();
  return 0;
}

}  // namespace

Command add_serve_model_command(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* sub = app.add_subcommand("serve-model", "serve a model over an OpenAI-compatible HTTP API");
  add_engine_flags(sub, f->engine);
  sub->add_option("--host", f->server.host, "address to listen on")->capture_default_str();
  sub->add_option("--port", f->server.port, "port (0: any free port, printed)")->capture_default_str();
  sub->add_option("--served-model-name", f->server.model_name, "the model id clients name")->capture_default_str();
  sub->add_option("--max-n", f->server.max_n, "largest n per request")->capture_default_str();
  sub->add_option("--max-body-bytes", f->server.max_body_bytes, "largest request body")->capture_default_str();
  sub->add_option("--max-concurrent-requests", f->server.max_concurrent_requests,
                  "generation requests in flight before 429 (0: no limit)")
      ->capture_default_str();
  return {sub, [f] { return run_serve(*f); }};
}

}  // namespace musacoder::tool
