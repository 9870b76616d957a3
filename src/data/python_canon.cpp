#include "data/python_canon.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace musacoder::data {
namespace {

struct Line {
  int indent = 0;
  std::vector<std::string> tokens;
};

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Skips a string literal starting at i (any prefix already consumed); returns the index after it.
std::size_t skip_string(std::string_view s, std::size_t i) {
  const char q = s[i];
  const bool triple = s.substr(i, 3) == std::string(3, q);
  std::size_t j = i + (triple ? 3 : 1);
  while (j < s.size()) {
    if (s[j] == '\\') {
      j += 2;
      continue;
    }
    if (triple ? s.substr(j, 3) == std::string(3, q) : s[j] == q) return j + (triple ? 3 : 1);
    if (!triple && s[j] == '\n') return j;
    ++j;
  }
  return j;
}

std::string number_token(std::string_view text) {
  std::string t(text);
  if (t.find_first_of(".eE") == std::string::npos) return t;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::strtod(t.c_str(), nullptr));
  return buf;
}

// Logical lines (brackets join physical lines), without comments; strings become "S".
std::vector<Line> logical_lines(std::string_view s) {
  std::vector<Line> lines;
  Line cur;
  int depth = 0;
  bool line_start = true;
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (line_start) {
      std::size_t j = i;
      while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
      cur.indent = static_cast<int>(j - i);
      i = j;
      line_start = false;
      continue;
    }
    if (c == '#') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '\n') {
      ++i;
      if (depth > 0) continue;
      if (!cur.tokens.empty()) lines.push_back(cur);
      cur = Line{};
      line_start = true;
    } else if (c == '"' || c == '\'') {
      i = skip_string(s, i);
      cur.tokens.emplace_back("S");
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t j = i;
      while (j < s.size() && (ident_char(s[j]) || s[j] == '.' || ((s[j] == '-' || s[j] == '+') && (s[j - 1] == 'e' || s[j - 1] == 'E')))) ++j;
      cur.tokens.push_back(number_token(s.substr(i, j - i)));
      i = j;
    } else if (ident_start(c)) {
      std::size_t j = i;
      while (j < s.size() && ident_char(s[j])) ++j;
      if (j < s.size() && (s[j] == '"' || s[j] == '\'') && j - i <= 2) {  // r"..." f'...'
        i = skip_string(s, j);
        cur.tokens.emplace_back("S");
        continue;
      }
      cur.tokens.emplace_back(s.substr(i, j - i));
      i = j;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\\') {
      ++i;
    } else {
      if (c == '(' || c == '[' || c == '{') ++depth;
      if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
      static const char* two[] = {"**", "//", "==", "!=", "<=", ">=", "->", "+=", "-=", "*=", "/="};
      std::string tok(1, c);
      for (const char* t : two)
        if (s.substr(i, 2) == t) tok = t;
      cur.tokens.push_back(tok);
      i += tok.size();
    }
  }
  if (!cur.tokens.empty()) lines.push_back(cur);
  return lines;
}

using Tokens = std::vector<std::string>;

bool has_top_level_operator(const Tokens& t) {
  int depth = 0;
  for (const std::string& s : t) {
    if (s == "(" || s == "[" || s == "{") ++depth;
    else if (s == ")" || s == "]" || s == "}") --depth;
    else if (depth == 0 && (s == "+" || s == "-" || s == "*" || s == "/" || s == "@" || s == "**" || s == "//"))
      return true;
  }
  return false;
}

class Canonicalizer {
 public:
  explicit Canonicalizer(std::vector<Line> lines) : lines_(std::move(lines)) {}

  PythonCanon run() {
    for (const Line& l : lines_)  // module constants: NAME = number
      if (l.indent == 0 && l.tokens.size() >= 3 && l.tokens[1] == "=" && ident_start(l.tokens[0][0])) {
        Tokens rhs(l.tokens.begin() + 2, l.tokens.end());
        if (rhs.size() == 1 && std::isdigit(static_cast<unsigned char>(rhs[0][0]))) consts_[l.tokens[0]] = rhs[0];
        if (rhs.size() == 2 && rhs[0] == "-" && std::isdigit(static_cast<unsigned char>(rhs[1][0]))) consts_[l.tokens[0]] = "-" + rhs[1];
      }
    Tokens init = function("__init__", true), forward = function("forward", true);
    Tokens inputs = function("get_inputs", false), init_inputs = function("get_init_inputs", false);
    PythonCanon out;
    auto add = [&out](const char* label, const Tokens& t) {
      out.tokens.emplace_back(label);
      out.tokens.insert(out.tokens.end(), t.begin(), t.end());
    };
    add("forward:", forward);
    add("|init:", init);
    add("|inputs:", inputs);
    add("|init_inputs:", init_inputs);
    for (const std::string& t : out.tokens) out.canonical += (out.canonical.empty() ? "" : " ") + t;
    return out;
  }

 private:
  // The body of `def name` (a method of class Model when `method`), canonicalised: the
  // return expression with assignments inlined; in __init__, the self.<attr> assignments
  // (remembered for forward) and other statements.
  Tokens function(const std::string& name, bool method) {
    std::size_t i = 0;
    int def_indent = -1;
    for (; i < lines_.size(); ++i) {
      const Tokens& t = lines_[i].tokens;
      if (t.size() >= 2 && t[0] == "def" && t[1] == name && (method ? lines_[i].indent > 0 : lines_[i].indent == 0)) {
        def_indent = lines_[i].indent;
        break;
      }
    }
    if (def_indent < 0) return {"<none>"};
    env_.clear();
    bind_params(lines_[i].tokens);
    Tokens out;
    for (++i; i < lines_.size() && lines_[i].indent > def_indent; ++i) statement(lines_[i].tokens, name == "__init__", out);
    return out;
  }

  void bind_params(const Tokens& def) {
    int index = 0, depth = 0;
    bool annotation = false;
    for (std::size_t k = 2; k < def.size(); ++k) {
      const std::string& t = def[k];
      if (t == "(" || t == "[") ++depth;
      if (t == ")" || t == "]") --depth;
      if (depth == 1 && t == ",") annotation = false;
      if (depth == 1 && t == ":") annotation = true;
      if (depth == 1 && !annotation && ident_start(t[0]) && t != "self" && (def[k - 1] == "(" || def[k - 1] == ","))
        env_[t] = {"in" + std::to_string(index++)};
    }
  }

  void statement(const Tokens& t, bool init, Tokens& out) {
    if (t.size() == 1 && t[0] == "S") return;  // docstring
    if (t[0] == "super" || t[0] == "pass") return;
    if (t[0] == "return") {
      Tokens e = subst(Tokens(t.begin() + 1, t.end()));
      out.insert(out.end(), e.begin(), e.end());
      return;
    }
    const bool self_attr = t.size() > 4 && t[0] == "self" && t[1] == "." && t[3] == "=";
    if (init && self_attr) {
      modules_[t[2]] = subst(Tokens(t.begin() + 4, t.end()));
      return;
    }
    if (t.size() > 2 && t[1] == "=" && ident_start(t[0][0])) {
      env_[t[0]] = subst(Tokens(t.begin() + 2, t.end()));
      return;
    }
    Tokens e = subst(t);
    out.insert(out.end(), e.begin(), e.end());
    out.emplace_back(";");
  }

  Tokens subst(const Tokens& in) const {
    Tokens out;
    for (std::size_t k = 0; k < in.size(); ++k) {
      const std::string& t = in[k];
      const bool attr = k > 0 && in[k - 1] == ".";
      if (!attr && t == "self" && k + 2 < in.size() && in[k + 1] == ".") {
        auto m = modules_.find(in[k + 2]);
        if (m != modules_.end()) {
          append_wrapped(out, m->second);
          k += 2;
          continue;
        }
      }
      if (!attr && !(k + 1 < in.size() && in[k + 1] == "=")) {  // not a keyword argument's name
        if (auto e = env_.find(t); e != env_.end()) {
          append_wrapped(out, e->second);
          continue;
        }
        if (auto c = consts_.find(t); c != consts_.end()) {
          out.push_back(c->second);
          continue;
        }
      }
      out.push_back(t);
    }
    return aliases(out);
  }

  static void append_wrapped(Tokens& out, const Tokens& e) {
    const bool wrap = has_top_level_operator(e);
    if (wrap) out.emplace_back("(");
    out.insert(out.end(), e.begin(), e.end());
    if (wrap) out.emplace_back(")");
  }

  // torch.nn.functional.X / nn.functional.X -> F.X; torch.nn.X -> nn.X.
  static Tokens aliases(const Tokens& in) {
    Tokens out;
    for (std::size_t k = 0; k < in.size(); ++k) {
      auto at = [&](std::size_t j, const char* s) { return k + j < in.size() && in[k + j] == s; };
      const bool attr = k > 0 && in[k - 1] == ".";
      if (!attr && at(0, "torch") && at(1, ".") && at(2, "nn") && at(3, ".") && at(4, "functional")) {
        out.emplace_back("F");
        k += 4;
      } else if (!attr && at(0, "nn") && at(1, ".") && at(2, "functional")) {
        out.emplace_back("F");
        k += 2;
      } else if (!attr && at(0, "torch") && at(1, ".") && at(2, "nn") && at(3, ".")) {
        out.emplace_back("nn");
        k += 2;
      } else {
        out.push_back(in[k]);
      }
    }
    return out;
  }

  std::vector<Line> lines_;
  std::map<std::string, std::string> consts_;
  std::map<std::string, Tokens> env_, modules_;
};

}  // namespace

PythonCanon canonicalize_task(std::string_view source) {
  return Canonicalizer(logical_lines(source)).run();
}

std::vector<std::string> shingles(const std::vector<std::string>& tokens, std::size_t n) {
  std::vector<std::string> out;
  if (tokens.empty()) return out;
  const std::size_t count = tokens.size() < n ? 1 : tokens.size() - n + 1;
  for (std::size_t i = 0; i < count; ++i) {
    std::string s;
    for (std::size_t j = i; j < std::min(tokens.size(), i + n); ++j) s += tokens[j] + "\x1f";
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace musacoder::data
