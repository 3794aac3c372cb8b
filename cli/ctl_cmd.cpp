#include "cli/ctl_cmd.hpp"

#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace hpr::cli {
namespace {

constexpr const char* kCommands[][2] = {
    {"help", "this list"},
    {"status", "the run's counters so far (the summary's text and JSON)"},
    {"lanes", "each lane: packets, batches, busy share, state"},
    {"drops", "packets dropped so far, by reason"},
    {"scheduler", "the scheduler's state: policy, setup, what it measured and kept (as at the last status tick)"},
    {"flows", "flows top [N]: the N flows (1..1000, default 10) with the most bytes: packets, lane, idle time"},
    {"set", "set weight LANE W: a lane's share of new flows (static weights); set place SERVICE LANE|any: a "
            "service's flows on one lane (not while learning); set policy GOAL: the scheduler's goal"},
    {"reload", "reload routes|rules|keys [FILE]: the app's tables from FILE (default: the file the run uses), "
               "built beside the running ones and swapped in at a batch boundary; a bad file leaves them in place"},
    {"stop", "end the run as SIGTERM does: rx stops, everything in flight drains, the summary is printed"},
};

std::string g_path;
std::vector<std::string> g_words;
bool g_json = false;

}  // namespace

// reload routes|rules|keys [FILE] (pipeline/reload.hpp).
Result<nlohmann::json> ctl_reload(Reloader& reloader, const std::vector<std::string>& args) {
  if (args.empty() || args.size() > 2)
    return error(Code::kInvalidArgument, "reload: want routes|rules|keys [FILE] (this run reloads: {})",
                 fmt::join(reloader.kinds(), ", "));
  auto r = reloader.reload(args[0], args.size() > 1 ? args[1] : "");
  if (!r) return r.status();
  const Pipeline::Replaced& x = r->replaced;
  return nlohmann::json{{"text", r->text() + "\n"},
                        {"reload",
                         {{"what", r->what},
                          {"file", r->file},
                          {"generation", x.generation},
                          {"build_s", x.build_s},
                          {"upload_s", x.upload_s},
                          {"swap_s", x.swap_s},
                          {"total_s", r->total_s},
                          {"old_freed", x.old_freed},
                          {"rx_at_swap", x.rx_at_swap},
                          {"rss_before_kib", r->rss_before_kib},
                          {"rss_both_kib", x.rss_both_kib},
                          {"rss_after_kib", r->rss_after_kib}}}};
}

ControlServer::Handler control_handler(Pipeline& p, Reloader& reloader, std::function<std::string()> scheduler_text,
                                       SchedulerHooks sched) {
  return [&p, &reloader, scheduler_text, sched](const std::string& cmd,
                                                const std::vector<std::string>& args) -> Result<nlohmann::json> {
    if (cmd == "flows") return ctl_flows(p, args);
    if (cmd == "set") return ctl_set(p, sched, args);
    if (cmd == "reload") return ctl_reload(reloader, args);
    if (!args.empty()) return error(Code::kInvalidArgument, "{}: takes no arguments", cmd);
    if (cmd == "help") {
      nlohmann::json j;
      for (const auto& c : kCommands) j["commands"][c[0]] = c[1];
      return j;
    }
    if (cmd == "scheduler") {
      std::string t = scheduler_text();
      if (t.empty())  // no report yet: a scheduler's first comes with the first status line
        t = sched.weights_owner.empty() ? "static lane weights: no scheduler in this run (--static)\n"
                                        : fmt::format("the {} scheduler has not reported yet (it does at each status "
                                                      "line)\n", sched.weights_owner);
      return nlohmann::json{{"text", t}};
    }
    if (cmd == "stop") {
      p.request_stop();
      return nlohmann::json{{"stopping", true}};
    }
    if (cmd == "status" || cmd == "lanes" || cmd == "drops") {
      const Summary s = p.snapshot();
      nlohmann::json j = nlohmann::json::parse(s.to_json());
      if (cmd == "status")
        return nlohmann::json{
            {"text", "live counters of a running hpr: packets in flight are neither sent nor dropped yet, so the books "
                     "balance only at the end\n" + s.to_text()},
            {"summary", j}};
      return nlohmann::json{{cmd, j.value(cmd, nlohmann::json::object())}};
    }
    std::string known;
    for (const auto& c : kCommands) known += std::string(known.empty() ? "" : ", ") + c[0];
    return error(Code::kInvalidArgument, "unknown command '{}' (known: {})", cmd, known);
  };
}

CLI::App* add_ctl_command(CLI::App& app) {
  auto* c = app.add_subcommand(
      "ctl", "Ask a running `hpr run` through its control socket: help, status, lanes, drops, scheduler, "
             "flows top [N], set weight LANE W, set place SERVICE LANE|any, set policy GOAL, reload "
             "routes|rules|keys [FILE], stop");
  c->add_option("command", g_words, "The command and its arguments")->required();
  c->add_option("--ctl", g_path, "Control socket (default: " + default_control_path() + ")");
  c->add_flag("--json", g_json, "Print the daemon's JSON reply as it is");
  return c;
}

int run_ctl_command() {
  const std::string path = g_path.empty() ? default_control_path() : g_path;
  std::vector<std::string> args(g_words.begin() + 1, g_words.end());
  const bool reload = g_words[0] == "reload";
  if (reload && args.size() == 2) {  // the daemon's working directory is not this one's
    std::error_code ec;
    auto abs = std::filesystem::absolute(args[1], ec);
    if (!ec) args[1] = abs.string();
  }
  // A reload of a full BGP table or rule set takes seconds (and more on a busy machine).
  auto r = control_request(path, g_words[0], args, reload ? 300'000 : 5000);
  if (!r) {
    fmt::print(stderr, "hpr ctl: {}\n", r.status().message());
    return 3;
  }
  const nlohmann::json& j = *r;
  const bool ok = j.value("ok", false);
  if (g_json) {
    fmt::print("{}\n", j.dump(2));
  } else if (!ok) {
    fmt::print(stderr, "hpr ctl: {}\n", j.value("error", std::string("error")));
  } else if (j.contains("text")) {
    fmt::print("{}", j["text"].get<std::string>());
  } else if (j.contains("commands")) {
    for (const auto& [k, v] : j["commands"].items()) fmt::print("  {:<8} {}\n", k, v.get<std::string>());
  } else {
    nlohmann::json body = j;
    body.erase("ok");
    fmt::print("{}\n", body.dump(2));
  }
  return ok ? 0 : 1;
}

}  // namespace hpr::cli
