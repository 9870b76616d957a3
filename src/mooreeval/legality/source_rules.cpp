// Static rules over the extension sources and build flags (legality.h).
#include <regex>
#include <string_view>

#include "mooreeval/legality/legality.h"

namespace musacoder::legality {

namespace {

// The text the preprocessor sees, roughly: line splices joined, comments removed (so a
// rule cannot be dodged with `#inc\<newline>lude` and a comment cannot trigger one).
std::string normalised(std::string_view src) {
  std::string joined;
  joined.reserve(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\\' && i + 1 < src.size() && src[i + 1] == '\n') {
      ++i;
      continue;
    }
    if (src[i] == '\\' && i + 2 < src.size() && src[i + 1] == '\r' && src[i + 2] == '\n') {
      i += 2;
      continue;
    }
    joined += src[i];
  }
  std::string out;
  out.reserve(joined.size());
  enum { kCode, kLine, kBlock, kString, kChar } state = kCode;
  for (std::size_t i = 0; i < joined.size(); ++i) {
    const char c = joined[i], next = i + 1 < joined.size() ? joined[i + 1] : '\0';
    switch (state) {
      case kCode:
        if (c == '/' && next == '/') {
          state = kLine;
          ++i;
        } else if (c == '/' && next == '*') {
          state = kBlock;
          ++i;
          out += ' ';
        } else {
          if (c == '"') state = kString;
          if (c == '\'') state = kChar;
          out += c;
        }
        break;
      case kLine:
        if (c == '\n') {
          state = kCode;
          out += c;
        }
        break;
      case kBlock:
        if (c == '*' && next == '/') {
          state = kCode;
          ++i;
        } else if (c == '\n') {
          out += c;
        }
        break;
      case kString:
      case kChar:
        out += c;
        if (c == '\\' && next != '\0') {
          out += next;
          ++i;
        } else if ((state == kString && c == '"') || (state == kChar && c == '\'') || c == '\n') {
          state = kCode;
        }
        break;
    }
  }
  return out;
}

int line_of(const std::string& text, std::size_t pos) {
  return 1 +
         static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
}

struct Rule {
  const char* rule;
  std::regex pattern;
  const char* why;
};

const std::vector<Rule>& source_rules() {
  static const std::vector<Rule> rules = [] {
    const auto icase = std::regex::ECMAScript | std::regex::icase;
    std::vector<Rule> r;
    // `#` or the digraph `%:`, then include with a quoted/angled path that is absolute,
    // climbs out with `..`, names the home directory, or is computed from a macro.
    r.push_back({"host_file_include",
                 std::regex(R"((#|%:)[ \t]*include(_next)?[ \t]*[<"][ \t]*(/|~|[^>"\n]*\.\.)[^>"\n]*[>"])"),
                 "includes a host file by absolute or parent path"});
    r.push_back({"host_file_include", std::regex(R"((#|%:)[ \t]*include(_next)?[ \t]+[A-Za-z_])"),
                 "computed #include (the path comes from a macro)"});
    r.push_back({"host_file_include", std::regex(R"(\.incbin\b)", icase), "embeds a file with .incbin"});
    r.push_back(
        {"host_file_include", std::regex(R"((#|%:)[ \t]*embed\b|__has_embed)"), "embeds a file with #embed"});
    r.push_back({"host_file_include", std::regex(R"(\bdependency\b[ \t]*[<"])"),
                 "#pragma GCC dependency reads a host file"});
    r.push_back(
        {"process_access",
         std::regex(R"(\b(fork|vfork|execv|execve|execvp|execvpe|execl|execlp|execle|fexecve|system|popen|)"
                    R"(posix_spawn|posix_spawnp|setsid|ptrace|prctl|kill|daemon)\s*\()"),
         "creates or controls processes"});
    r.push_back({"network_access",
                 std::regex(R"(\b(socket|socketpair|connect|gethostbyname|getaddrinfo|inet_pton|inet_addr|)"
                            R"(sendto|recvfrom)\s*\(|<sys/socket\.h>|<netinet/|<arpa/inet\.h>|<netdb\.h>)"),
                 "uses the network"});
    r.push_back(
        {"file_access",
         std::regex(R"(\b(fopen|fopen64|freopen|open|open64|openat|creat|unlink|unlinkat|rename|)"
                    R"(mkdir|rmdir|chmod|chown|symlink|truncate|opendir|readlink|chdir|chroot|mkfifo|)"
                    R"(mknod)\s*\(|\b(std::)?(i|o)?fstream\b|std::filesystem|<filesystem>|<fstream>|)"
                    R"(<fcntl\.h>|<dirent\.h>)"),
         "opens, creates or removes files"});
    r.push_back({"native_loading",
                 std::regex(R"(\b(dlopen|dlsym|dlmopen|syscall|mmap|mmap64|mprotect)\s*\(|<dlfcn\.h>)"),
                 "loads code or maps memory directly"});
    r.push_back(
        {"side_stream",
         std::regex(
             R"(\b(cudaStreamCreate\w*|cuStreamCreate\w*|getStreamFromPool|getStreamFromExternal|)"
             R"(setCurrentCUDAStream|cudaStreamBeginCapture\w*|cudaGraphLaunch|cudaGraphInstantiate\w*|)"
             R"(cudaStreamPerThread|cudaLaunchHostFunc|musaStreamCreate\w*)\b)"),
         "creates or captures work on streams other than the current one"});
    return r;
  }();
  return rules;
}

void scan(const std::string& spec_name, const std::string& file, const std::string& source,
          std::vector<Finding>& out) {
  const std::string text = normalised(source);
  for (const auto& rule : source_rules()) {
    std::smatch m;
    if (std::regex_search(text, m, rule.pattern)) {
      std::string snippet = m.str(0).substr(0, 60);
      out.push_back({rule.rule,
                     std::string(rule.why) + ": '" + snippet + "' in " + spec_name + " " + file + " line " +
                         std::to_string(line_of(text, static_cast<std::size_t>(m.position(0)))),
                     0});
    }
  }
}

// Flags that read, write or run files other than the extension's own. The value of a
// pass-through flag (-Xcompiler=a,b) is checked part by part.
bool dangerous_flag(const std::string& f) {
  for (const char* pass : {"-Xcompiler=", "--compiler-options=", "-Xptxas=", "--ptxas-options="}) {
    const std::string p = pass;
    if (f.rfind(p, 0) == 0) {
      std::string rest = f.substr(p.size());
      for (std::size_t start = 0; start <= rest.size();) {
        std::size_t comma = rest.find(',', start);
        if (comma == std::string::npos) comma = rest.size();
        if (dangerous_flag(rest.substr(start, comma - start))) return true;
        start = comma + 1;
      }
      return false;
    }
  }
  static const char* kPrefixes[] = {"-include",
                                    "-imacros",
                                    "-B",
                                    "-specs",
                                    "--specs",
                                    "-fplugin",
                                    "-wrapper",
                                    "-o",
                                    "-MF",
                                    "-MD",
                                    "-MMD",
                                    "-x",
                                    "-E",
                                    "-save-temps",
                                    "--save-temps",
                                    "-dump",
                                    "-aux-info",
                                    "--output",
                                    "-Xlinker",
                                    "-iprefix",
                                    "-iwithprefix",
                                    "-isysroot",
                                    "--sysroot",
                                    "-fprofile",
                                    "--include",
                                    "-ccbin",
                                    "--compiler-bindir",
                                    "--keep",
                                    "-keep",
                                    "--dryrun",
                                    "-odir",
                                    "--output-directory",
                                    "-T",
                                    "--linker-options"};
  for (const char* p : kPrefixes)
    if (f.rfind(p, 0) == 0) return true;
  return f.rfind("-Wl,", 0) == 0 &&
         (f.find('@') != std::string::npos || f.find("-T") != std::string::npos ||
          f.find("script") != std::string::npos || f.find("wrap") != std::string::npos);
}

}  // namespace

std::vector<Finding> check_source_text(const std::vector<build::ExtensionSpec>& specs) {
  std::vector<Finding> out;
  for (const auto& s : specs) {
    for (std::size_t i = 0; i < s.cpp_sources.size(); ++i)
      scan(s.name, "cpp_sources[" + std::to_string(i) + "]", s.cpp_sources[i], out);
    for (std::size_t i = 0; i < s.cuda_sources.size(); ++i)
      scan(s.name, "cuda_sources[" + std::to_string(i) + "]", s.cuda_sources[i], out);
  }
  return out;
}

std::vector<Finding> check_build_flags(const std::vector<build::ExtensionSpec>& specs) {
  std::vector<Finding> out;
  auto bad = [&](const std::string& spec, const char* field, const std::string& flag, const char* why) {
    out.push_back(
        {"build_flag", std::string(field) + " of " + spec + ": '" + flag.substr(0, 80) + "' " + why, 0});
  };
  for (const auto& s : specs) {
    for (const auto& p : s.extra_include_paths)
      bad(s.name, "extra_include_paths", p, "(no include paths allowed)");
    const std::pair<const char*, const std::vector<std::string>*> lists[] = {
        {"extra_cflags", &s.extra_cflags},
        {"extra_cuda_cflags", &s.extra_cuda_cflags},
        {"extra_ldflags", &s.extra_ldflags}};
    for (const auto& [field, flags] : lists) {
      for (const auto& f : *flags) {
        if (f.find('/') != std::string::npos || f.find("..") != std::string::npos ||
            f.find('~') != std::string::npos)
          bad(s.name, field, f, "names a path (host files)");
        else if (!f.empty() && f[0] == '@')
          bad(s.name, field, f, "is a response file (reads a host file)");
        else if (dangerous_flag(f))
          bad(s.name, field, f, "reads, writes or runs other files");
      }
    }
  }
  return out;
}

std::vector<std::string> kernel_names(const std::vector<build::ExtensionSpec>& specs) {
  // __global__ [template args, qualifiers, __launch_bounds__(...)] name(
  static const std::regex global_kernel(
      R"(__global__\s+(?:[\w\s:<>,*&]|__launch_bounds__\s*\([^)]*\))*?\b(?!__launch_bounds__)(\w+)\s*\()");
  std::vector<std::string> names;
  for (const auto& s : specs) {
    for (const auto& src : s.cuda_sources) {
      const std::string text = normalised(src);
      for (std::sregex_iterator it(text.begin(), text.end(), global_kernel), end; it != end; ++it) {
        std::string n = (*it)[1].str();
        if (n == "void") continue;
        if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
      }
    }
  }
  return names;
}

}  // namespace musacoder::legality
