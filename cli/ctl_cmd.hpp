#pragma once
// The control socket's commands (pipeline/control_socket.hpp): what `hpr run` answers, and `hpr ctl`, which asks.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "pipeline/control_socket.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/reload.hpp"

namespace hpr::cli {

// The commands `hpr run` answers on its control socket, on `p` (which must outlive the server):
//   help | status | lanes | drops | scheduler | reload routes|rules|keys [FILE] | stop
// `scheduler` returns what `scheduler_text` gives: the run's copy of its scheduler's report, taken on the status
// thread (the scheduler is not thread safe; the socket's thread never touches it). `reload` goes to `reloader`
// (which must outlive the server too); it takes seconds, so the server runs it apart (kSlowCommands).
ControlServer::Handler control_handler(Pipeline& p, Reloader& reloader, std::function<std::string()> scheduler_text);
inline const std::vector<std::string> kSlowCommands{"reload"};

// Adds the `ctl` subcommand; returns it (main checks parsed() and calls run_ctl_command()).
CLI::App* add_ctl_command(CLI::App& app);
// Exit codes: 0 the daemon answered ok; 1 it answered with an error; 2 bad arguments; 3 nothing answers.
int run_ctl_command();

}  // namespace hpr::cli
