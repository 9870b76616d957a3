#include "sandbox/bwrap_args.h"

#include <set>

namespace musacoder::sandbox {

namespace fs = std::filesystem;

namespace {

bool is_within(const fs::path& p, const fs::path& dir) {
  auto [d, q] = std::mismatch(dir.begin(), dir.end(), p.begin(), p.end());
  return d == dir.end();
}

const char* flag_for(const Mount& m) {
  switch (m.kind) {
    case Mount::Kind::kReadOnly:
      return m.optional ? "--ro-bind-try" : "--ro-bind";
    case Mount::Kind::kReadWrite:
      return m.optional ? "--bind-try" : "--bind";
    case Mount::Kind::kDevice:
      return m.optional ? "--dev-bind-try" : "--dev-bind";
  }
  return "--ro-bind";
}

}  // namespace

std::vector<std::string> bwrap_argv(const std::string& bwrap, const BwrapPlan& plan) {
  std::vector<std::string> a = {bwrap};
  auto add = [&](std::initializer_list<std::string> items) { a.insert(a.end(), items); };
  // Namespaces: everything but the user namespace is always private; with a user
  // namespace, nested ones are disabled too (seccomp also denies unshare/clone flags).
  add({"--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"});
  if (plan.user_namespace) {
    add({"--unshare-user", "--uid", std::to_string(plan.uid), "--gid", std::to_string(plan.gid),
         "--disable-userns"});
  }
  add({"--hostname", "sandbox", "--die-with-parent", "--new-session"});
  // Capabilities: none. As root without a user namespace the command needs setuid/setgid
  // (and setpcap to empty the bounding set) only until setpriv has dropped to `uid`.
  add({"--cap-drop", "ALL"});
  if (!plan.user_namespace)
    add({"--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"});

  add({"--proc", "/proc", "--dev", "/dev"});
  add({"--perms", "1777", "--size", std::to_string(plan.tmp_bytes), "--tmpfs", "/tmp"});
  for (const auto& s : plan.symlinks) add({"--symlink", s.target, s.path.string()});
  if (plan.bind_sys) {
    add({"--ro-bind", "/sys", "/sys"});
  } else {
    add({"--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"});  // torch's cpuinfo
  }

  // Read-only binds seen at the same path make their subtrees visible; a bind inside one
  // of them is redundant unless it is writable or a device. Missing parents of a mount
  // point are created 0755 (bwrap's default, 0700, would hide them from `uid`).
  std::vector<fs::path> visible = {"/proc", "/dev"};
  if (plan.bind_sys) visible.push_back("/sys");
  std::set<fs::path> made = {"/", "/tmp", "/dev", "/proc", "/sys"};
  for (const auto& s : plan.symlinks) made.insert(s.path);
  auto covered = [&](const fs::path& p) {
    for (const auto& v : visible)
      if (is_within(p, v)) return true;
    return false;
  };
  for (const auto& m : plan.mounts) {
    const fs::path p = m.path.lexically_normal();
    if (m.kind == Mount::Kind::kReadOnly && covered(p)) continue;
    fs::path ancestor;
    for (auto it = p.begin(); it != p.end(); ++it) {
      ancestor /= *it;
      if (ancestor == p) break;
      if (made.count(ancestor) || covered(ancestor)) continue;
      add({"--perms", "0755", "--dir", ancestor.string()});
      made.insert(ancestor);
    }
    add({flag_for(m), p.string(), p.string()});
    made.insert(p);
    if (m.kind == Mount::Kind::kReadOnly) visible.push_back(p);
  }

  if (plan.seccomp_fd >= 0) add({"--seccomp", std::to_string(plan.seccomp_fd)});
  if (!plan.chdir.empty()) add({"--chdir", plan.chdir.string()});
  add({"--"});
  if (!plan.user_namespace) {
    const std::string id = std::to_string(plan.uid), gid = std::to_string(plan.gid);
    add({plan.setpriv, "--reuid", id, "--regid", gid, "--clear-groups", "--inh-caps=-all",
         "--bounding-set=-all", "--no-new-privs", "--"});
  }
  a.insert(a.end(), plan.command.begin(), plan.command.end());
  return a;
}

}  // namespace musacoder::sandbox
