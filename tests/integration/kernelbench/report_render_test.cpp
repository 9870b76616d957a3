// eval-model's report.html as a browser shows it (issue #23): samples.jsonl written with hand-made records
// of a known outcome, write_reports() (the same call run_eval ends with) renders summary.json and
// report.html, and headless Chromium opens the page twice: --dump-dom (the DOM after parsing and any script)
// must hold the hand-computed metrics, the task names, the three inline SVG charts and the task grid;
// --screenshot must be a PNG of the requested size that is not one flat colour. Skips (with a message)
// where no chromium binary is on PATH; each Chromium run is killed after 120 s.
//
// The records (k = 2 samples, 2 turns), and the best-of-turns outcome per task:
//   level1/19_ReLU      s0: t1 ok 1.5x; s1: t1 wrong_answer, t2 ok 0.8x           c=2 of n=2
//   level1/23_Softmax   s0: t1 ok 3.0x; s1: t1 compile_error, t2 runtime_error     c=1 of n=2
//   level2/7_Conv_GELU  s0: t1 timeout, t2 wrong_answer; s1: t1 infra (HTTP 500)   c=0 of n=1 (infra: not n)
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <sstream>

#include "core/files.h"
#include "kernelbench/eval_run.h"
#include "kernelbench/records.h"
#include "kernelbench/scorer.h"
#include "process/subprocess.h"
#include "support/kernelbench_records.h"

namespace musacoder::kernelbench {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kWidth = 1280, kHeight = 2000;

TurnRecord rec(const std::string& task, int level, int sample, int turn, const std::string& cls,
               std::optional<double> speedup, bool done, const std::string& infra = "") {
  TurnRecord r = scripted_turn(task, level, sample, turn, cls, speedup, done, infra, cls + " (scripted)");
  r.code_found = true;
  r.response = "```python\n# <script>alert(1)</script>\nclass ModelNew: pass\n```";
  return r;
}

Suite two_level_suite() {
  Suite s;
  s.id = "render-test:L1,2";
  s.content_hash = "0123456789abcdef0123456789abcdef";
  s.tasks = {{"level1/19_ReLU", 1, 19, "19_ReLU.py", "src", "", ""},
             {"level1/23_Softmax", 1, 23, "23_Softmax.py", "src", "", ""},
             {"level2/7_Conv_GELU", 2, 7, "7_Conv_GELU.py", "src", "", ""}};
  return s;
}

std::vector<TurnRecord> records() {
  return {rec("level1/19_ReLU", 1, 0, 1, "ok", 1.5, true),
          rec("level1/19_ReLU", 1, 1, 1, "wrong_answer", {}, false),
          rec("level1/19_ReLU", 1, 1, 2, "ok", 0.8, true),
          rec("level1/23_Softmax", 1, 0, 1, "ok", 3.0, true),
          rec("level1/23_Softmax", 1, 1, 1, "compile_error", {}, false),
          rec("level1/23_Softmax", 1, 1, 2, "runtime_error", {}, true),
          rec("level2/7_Conv_GELU", 2, 0, 1, "timeout", {}, false),
          rec("level2/7_Conv_GELU", 2, 0, 2, "wrong_answer", {}, true),
          rec("level2/7_Conv_GELU", 2, 1, 1, "infra_error", {}, true, "generation: HTTP 500")};
}

// The first of the usual Chromium names on PATH; nullopt when none is there.
std::optional<fs::path> find_chromium() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::vector<fs::path> on_path;
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty()) on_path.emplace_back(d);
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"})
    for (const auto& d : on_path)
      if (::access((d / name).c_str(), X_OK) == 0) return d / name;
  return std::nullopt;
}

// One headless Chromium run on `page` with `mode` (--dump-dom or --screenshot=FILE); its own profile dir.
ProcessResult chromium(const fs::path& binary, const fs::path& work, const std::string& mode,
                       const fs::path& page) {
  ProcessOptions o;
  o.argv = {binary.string(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"};
  o.argv.push_back("--user-data-dir=" + (work / "profile").string());
  o.argv.push_back("--window-size=" + std::to_string(kWidth) + "," + std::to_string(kHeight));
  o.argv.push_back(mode);
  o.argv.push_back("file://" + page.string());
  o.deadline = std::chrono::seconds(120);
  o.max_output_bytes = 16 << 20;
  auto r = run_process(o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : ProcessResult{};
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Width and height from the PNG signature + IHDR chunk (bytes 16..23, big-endian); {0, 0} if not a PNG.
std::pair<uint32_t, uint32_t> png_size(const std::string& png) {
  if (png.size() < 24 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0 || png.compare(12, 4, "IHDR") != 0)
    return {0, 0};
  auto be32 = [&](std::size_t at) {
    uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(png[at + i]);
    return v;
  };
  return {be32(16), be32(20)};
}

// The number of distinct scanlines of an 8-bit RGB/RGBA PNG, decoded (IDAT inflated, each row unfiltered)
// with python3's standard library. A flat single-colour image has 1; a rendered page has hundreds.
constexpr const char* kDistinctRows = R"PY(
import struct, sys, zlib
d = open(sys.argv[1], 'rb').read()
pos, idat, ihdr = 8, b'', None
while pos < len(d):
    n, kind = struct.unpack('>I4s', d[pos:pos + 8])
    if kind == b'IHDR': ihdr = struct.unpack('>IIBB', d[pos + 8:pos + 18])
    if kind == b'IDAT': idat += d[pos + 8:pos + 8 + n]
    pos += 12 + n
w, h, depth, ctype = ihdr
assert depth == 8 and ctype in (2, 6), ihdr
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
assert len(raw) == h * (stride + 1), (len(raw), h, stride)
prev, rows = bytearray(stride), set()
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride if f else 0):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.add(bytes(line))
    prev = line
print(len(rows))
)PY";

TEST(ReportRender, EvalModelReportRendersInHeadlessChromium) {
  const auto binary = find_chromium();
  if (!binary)
    GTEST_SKIP() << "skipped: no chromium on PATH (apt-get install chromium; scripts/setup.sh installs it)";

  const fs::path work = fs::temp_directory_path() / ("kb_report_render_" + std::to_string(::getpid()));
  fs::remove_all(work);
  fs::create_directories(work / "out");
  {
    auto log = SampleLog::open(work / "out/samples.jsonl");
    ASSERT_TRUE(log.ok()) << log.status().message();
    for (const auto& r : records()) ASSERT_TRUE((*log)->append(r).ok());
  }
  const Suite suite = two_level_suite();
  EvalOptions protocol;
  protocol.samples = 2;
  protocol.turns = 2;
  const json run = {{"schema", "musacoder.eval-run/1"},
                    {"protocol", protocol_json(suite, protocol)},
                    {"model", "scripted-model"},
                    {"scorer", "records written by the test"}};
  auto summary = write_reports(suite, work / "out", run);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  const fs::path page = work / "out/report.html";

  // The DOM after Chromium parsed the page (attributes come back double-quoted).
  const ProcessResult dom = chromium(*binary, work, "--dump-dom", page);
  ASSERT_TRUE(dom.succeeded()) << dom.describe() << "\n" << dom.stderr_text;
  const std::string& d = dom.stdout_text;
  EXPECT_NE(d.find("<h1>eval-model: render-test:L1,2</h1>"), std::string::npos) << d;
  // Best of turns, per level (pct(): mean [low, high] of a 95% interval over tasks, clipped to [0, 1]):
  //   level1: pass@1 = (2/2 + 1/2) / 2 = 75.0%, sd 0.354, half 1.96 * 0.354 / sqrt(2) = 49 points ->
  //           [26.0, 100.0]; pass@2 = (1 + (1 - C(1,2)/C(2,2))) / 2 = 100%; avg@2 = pass@1;
  //           faster>1.1x = (1/2 (1.5x; 0.8x is not) + 1/2 (3.0x)) / 2 = 50%;
  //           geomean speedup (1.5 * 0.8 * 3)^(1/3) = 1.53x
  //   level2: one task with n = 1 < k: pass@1 0, pass@2 left out ("-"), one infra sample
  EXPECT_NE(d.find("| level1 | 2 | 75.0% [26.0, 100.0] | 100.0% [100.0, 100.0] | 75.0% [26.0, 100.0] | "
                   "50.0% [50.0, 50.0] | 1.53x | 0 |"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("| level2 | 1 | 0.0% [0.0, 0.0] | - | 0.0% [0.0, 0.0] | 0.0% [0.0, 0.0] | - | 1 |"),
            std::string::npos)
      << d;
  // overall: pass@1 mean of {1, 0.5, 0} = 50%; pass@2 over the two tasks with n >= k = 100%.
  EXPECT_NE(d.find("| **overall** | 3 | 50.0% [0.0, 100.0] | 100.0% [100.0, 100.0] |"), std::string::npos)
      << d;
  EXPECT_NEAR((*summary)["views"]["best"]["overall"]["pass_at_1"]["mean"].get<double>(), 0.5, 1e-12);
  // Charts: pass rate by level, speedup histogram, verdict classes, each an inline SVG with its marks.
  EXPECT_EQ(count(d, "<svg"), 3u) << d;
  EXPECT_NE(d.find("<title>level1 Pass@1 75.0%</title>"), std::string::npos) << d;
  EXPECT_NE(d.find("<title>level1 Pass@2 100.0%</title>"), std::string::npos) << d;
  EXPECT_NE(d.find("3 correct samples</text>"), std::string::npos) << d;
  EXPECT_NE(d.find(">runtime_error</text>"), std::string::npos) << d;
  // The task grid: every task by name, one cell per sample, responses escaped (no script element made).
  for (const char* id : {"level1/19_ReLU", "level1/23_Softmax", "level2/7_Conv_GELU"})
    EXPECT_NE(d.find(std::string("<code>") + id + "</code>"), std::string::npos) << id;
  EXPECT_EQ(count(d, "class=\"cell\""), 6u) << d;
  EXPECT_EQ(d.find("<script"), std::string::npos) << d;
  EXPECT_NE(d.find("&lt;script&gt;alert(1)"), std::string::npos) << d;

  // The screenshot: a PNG of the window size that is not one flat colour.
  const fs::path shot = work / "report.png";
  const ProcessResult taken = chromium(*binary, work, "--screenshot=" + shot.string(), page);
  ASSERT_TRUE(taken.succeeded()) << taken.describe() << "\n" << taken.stderr_text;
  ASSERT_TRUE(fs::exists(shot)) << taken.stderr_text;
  const auto [w, h] = png_size(read_file(shot).value());
  EXPECT_EQ(w, static_cast<uint32_t>(kWidth));
  EXPECT_EQ(h, static_cast<uint32_t>(kHeight));
  ProcessOptions decode;
  decode.argv = {"python3", "-c", kDistinctRows, shot.string()};
  decode.deadline = std::chrono::seconds(300);
  auto rows = run_process(decode);
  ASSERT_TRUE(rows.ok() && rows->succeeded())
      << (rows.ok() ? rows->describe() + "\n" + rows->stderr_text : "");
  // Text lines, bars and the task grid give hundreds of distinct scanlines; 50 is far from a flat page.
  EXPECT_GT(std::stoi(rows->stdout_text), 50) << "screenshot " << shot << " looks blank";

  if (!HasFailure()) fs::remove_all(work);
}

}  // namespace
}  // namespace musacoder::kernelbench
